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
      # Kernel-side view of every thread (a futex wait is a rendezvous or condition
      # variable; an ioctl into the nvidia driver is a CUDA call).
      for t in /proc/"$pid"/task/*; do
        echo "--- $(basename "$t") $(cat "$t/comm" 2>/dev/null) wchan=$(cat "$t/wchan" 2>/dev/null)"
        cat "$t/stack" 2>/dev/null | head -12
      done
      # Stopped first: attached to running threads, cuda-gdb printed "Selected thread is
      # running" instead of their stacks.
      kill -STOP "$pid"
      [ -n "$dbg" ] && timeout 90 "$dbg" -p "$pid" -batch -ex "set pagination off" \
        -ex "info cuda kernels" -ex "thread apply all bt 30" 2>&1
      kill -CONT "$pid"
    } >"$f" 2>&1
  done
  sleep 2
done
