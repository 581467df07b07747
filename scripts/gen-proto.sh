#!/usr/bin/env bash
# gen-proto.sh regenerates the committed Go code of ptc's protobuf packages —
# the gRPC contract (proto/ptc/v1/*.pb.go) and the internal worker protocol
# (internal/workerproto/*.pb.go) and the encoding of paused executions
# (internal/durableproto/*.pb.go) — from the .proto files under proto/, after
# checking that they are formatted and pass `buf lint`.
#
# Usage: scripts/gen-proto.sh   (from any directory)
#
# Every tool is pinned: buf and protoc-gen-go-grpc by internal/buildtools/go.mod,
# protoc-gen-go by the main go.mod (see buf.gen.yaml). The first run on a fresh
# machine builds buf, which takes a few minutes.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
# Never let a plugin build rewrite go.mod or go.sum.
export GOFLAGS="${GOFLAGS:-} -mod=readonly"
# -modfile cannot be combined with a go.work workspace.
export GOWORK=off

buf() { go tool -modfile=internal/buildtools/go.mod buf "$@"; }

buf format --diff --exit-code proto || {
	echo "gen-proto: .proto files are not formatted; run: go tool -modfile=internal/buildtools/go.mod buf format -w proto" >&2
	exit 1
}
buf lint

# Remove the previous output first so that a deleted or renamed .proto file
# leaves no stale generated code behind. buf.gen.yaml cannot use `clean: true`:
# its output directory is the repository root.
find proto internal/workerproto internal/durableproto -type f -name '*.pb.go' -delete 2>/dev/null || true
buf generate
echo "gen-proto: generated code is up to date in proto/, internal/workerproto/ and internal/durableproto/"
