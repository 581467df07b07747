#!/usr/bin/env bash
# Runs ptc side by side with other sandboxes on the same workloads, in one
# run, interleaved: ROUNDS rounds, each running every peer (order rotated)
# through trivial, chain (100 awaited calls) and expense (20 calls, 2,000
# items), each in a fresh driver process; then the limit probes once.
#
# The other sandboxes' drivers come from the shared comparison kit
# (../shared/peers from the repository's root), installed with
# `bash ../shared/peers/install.sh` into PEERS_DIR (default /tmp/peers);
# ptc runs through cmd/ptc-peerbench: JavaScript in-process and in worker
# processes, and the same workloads as a Go WebAssembly guest
# (cmd/ptc-peerbench/guest, the kit's Go guest on ptc's guest SDK) in worker
# processes and in-process, and as Python scripts (CPython for WASI, which
# `npm ci` or `ptc python install` provides; WITH_PYTHON=0 leaves them out).
# WITH_GOGC=1 adds the in-process configuration again with the Go
# collector's target at 400 (GOGC=400): an embedding process chooses its
# own, and in-process executions allocate enough for it to show.
# Raw JSON lines and a markdown table go to OUT
# (default /tmp/ptc-peers).
#
# Every driver run records the load average (/proc/loadavg: 1, 5 and 15
# minutes) before and after it, and the report prints them beside each row:
# a figure taken on a busy machine is not an idle figure. With --load N
# (or LOAD=N) every configuration runs twice in each round: once with no
# added load and once while N busy-loop processes run at niceness LOAD_NICE
# (default 0) for the duration of that driver run; the report has one table
# per condition. The busy loops are this script's children, stopped by
# process id when the run ends or the script exits.
#   ROUNDS=3 N=100 bash scripts/compare-peers.sh
#   ROUNDS=2 N=100 bash scripts/compare-peers.sh --load 2
set -uo pipefail
cd "$(dirname "$0")/.."
LOAD="${LOAD:-0}"; LOAD_NICE="${LOAD_NICE:-0}"
while [ $# -gt 0 ]; do
  case "$1" in
    --load) LOAD="${2:-}"; shift 2 ;;
    --load=*) LOAD="${1#--load=}"; shift ;;
    -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d'; exit 0 ;;
    *) echo "compare-peers: unknown argument $1 (want --load N)" >&2; exit 2 ;;
  esac
done
case "$LOAD" in ''|*[!0-9]*) echo "compare-peers: --load wants a whole number of busy-loop processes, got '$LOAD'" >&2; exit 2 ;; esac
case "$LOAD_NICE" in ''|*[!0-9]*) echo "compare-peers: LOAD_NICE wants a niceness 0-19, got '$LOAD_NICE'" >&2; exit 2 ;; esac
PEERS_DIR="${PEERS_DIR:-/tmp/peers}"
OUT="${OUT:-/tmp/ptc-peers}"
ROUNDS="${ROUNDS:-3}"; N="${N:-100}"; WARM="${WARM:-30}"
# The Python rows pause PY_GAP (untimed) before each execution, so that
# each finds an interpreter started ahead of it, as a request does that
# the server keeps up with (back to back, most executions would start
# one: PY_GAP=0); an interpreter warms up in a few runs (PY_WARM).
PY_GAP="${PY_GAP:-250ms}"; PY_WARM="${PY_WARM:-5}"
PEERS="${PEERS-goja wazero-go qjs ivm monty nodevm}"  # PEERS="" runs ptc alone
mkdir -p "$OUT"
RAW="$OUT/raw-$(date +%Y%m%d-%H%M%S).jsonl"
go build -o "$OUT/ptc-peerbench" ./cmd/ptc-peerbench || exit 1
GOOS=wasip1 GOARCH=wasm go build -trimpath -ldflags='-s -w' -o "$OUT/ptc-guest.wasm" ./cmd/ptc-peerbench/guest || exit 1

BUSY=()
busy_start() { # n: start n busy loops at niceness LOAD_NICE
  local i
  for ((i = 0; i < $1; i++)); do
    nice -n "$LOAD_NICE" bash -c 'while :; do :; done' &
    BUSY+=("$!")
  done
}
busy_stop() {
  [ ${#BUSY[@]} -gt 0 ] || return 0
  kill "${BUSY[@]}" 2>/dev/null; wait "${BUSY[@]}" 2>/dev/null; BUSY=()
}
trap busy_stop EXIT
trap 'busy_stop; exit 130' INT TERM
loadavg() { cut -d' ' -f1-3 /proc/loadavg; }

# measured peer mode n load: one driver run with load busy loops beside it;
# its JSON line gains the synthetic load and the load averages around it.
measured() {
  local p="$1" m="$2" n="$3" l="$4" la0 la1 out
  busy_start "$l"
  la0="$(loadavg)"
  out="$(one "$p" "$m" "$n")"
  la1="$(loadavg)"
  busy_stop
  [ -n "$out" ] || return 0
  echo "$out" | sed "s/^{/{\"synthetic_load\":$l,\"loadavg_before\":\"$la0\",\"loadavg_after\":\"$la1\",/"
}

one() { # peer mode n
  local p="$1" m="$2" n="$3"
  case "$p" in
    ptc) "$OUT/ptc-peerbench" -mode "$m" -n "$n" -warm "$WARM" ;;
    ptc-gogc400) GOGC=400 "$OUT/ptc-peerbench" -mode "$m" -n "$n" -warm "$WARM" -peer "ptc (in-process, GOGC=400)" ;;
    ptc-worker) "$OUT/ptc-peerbench" -mode "$m" -n "$n" -warm "$WARM" -workers -peer "ptc (worker processes)" ;;
    ptc-wasm) "$OUT/ptc-peerbench" -mode "$m" -n "$n" -warm "$WARM" -workers -wasm "$OUT/ptc-guest.wasm" -peer "ptc WebAssembly, Go guest (worker processes)" ;;
    ptc-wasm-inproc) "$OUT/ptc-peerbench" -mode "$m" -n "$n" -warm "$WARM" -wasm "$OUT/ptc-guest.wasm" -peer "ptc WebAssembly, Go guest (in-process)" ;;
    ptc-python) "$OUT/ptc-peerbench" -mode "$m" -n "$n" -warm "$PY_WARM" -gap "$PY_GAP" -python -peer "ptc Python, CPython for WASI (in-process)" ;;
    ptc-python-worker) "$OUT/ptc-peerbench" -mode "$m" -n "$n" -warm "$PY_WARM" -gap "$PY_GAP" -python -workers -peer "ptc Python, CPython for WASI (worker processes)" ;;
    goja|wazero-go|wazero-min) timeout -s KILL 300 "$PEERS_DIR/bin/peersbench" -peer "$p" -mode "$m" -n "$n" -warm "$WARM" -guest "$PEERS_DIR/bin/guest.wasm" ;;
    *) (cd "$PEERS_DIR" && timeout -s KILL 300 node --expose-gc drivers/bench.mjs --peer "$p" --mode "$m" --n "$n" --warm "$WARM") ;;
  esac 2>/dev/null | sed -n 1p
}

CONDS=(0); [ "$LOAD" -gt 0 ] && CONDS=(0 "$LOAD")
echo "{\"env\":true,\"nproc\":$(nproc),\"loadavg\":\"$(loadavg)\",\"synthetic_load\":$LOAD,\"load_nice\":$LOAD_NICE}" >>"$RAW"
ALL=(ptc $([ "${WITH_GOGC:-0}" = 1 ] && echo ptc-gogc400) $([ "${WITH_WORKERS:-1}" = 1 ] && echo ptc-worker) $([ "${WITH_WASM:-1}" = 1 ] && echo ptc-wasm ptc-wasm-inproc) $([ "${WITH_PYTHON:-1}" = 1 ] && echo ptc-python ptc-python-worker) $PEERS)
for ((r = 0; r < ROUNDS; r++)); do
  k=$((r % ${#ALL[@]})); ORDER=("${ALL[@]:k}" "${ALL[@]:0:k}")
  echo "round $r: ${ORDER[*]} (load average $(loadavg))" >&2
  for p in "${ORDER[@]}"; do
    for l in "${CONDS[@]}"; do
      for m in trivial chain expense; do measured "$p" "$m" "$N" "$l" >>"$RAW"; done
    done
  done
done
for p in "${ALL[@]}"; do
  for m in spin spinAfterAwait membomb; do measured "$p" "$m" 1 0 >>"$RAW"; done
done

python3 - "$RAW" >"$OUT/RESULTS.md" <<'PY'
import json, sys, statistics
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip().startswith("{")]
env = next((r for r in rows if r.get("env")), {})
rows = [r for r in rows if not r.get("env")]
def q(s, p):
    s = sorted(s); pos = (len(s) - 1) * p; lo = int(pos); hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)
timed, limits, las = {}, {}, {}
for r in rows:
    l = r.get("synthetic_load", 0)
    if r.get("samples"):
        timed.setdefault((l, r["peer"], r["mode"]), []).extend(r["samples"])
        for k in ("loadavg_before", "loadavg_after"):
            if r.get(k):
                las.setdefault((l, r["peer"]), []).append(float(r[k].split()[0]))
    elif r.get("mode") in ("spin", "spinAfterAwait", "membomb"):
        limits[(r["peer"], r["mode"])] = r
def span(v):
    return "—" if not v else f"{min(v):.2f}" if min(v) == max(v) else f"{min(v):.2f}–{max(v):.2f}"
print(f"{env.get('nproc', '?')} cores; load average at the start {env.get('loadavg', '?')} (1, 5, 15 min).")
print("The last column is the 1-minute load average read before and after each driver run of that row.")
for l in sorted(dict.fromkeys(k[0] for k in timed)):
    print()
    if l == 0:
        print("No added load:")
    else:
        print(f"Under a synthetic load of {l} busy-loop process(es) at niceness {env.get('load_nice', '?')}:")
    print()
    print("| peer | trivial median ms | trivial p99 | chain (100 calls) median ms | per-call µs | expense median ms | expense p99 | load average (1 min) |")
    print("|---|---|---|---|---|---|---|---|")
    for p in dict.fromkeys(k[1] for k in timed if k[0] == l):
        t, c, e = (timed.get((l, p, m)) for m in ("trivial", "chain", "expense"))
        f = lambda s, x: f"{q(s, x):.3f}" if s else "—"
        per = f"{(q(c, .5) - q(t, .5)) * 10:.1f}" if t and c else "—"
        print(f"| {p} | {f(t, .5)} | {f(t, .99)} | {f(c, .5)} | {per} | {f(e, .5)} | {f(e, .99)} | {span(las.get((l, p)))} |")
print()
print("| peer | while(true){} (100 ms) | after an awaited call (100 ms) | memory bomb (64 MB) |")
print("|---|---|---|---|")
for p in dict.fromkeys(p for p, _ in limits):
    cells = []
    for m in ("spin", "spinAfterAwait", "membomb"):
        r = limits.get((p, m))
        cells.append("—" if not r else f"{r.get('outcome')} after {r.get('elapsed_ms')} ms: {str(r.get('error', ''))[:80]}")
    print(f"| {p} | " + " | ".join(cells) + " |")
PY
echo "wrote $OUT/RESULTS.md and $RAW" >&2
