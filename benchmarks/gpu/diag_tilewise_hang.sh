#!/usr/bin/env bash
# Diagnose the tile-wise all-to-all hang (docs/kernels/log.md, "Hang in calibrate with v3"):
# calibrate's tilewise_moe case stops after its first shape, before the second shape's
# first row, on 2 and on 8 H200s. Each run below repeats that case (or a part of it) with
# the suite's steady-state timing; a run still alive after WATCH_S seconds gets every host
# thread's stack and nvidia-smi's view written to $OUT, then is killed.
#   benchmarks/gpu/diag_tilewise_hang.sh GPUS
set -uo pipefail
export CUDA_MODULE_LOADING=EAGER
gpus="${1:-2}"
source "$(dirname "${BASH_SOURCE[0]}")/device_env.sh"
bench="$root/.carry_calib/bin/overlap-bench"
use_device_libs "$root/.carry_calib/lib"
dbg="$(command -v gdb || ls /usr/local/cuda/bin/cuda-gdb 2>/dev/null | head -1)"
echo "debugger: ${dbg:-none}" >"$OUT/diag.txt"
common=(--op gemm+alltoall --designs sequential,tilewise --dtype bf16 --warmup 3 --iterations 10
  --min-time-ms 20 --warmup-ms 50 --world "$gpus")

# run NAME WATCH_S LIMIT_S [ENV=VALUE...] -- ARGS...
run() {
  local name="$1" watch="$2" limit="$3"
  shift 3
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  local start=$(date +%s)
  env "${envs[@]}" timeout -s KILL "$limit" "$bench" "${common[@]}" "$@" \
    --output "$OUT/$name.csv" >"$OUT/$name.log" 2>&1 &
  local tpid=$!
  local waited=0
  while kill -0 "$tpid" 2>/dev/null && [ "$waited" -lt "$watch" ]; do sleep 1; waited=$((waited + 1)); done
  if kill -0 "$tpid" 2>/dev/null; then
    local pid
    pid="$(pgrep -f -n "overlap-bench ${common[0]}")"
    echo "$name: alive after ${watch} s (pid $pid)" >>"$OUT/diag.txt"
    nvidia-smi --query-gpu=index,utilization.gpu,clocks.sm,power.draw --format=csv >>"$OUT/$name.smi" 2>&1
    nvidia-smi --query-compute-apps=pid,used_memory --format=csv >>"$OUT/$name.smi" 2>&1
    [ -n "$dbg" ] && [ -n "$pid" ] &&
      timeout 60 "$dbg" -p "$pid" -batch -ex "set pagination off" -ex "thread apply all bt 25" \
        >"$OUT/$name.bt" 2>&1
    kill -KILL "$pid" 2>/dev/null
  fi
  wait "$tpid"
  echo "$name ${envs[*]} $*: rc=$? in $(($(date +%s) - start)) s, rows $(grep -c NVIDIA "$OUT/$name.log")" >>"$OUT/diag.txt"
}

run both 45 90 X=1 -- --shapes 8192x4096x14336,16384x7168x2048
run second 40 80 X=1 -- --shapes 16384x7168x2048
run second_nccl 30 60 OVERLAPSIM_TILEWISE_TRANSPORT=nccl -- --shapes 16384x7168x2048
run second_ce 30 60 OVERLAPSIM_TILEWISE_TRANSPORT=copy_engine -- --shapes 16384x7168x2048
cat "$OUT/diag.txt"
