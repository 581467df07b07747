#!/usr/bin/env bash
# Builds ptcd's image twice (the two digests must match), then runs it under
# runc with Kubernetes' restricted settings: uid 65532, no capabilities,
# no_new_privs, a read-only root, the RuntimeDefault seccomp profile
# (deploy/seccomp/runtime-default.json) and a tmpfs /tmp as the one
# writable place; the container shares the host's network namespace, as a
# pod's containers share the pod's. It asserts what `ptcd check` reports
# there, that an execution with tool calls works (ptc run --server), and
# that SIGTERM drains an execution in flight and ptcd exits 0.
# Needs root and runc (Debian's runc package; .ci/run installs it).
set -euo pipefail
cd "$(dirname "$0")/.."

fail() { echo "test-image: FAIL: $*" >&2; exit 1; }
if ! command -v runc >/dev/null 2>&1 || [ "$(id -u)" != 0 ]; then
  [ "${CI:-}" = true ] && fail "runc and root are needed (CI must install runc)"
  echo "test-image: SKIP: needs root and runc (apt-get install runc)"; exit 0
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/ptc-image-test.XXXXXX")"
id="ptc-image-test-$$"
serve_pid=""
cleanup() {
  runc delete -f "$id" >/dev/null 2>&1 || true
  runc delete -f "$id-check" >/dev/null 2>&1 || true
  [ -n "$serve_pid" ] && kill "$serve_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

echo "-- build the image twice"
d1="$(bash scripts/build-image.sh "$work/image1")"
d2="$(bash scripts/build-image.sh "$work/image2")"
[ "$d1" = "$d2" ] || fail "two builds gave two digests: $d1 and $d2"
size="$(stat -c %s "$work/image1.tar")"
echo "digest $d1 (both builds); image $((size / 1024 / 1024)) MiB as a tar"

go build -o "$work/imagetool" ./scripts/imagetool
go build -o "$work/ptc" ./cmd/ptc
"$work/imagetool" unpack -layout "$work/image1" -rootfs "$work/rootfs"
[ -e "$work/rootfs/bin/sh" ] && fail "the image has a shell"

echo "-- the manifests' ptcd.yaml (deploy/kubernetes/base/configmap.yaml) is valid for this ptcd"
awk '/^  ptcd.yaml: \|/{f=1; next} f && /^[^ ]/{f=0} f{sub(/^    /, ""); print}' \
  deploy/kubernetes/base/configmap.yaml >"$work/ptcd.yaml"
[ -s "$work/ptcd.yaml" ] || fail "no ptcd.yaml in deploy/kubernetes/base/configmap.yaml"
PTC_DURABLE_KEY=0123456789abcdef0123456789abcdef PTC_REDIS_URL=redis://127.0.0.1:1/0 \
  "$work/rootfs/usr/local/bin/ptcd" --config "$work/ptcd.yaml" --print-config >/dev/null ||
  fail "ptcd refuses the ConfigMap's ptcd.yaml"

# bundle DIR ARGS... writes a runc bundle whose config runs the image's
# entrypoint with ARGS.
bundle() {
  local dir=$1; shift
  mkdir -p "$dir"
  "$work/imagetool" runtime-spec -layout "$work/image1" -seccomp deploy/seccomp/runtime-default.json \
    -rootfs "$work/rootfs" -- "$@" >"$dir/config.json"
}

echo "-- ptcd check under runc"
bundle "$work/check" check
runc run --bundle "$work/check" "$id-check" </dev/null >"$work/check.out" 2>&1 || { cat "$work/check.out"; fail "ptcd check failed"; }
cat "$work/check.out"
expect() { grep -Eq "$2" "$work/check.out" || fail "ptcd check: want $1 (/$2/)"; }
expect "no_new_privs yes" '^no_new_privs +yes'
expect "landlock yes" '^landlock +yes'
expect "seccomp yes" '^seccomp +yes'
expect "process_isolation yes" '^process_isolation +yes'
expect "no private network namespace (CLONE_NEWNET refused)" '^private_network +no'

echo "-- serve"
ports="$(python3 -c 'import socket
s=[socket.socket() for _ in range(2)]
[x.bind(("127.0.0.1",0)) for x in s]
print(" ".join(str(x.getsockname()[1]) for x in s))')"
read -r port mport <<<"$ports"
bundle "$work/serve" --listen "127.0.0.1:$port" --metrics.listen "127.0.0.1:$mport" --demo-tools --shutdown-grace 30s
runc run --bundle "$work/serve" "$id" </dev/null >"$work/serve.out" 2>&1 &
serve_pid=$!

# metrics prints ptcd's /metrics (bash's /dev/tcp: the image has no curl).
metrics() {
  exec 3<>"/dev/tcp/127.0.0.1/$mport" || return 1
  printf 'GET /metrics HTTP/1.0\r\nHost: ptcd\r\n\r\n' >&3
  cat <&3
  exec 3<&-
}
ready=""
for _ in $(seq 1 600); do
  if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then ready=1; break; fi
  kill -0 "$serve_pid" 2>/dev/null || { cat "$work/serve.out"; fail "ptcd exited at start"; }
  sleep 0.1
done
[ -n "$ready" ] || { cat "$work/serve.out"; fail "ptcd did not listen within 60s"; }

echo "-- an execution with tool calls: examples/expenses.js"
"$work/ptc" run --server "127.0.0.1:$port" examples/expenses.js >"$work/expenses.json"
python3 - "$work/expenses.json" examples/expenses.expected.json <<'PY'
import json, sys
got, want = (json.load(open(p)) for p in sys.argv[1:])
if got != want:
    sys.exit("test-image: FAIL: expenses.js gave %r, want %r" % (got, want))
print("expenses.js: %d people over budget, as expected" % len(got))
PY

echo "-- SIGTERM drains an execution in flight"
cat >"$work/slow.js" <<'JS'
const end = Date.now() + 3000;
while (Date.now() < end) {}
const team = await tools.get_team_members({ department: "sales" });
return team.length;
JS
"$work/ptc" run --server "127.0.0.1:$port" "$work/slow.js" >"$work/slow.out" 2>&1 &
slow_pid=$!
running=""
for _ in $(seq 1 300); do
  if metrics 2>/dev/null | grep -Eq '^ptc_executions_running(\{[^}]*\})? [1-9]'; then running=1; break; fi
  sleep 0.05
done
[ -n "$running" ] || fail "the slow execution never showed in ptc_executions_running"
runc kill "$id" TERM
slow_rc=0; wait "$slow_pid" || slow_rc=$?
serve_rc=0; wait "$serve_pid" || serve_rc=$?
serve_pid=""
cat "$work/slow.out"
[ "$slow_rc" = 0 ] || fail "the execution in flight failed during the drain (exit $slow_rc)"
grep -Eq '^[1-9][0-9]*$' "$work/slow.out" || fail "the execution in flight returned no count"
[ "$serve_rc" = 0 ] || { tail -20 "$work/serve.out"; fail "ptcd exited $serve_rc after SIGTERM, want 0"; }
echo "ptcd drained and exited 0"
echo "test-image: PASS"
