#!/usr/bin/env bash
# api-surface.sh counts ptc's public surface: the lines of `go doc -short`
# (one per exported top-level name; a const or var block counts once) of
# every importable package — not internal/, cmd/, examples/ or the generated
# proto packages. It prints the count per package and the total.
#
# Usage: scripts/api-surface.sh   (from any directory)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
total=0
for p in $(go list ./... | grep -v -e '/internal/' -e '/internal$' -e '/cmd/' -e '/examples/' -e '/proto/'); do
	n=$(go doc -short "$p" | wc -l)
	total=$((total + n))
	printf '%4d %s\n' "$n" "${p#github.com/ptcrun/ptc}"
done | sort -n
for p in $(go list ./... | grep -v -e '/internal/' -e '/internal$' -e '/cmd/' -e '/examples/' -e '/proto/'); do
	go doc -short "$p"
done | wc -l | xargs printf '%4d total\n'
