#!/usr/bin/env bash
# Calibrate's tilewise_moe case alone (same flags as the suite), OVERLAPSIM_TRACE=1 so every
# stream wait and rendezvous is logged per rank: a hang shows where each rank stopped.
# Up to RUNS runs of LIMIT_S seconds each; stops after the first that does not finish.
#   benchmarks/gpu/trace_tilewise_moe.sh GPUS [RUNS] [LIMIT_S]
set -uo pipefail
export CUDA_MODULE_LOADING=EAGER OVERLAPSIM_TRACE=1
gpus="$1" runs="${2:-2}" limit="${3:-70}"
source "$(dirname "${BASH_SOURCE[0]}")/device_env.sh"
use_device_libs "$root/.carry_calib/lib"
for i in $(seq 1 "$runs"); do
  start=$(date +%s)
  timeout -s KILL "$limit" .carry_calib/bin/overlap-bench --op gemm+alltoall \
    --designs sequential,tilewise --shapes 8192x4096x14336,16384x7168x2048 --min-time-ms 20 \
    --warmup-ms 50 --dtype bf16 --warmup 3 --iterations 10 --world "$gpus" \
    --output "$OUT/run$i.csv" >"$OUT/run$i.log" 2>&1
  rc=$?
  echo "run $i: rc=$rc in $(($(date +%s) - start)) s, rows $(grep -c '^NVIDIA' "$OUT/run$i.log")"
  [ "$rc" -ne 0 ] && { grep -v '^NVIDIA' "$OUT/run$i.log" | tail -40; break; }
done
