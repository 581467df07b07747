#!/usr/bin/env bash
# check-proto.sh fails when ptc's gRPC contract does not pass `buf lint`, when
# a .proto file is not formatted, or when the committed generated code
# (proto/**/*.pb.go, internal/workerproto/*.pb.go and
# internal/durableproto/*.pb.go) differs from what the
# .proto files generate. It prints the
# difference and never modifies the working tree: it generates into a
# temporary directory.
#
# Usage: scripts/check-proto.sh   (from any directory; CI runs it)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
# Never let a plugin build rewrite go.mod or go.sum.
export GOFLAGS="${GOFLAGS:-} -mod=readonly"
# -modfile cannot be combined with a go.work workspace.
export GOWORK=off

tmp="$(mktemp -d "${TMPDIR:-/tmp}/ptc-check-proto.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT

buf() { go tool -modfile=internal/buildtools/go.mod buf "$@"; }

status=0

if ! buf format --diff --exit-code proto; then
	echo "check-proto: .proto files are not formatted; run: go tool -modfile=internal/buildtools/go.mod buf format -w proto" >&2
	status=1
fi

if ! buf lint; then
	echo "check-proto: buf lint failed; fix the .proto files" >&2
	status=1
fi

# --output is prepended to every plugin's out directory, so the fresh code
# lands in $tmp/generated/... while the plugins still run from the
# repository root (they need its go.mod files).
mkdir -p "$tmp/generated" "$tmp/committed"
buf generate --output "$tmp/generated"

# Copy the committed generated files into a tree of the same shape.
while IFS= read -r -d '' f; do
	mkdir -p "$tmp/committed/$(dirname "$f")"
	cp "$f" "$tmp/committed/$f"
done < <(find proto internal/workerproto internal/durableproto -type f -name '*.pb.go' -print0)

if ! (cd "$tmp" && diff -ruN committed generated); then
	echo "check-proto: committed generated code is out of date; run scripts/gen-proto.sh and commit the result" >&2
	status=1
fi

if [ "$status" -eq 0 ]; then
	echo "check-proto: ok"
fi
exit "$status"
