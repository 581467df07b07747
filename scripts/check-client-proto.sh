#!/usr/bin/env bash
# check-client-proto.sh fails when the committed protobuf code of the
# TypeScript or Python client (clients/typescript/src/gen,
# clients/python/ptc_client/_proto) differs from what
# proto/ptc/v1/runner.proto generates. It prints the difference and never
# modifies the working tree: it generates into a temporary directory.
#
# Usage: scripts/check-client-proto.sh   (from any directory; CI runs it)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

tmp="$(mktemp -d "${TMPDIR:-/tmp}/ptc-check-client-proto.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT

bash scripts/gen-client-proto.sh "$tmp/generated" >/dev/null
mkdir -p "$tmp/committed/clients/typescript/src" "$tmp/committed/clients/python/ptc_client"
cp -r clients/typescript/src/gen "$tmp/committed/clients/typescript/src/"
cp -r clients/python/ptc_client/_proto "$tmp/committed/clients/python/ptc_client/"
find "$tmp" -name __pycache__ -prune -exec rm -rf {} +

if ! (cd "$tmp" && diff -ruN committed generated); then
	echo "check-client-proto: committed client code is out of date; run scripts/gen-client-proto.sh and commit the result" >&2
	exit 1
fi
echo "check-client-proto: ok"
