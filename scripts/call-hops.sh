#!/usr/bin/env bash
# Breaks one awaited tool call into its hops, measured in one run on this
# machine, with the load average before and after each measurement (a
# figure taken on a busy machine is not an idle figure):
#
#   1. kernel floor: an 8-byte round trip between two processes over a
#      pair of pipes, blocking reads on locked threads (internal/ipc
#      BenchmarkFloor) — what waking the other side costs, twice;
#   2. transport: a 64-byte frame there and back through internal/ipc as
#      the worker's VM goroutine sends a call and reads its answer
#      (BenchmarkRoundTrip, wait=mailbox, vm=locked) — the floor plus
#      framing, mailboxes and the poll;
#   3. engine: one awaited call in-process, the script's await, the
#      dispatcher's schema check and the tool (ptc-peerbench chain minus
#      trivial, over 100 calls);
#   4. worker call: the same call from a script in a worker process
#      (ptc-peerbench -workers).
#
# The worker call's cost beyond the engine's is its crossing: the report
# prints it beside the transport's round trip, so what the worker protocol
# adds beyond the transport (encoding the call and the answer, routing by
# slot, the accounting) is the difference.
#   bash scripts/call-hops.sh              # 5 benchmark runs, 300 executions
#   COUNT=3 N=200 bash scripts/call-hops.sh
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-/tmp/ptc-call-hops}"; COUNT="${COUNT:-5}"; N="${N:-300}"; WARM="${WARM:-30}"
mkdir -p "$OUT"
loadavg() { cut -d' ' -f1-3 /proc/loadavg; }
go build -o "$OUT/ptc-peerbench" ./cmd/ptc-peerbench || exit 1
go test -c -o "$OUT/ipc.test" ./internal/ipc || exit 1

# bench NAME PATTERN: the median of the p50-ns metric over COUNT runs.
bench() {
  local la0 la1 v
  la0="$(loadavg)"
  v="$("$OUT/ipc.test" -test.run XXX -test.bench "$2" -test.benchtime 20000x -test.count "$COUNT" 2>/dev/null |
    awk '{for (i = 1; i < NF; i++) if ($(i+1) == "p50-ns") print $i}' | sort -n | awk '{a[NR] = $1} END {if (NR) print a[int((NR + 1) / 2)] / 1000}')"
  la1="$(loadavg)"
  printf '%s\t%s\t%s\t%s\n' "$1" "${v:-?}" "$la0" "$la1"
}

# percall NAME FLAGS...: (chain median − trivial median) / 100, in µs.
percall() {
  local name="$1" la0 la1 t c
  shift
  la0="$(loadavg)"
  t="$("$OUT/ptc-peerbench" -mode trivial -n "$N" -warm "$WARM" "$@" | python3 -c 'import json,sys; print(json.loads(sys.stdin.readline())["median_ms"])')"
  c="$("$OUT/ptc-peerbench" -mode chain -n "$N" -warm "$WARM" "$@" | python3 -c 'import json,sys; print(json.loads(sys.stdin.readline())["median_ms"])')"
  la1="$(loadavg)"
  printf '%s\t%s\t%s\t%s\n' "$name" "$(python3 -c "print(round(($c - $t) * 1000 / 100, 1))")" "$la0" "$la1"
}

{
  bench "kernel floor (pipes, blocking)" '^BenchmarkFloor$/^transport=pipe$/^io=blocking$'
  bench "transport (ipc mailbox, locked)" '^BenchmarkRoundTrip$/^transport=ipc$/^wait=mailbox$/vm=locked$'
  percall "engine (in-process call)"
  percall "worker call" -workers
} | tee "$OUT/hops.tsv" >&2

python3 - "$OUT/hops.tsv" <<'PY'
import sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
val = {r[0]: r[1] for r in rows}
print("| hop | µs (median) | load average before | after |")
print("|---|---|---|---|")
for name, v, a, b in rows:
    print(f"| {name} | {v} | {a} | {b} |")
try:
    cross = float(val["worker call"]) - float(val["engine (in-process call)"])
    tr = float(val["transport (ipc mailbox, locked)"])
    fl = float(val["kernel floor (pipes, blocking)"])
    print()
    print(f"crossing (worker call − engine): {cross:.1f} µs, of which the transport's round trip {tr:.1f} µs "
          f"(kernel floor {fl:.1f} µs) and the worker protocol's own work {cross - tr:.1f} µs.")
except (KeyError, ValueError):
    print("\n(a measurement failed: see the lines above)")
PY
