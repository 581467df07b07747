#!/usr/bin/env bash
# Measures the CPU an idle ptcd uses: starts ptcd (worker mode, WORKERS idle
# workers kept warm, /metrics on), waits until its warm workers are up, runs
# RUNS small executions through `ptc run --server` (so the workers have
# worked, as in service), waits SETTLE seconds more, then reads the CPU time
# of ptcd and of every process under it over SECONDS_IDLE seconds with no
# request sent: the sum over each process's threads of the time on a CPU in
# nanoseconds (/proc/PID/task/TID/schedstat), and utime + stime in clock
# ticks (/proc/PID/stat) as a cross-check. Prints the percent of one core each used
# and the total, with the load average before and after (the figure is only
# an idle figure if the machine was quiet; a loaded machine adds scheduling
# but no CPU time of ptcd's own).
#   bash scripts/idle-cpu.sh              # 10 s, 2 idle workers
#   SECONDS_IDLE=30 WORKERS=4 bash scripts/idle-cpu.sh
# Exits 1 if the total is at or above MAX_PCT (default 1, percent of a core).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-/tmp/ptc-idle-cpu}"
WAIT="${SECONDS_IDLE:-10}"; WORKERS="${WORKERS:-2}"; SETTLE="${SETTLE:-3}"; MAX_PCT="${MAX_PCT:-1}"
mkdir -p "$OUT"
RUNS="${RUNS:-20}"
go build -o "$OUT/ptcd" ./cmd/ptcd || exit 1
go build -o "$OUT/ptc" ./cmd/ptc || exit 1
echo 'const r = []; for (let i = 0; i < 1000; i++) r.push(i * i); return { n: r.length };' >"$OUT/script.js"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
GRPC="127.0.0.1:$(free_port)"; METRICS="127.0.0.1:$(free_port)"
"$OUT/ptcd" -listen "$GRPC" -metrics.listen "$METRICS" -workers.mode worker -workers.idle "$WORKERS" \
  >"$OUT/ptcd.log" 2>&1 &
PTCD=$!
trap 'kill "$PTCD" 2>/dev/null; wait "$PTCD" 2>/dev/null' EXIT

# tree PID: the pid and all its descendants (the workers are ptcd's children).
tree() {
  local p="$1" c
  echo "$p"
  for c in $(cat /proc/"$p"/task/*/children 2>/dev/null); do tree "$c"; done
}
ticks() { # pid: utime+stime in clock ticks (fields 14 and 15, after the parenthesised name)
  sed 's/^.*) //' /proc/"$1"/stat 2>/dev/null | awk '{print $12 + $13}'
}
oncpu() { # pid: nanoseconds on a CPU, summed over the process's threads
  cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{s += $1} END {printf "%d", s}'
}

for ((i = 0; i < 300; i++)); do
  n=$(($(tree "$PTCD" | wc -l) - 1))
  [ "$n" -ge "$WORKERS" ] && curl -fsS "http://$METRICS/readyz" >/dev/null 2>&1 && break
  kill -0 "$PTCD" 2>/dev/null || { echo "ptcd exited:" >&2; cat "$OUT/ptcd.log" >&2; exit 1; }
  sleep 0.1
done
for ((i = 0; i < RUNS; i++)); do
  "$OUT/ptc" run "$OUT/script.js" --server "$GRPC" >/dev/null 2>"$OUT/ptc-run.err" || { echo "ptc run failed:" >&2; cat "$OUT/ptc-run.err" >&2; exit 1; }
done
sleep "$SETTLE"
PIDS=($(tree "$PTCD"))
declare -A T0 N0
for p in "${PIDS[@]}"; do T0[$p]=$(ticks "$p"); N0[$p]=$(oncpu "$p"); done
LA0="$(cut -d' ' -f1-3 /proc/loadavg)"; S0=$(date +%s.%N)
sleep "$WAIT"
S1=$(date +%s.%N); LA1="$(cut -d' ' -f1-3 /proc/loadavg)"
HZ=$(getconf CLK_TCK)
total=0; totalns=0
for p in "${PIDS[@]}"; do
  t1=$(ticks "$p"); n1=$(oncpu "$p"); [ -n "$t1" ] || { echo "pid $p: exited during the measurement (a worker beyond the idle ones stopped after workers.idle_timeout, or recycled)" >&2; continue; }
  d=$((t1 - ${T0[$p]:-0})); total=$((total + d)); dn=$((n1 - ${N0[$p]:-0})); totalns=$((totalns + dn))
  role=worker; [ "$p" = "$PTCD" ] && role=ptcd
  awk -v d="$d" -v dn="$dn" -v hz="$HZ" -v s0="$S0" -v s1="$S1" -v p="$p" -v r="$role" \
    'BEGIN { printf "%-6s pid %-7s %9.3f ms on a CPU (%d ticks)  %7.4f %% of a core\n", r, p, dn / 1e6, d, 100 * dn / 1e9 / (s1 - s0) }'
done
pct=$(awk -v d="$totalns" -v s0="$S0" -v s1="$S1" 'BEGIN { printf "%.4f", 100 * d / 1e9 / (s1 - s0) }')
echo "idle ptcd with $WORKERS warm workers ($((${#PIDS[@]} - 1)) processes under it, after $RUNS executions): $pct % of a core ($(awk -v d="$totalns" 'BEGIN{printf "%.3f", d / 1e6}') ms on a CPU, $total ticks of 1/$HZ s) over $(awk -v a="$S0" -v b="$S1" 'BEGIN{printf "%.1f", b-a}') s; load average $LA0 before, $LA1 after ($(nproc) cores)"
awk -v p="$pct" -v m="$MAX_PCT" 'BEGIN { exit !(p < m) }' || { echo "idle CPU $pct % is not below $MAX_PCT %" >&2; exit 1; }
