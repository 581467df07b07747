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
# Raw JSON lines and a markdown table go to OUT
# (default /tmp/ptc-peers).
#   ROUNDS=3 N=100 bash scripts/compare-peers.sh
set -uo pipefail
cd "$(dirname "$0")/.."
PEERS_DIR="${PEERS_DIR:-/tmp/peers}"
OUT="${OUT:-/tmp/ptc-peers}"
ROUNDS="${ROUNDS:-3}"; N="${N:-100}"; WARM="${WARM:-30}"
PEERS="${PEERS:-goja wazero-go qjs ivm monty nodevm}"
mkdir -p "$OUT"
RAW="$OUT/raw-$(date +%Y%m%d-%H%M%S).jsonl"
go build -o "$OUT/ptc-peerbench" ./cmd/ptc-peerbench || exit 1
GOOS=wasip1 GOARCH=wasm go build -trimpath -ldflags='-s -w' -o "$OUT/ptc-guest.wasm" ./cmd/ptc-peerbench/guest || exit 1

one() { # peer mode n
  local p="$1" m="$2" n="$3"
  case "$p" in
    ptc) "$OUT/ptc-peerbench" -mode "$m" -n "$n" -warm "$WARM" ;;
    ptc-worker) "$OUT/ptc-peerbench" -mode "$m" -n "$n" -warm "$WARM" -workers -peer "ptc (worker processes)" ;;
    ptc-wasm) "$OUT/ptc-peerbench" -mode "$m" -n "$n" -warm "$WARM" -workers -wasm "$OUT/ptc-guest.wasm" -peer "ptc WebAssembly, Go guest (worker processes)" ;;
    ptc-wasm-inproc) "$OUT/ptc-peerbench" -mode "$m" -n "$n" -warm "$WARM" -wasm "$OUT/ptc-guest.wasm" -peer "ptc WebAssembly, Go guest (in-process)" ;;
    ptc-python) "$OUT/ptc-peerbench" -mode "$m" -n "$n" -warm "$WARM" -python -peer "ptc Python, CPython for WASI (in-process)" ;;
    goja|wazero-go|wazero-min) timeout -s KILL 300 "$PEERS_DIR/bin/peersbench" -peer "$p" -mode "$m" -n "$n" -warm "$WARM" -guest "$PEERS_DIR/bin/guest.wasm" ;;
    *) (cd "$PEERS_DIR" && timeout -s KILL 300 node --expose-gc drivers/bench.mjs --peer "$p" --mode "$m" --n "$n" --warm "$WARM") ;;
  esac 2>/dev/null | head -1
}

ALL=(ptc $([ "${WITH_WORKERS:-1}" = 1 ] && echo ptc-worker) $([ "${WITH_WASM:-1}" = 1 ] && echo ptc-wasm ptc-wasm-inproc) $([ "${WITH_PYTHON:-1}" = 1 ] && echo ptc-python) $PEERS)
for ((r = 0; r < ROUNDS; r++)); do
  k=$((r % ${#ALL[@]})); ORDER=("${ALL[@]:k}" "${ALL[@]:0:k}")
  echo "round $r: ${ORDER[*]}" >&2
  for p in "${ORDER[@]}"; do
    for m in trivial chain expense; do one "$p" "$m" "$N" >>"$RAW"; done
  done
done
for p in "${ALL[@]}"; do
  for m in spin spinAfterAwait membomb; do one "$p" "$m" 1 >>"$RAW"; done
done

python3 - "$RAW" >"$OUT/RESULTS.md" <<'PY'
import json, sys, statistics
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip().startswith("{")]
def q(s, p):
    s = sorted(s); pos = (len(s) - 1) * p; lo = int(pos); hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)
timed, limits = {}, {}
for r in rows:
    if r.get("samples"):
        timed.setdefault((r["peer"], r["mode"]), []).extend(r["samples"])
    elif r.get("mode") in ("spin", "spinAfterAwait", "membomb"):
        limits[(r["peer"], r["mode"])] = r
peers = list(dict.fromkeys(p for p, _ in timed))
print("| peer | trivial median ms | trivial p99 | chain (100 calls) median ms | per-call µs | expense median ms | expense p99 |")
print("|---|---|---|---|---|---|---|")
for p in peers:
    t, c, e = (timed.get((p, m)) for m in ("trivial", "chain", "expense"))
    f = lambda s, x: f"{q(s, x):.3f}" if s else "—"
    per = f"{(q(c, .5) - q(t, .5)) * 10:.1f}" if t and c else "—"
    print(f"| {p} | {f(t, .5)} | {f(t, .99)} | {f(c, .5)} | {per} | {f(e, .5)} | {f(e, .99)} |")
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
