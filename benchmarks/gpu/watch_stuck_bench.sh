#!/usr/bin/env bash
# Background watcher for hang diagnosis: every 2 s, any overlap-bench process older than
# STUCK_S seconds gets all its host threads' stacks (cuda-gdb, or gdb) and nvidia-smi's
# view written to $OUT/stuck-<pid>.txt, once per process. Runs until killed.
#   benchmarks/gpu/watch_stuck_bench.sh STUCK_S &
stuck="${1:-45}"
OUT="${OUT:-/tmp/overlapsim-out}"
dbg="$(command -v gdb || ls /usr/local/cuda/bin/cuda-gdb 2>/dev/null | head -1)"
declare -A done_pids
while true; do
  for pid in $(pgrep -x overlap-bench); do
    [ -n "${done_pids[$pid]:-}" ] && continue
    age="$(ps -o etimes= -p "$pid" 2>/dev/null | tr -d ' ')"
    [ -z "$age" ] || [ "$age" -lt "$stuck" ] && continue
    done_pids[$pid]=1
    f="$OUT/stuck-$pid.txt"
    { echo "pid $pid age ${age}s: $(tr '\0' ' ' </proc/$pid/cmdline)"
      nvidia-smi --query-gpu=index,utilization.gpu,clocks.sm,power.draw --format=csv
      [ -n "$dbg" ] && timeout 90 "$dbg" -p "$pid" -batch -ex "set pagination off" \
        -ex "thread apply all bt 30" 2>&1
    } >"$f" 2>&1
  done
  sleep 2
done
