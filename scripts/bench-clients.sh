#!/usr/bin/env bash
# bench-clients.sh measures the round trip of a client-served tool call
# from each client — Go (ptc.Client.Run), TypeScript (@ptcrun/client) and
# Python (ptc_client, sync and asyncio) — against one ptcd, one after the
# other, and prints a table.
#
# Usage: scripts/bench-clients.sh [CALLS [RUNS [ROUNDS]]]   (defaults 2000, 200, 3)
#
# The clients run interleaved, ROUNDS times each; the table shows each
# figure's median over the rounds (the machine is shared and noisy).
#
# call: the time between consecutive calls of a script that awaits a
#       client tool in a loop (one full round trip through the server).
# run:  one whole execution over a Session with one client tool call.
#
# Needs Go, node with clients/typescript built (npm ci && npm run build)
# and /usr/bin/python3 with python3-grpcio and python3-protobuf.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
calls="${1:-2000}"
runs="${2:-200}"
rounds="${3:-3}"
py="${PYTHON:-/usr/bin/python3}"

tmp="$(mktemp -d "${TMPDIR:-/tmp}/ptc-bench-clients.XXXXXX")"
pid=""
cleanup() {
	if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
	rm -rf "$tmp"
}
trap cleanup EXIT

go build -o "$tmp/ptcd" ./cmd/ptcd
go build -o "$tmp/gobench" ./clients/gobench
if [ ! -f clients/typescript/dist/index.js ]; then
	(cd clients/typescript && npm run build >/dev/null)
fi

"$tmp/ptcd" --listen 127.0.0.1:0 --metrics-listen "" 2>"$tmp/ptcd.log" &
pid=$!
addr=""
for _ in $(seq 1 100); do
	addr="$(grep -o '"msg":"ptcd listening","addr":"[^"]*"' "$tmp/ptcd.log" | sed 's/.*"addr":"//; s/"$//' || true)"
	[ -n "$addr" ] && break
	sleep 0.1
done
if [ -z "$addr" ]; then
	echo "bench-clients: ptcd did not start:" >&2
	cat "$tmp/ptcd.log" >&2
	exit 1
fi
echo "ptcd at $addr ($(uname -m), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)); per client and round: $calls sequential calls, $runs sequential runs; $rounds rounds" >&2

for round in $(seq 1 "$rounds"); do
	"$tmp/gobench" -server "$addr" -calls "$calls" -runs "$runs"
	"$tmp/gobench" -server "$addr" -calls "$calls" -runs "$runs" -inline
	node clients/typescript/bench/roundtrip.mjs "$addr" "$calls" "$runs"
	PYTHONPATH=clients/python "$py" clients/python/bench/roundtrip.py "$addr" "$calls" "$runs"
done >"$tmp/results.jsonl"

"$py" - "$tmp/results.jsonl" <<'PY'
import json, statistics, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
clients = list(dict.fromkeys(r["client"] for r in rows))
keys = ["call_p50_us", "call_p99_us", "call_mean_us", "run_p50_us", "run_mean_us"]
print(f"{'client':<18} {'call p50':>10} {'call p99':>10} {'call mean':>10} {'run p50':>10} {'run mean':>10}   (µs, median of {len(rows) // len(clients)} rounds)")
for c in clients:
    med = [statistics.median(r[k] for r in rows if r["client"] == c) for k in keys]
    print(f"{c:<18} " + " ".join(f"{v:>10.1f}" for v in med))
PY
