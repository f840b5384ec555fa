#!/usr/bin/env bash
# A check of the free-queue fix (docs/kernels/design.md, "The hang's mechanism"):
#  1. alloc-sync-probe: which host CUDA calls wait for a kernel running on another GPU;
#  2. the harness / collectives / tile-wise GPU tests with the parked frees;
#  3. calibrate's tilewise_moe case (the one that hung) repeated on every GPU until
#     BUDGET_S seconds have passed, with the stuck-process watcher and overlap-bench's
#     own deadline short (a stalled wait names itself).
#   benchmarks/gpu/hang_fix_check.sh GPUS [BUDGET_S]
set -uo pipefail
export CUDA_MODULE_LOADING=EAGER
gpus="$1" budget="${2:-540}"
start_all=$(date +%s)
source "$(dirname "${BASH_SOURCE[0]}")/device_env.sh"
# Binaries: $CARRY_DIR (default build-carry/, benchmarks/gpu/pack_carry.sh).
use_carried_binaries
bin="$bin_dir"
{ nvidia-smi --query-gpu=index,name,driver_version --format=csv; echo "nccl: $nccl_lib"; } >"$OUT/env.txt" 2>&1

timeout 120 "$bin/alloc-sync-probe" --hold-ms 500 >"$OUT/alloc_sync_probe.csv" 2>"$OUT/alloc_sync_probe.err"
echo "probe rc=$?" | tee -a "$OUT/summary.txt"

for t in free_queue_test harness_test collectives_test tilewise_test; do
  timeout 240 "$bin/$t" --gtest_brief=1 >"$OUT/$t.txt" 2>&1
  echo "$t rc=$? $(grep -E '^\[  (PASSED|FAILED)' "$OUT/$t.txt" | tr '\n' ' ')" | tee -a "$OUT/summary.txt"
done

OUT="$OUT" bash benchmarks/gpu/watch_stuck_bench.sh 40 &
watcher=$!
i=0
while [ $(( $(date +%s) - start_all + 75 )) -lt "$budget" ]; do
  i=$((i + 1))
  s=$(date +%s)
  OVERLAPSIM_TRACE=1 timeout -s KILL 70 "$bin/overlap-bench" --op gemm+alltoall \
    --designs sequential,tilewise --shapes 8192x4096x14336,16384x7168x2048 --min-time-ms 20 \
    --warmup-ms 50 --dtype bf16 --warmup 3 --iterations 10 --world "$gpus" --timeout 20 \
    --output "$OUT/moe_run$i.csv" >"$OUT/moe_run$i.log" 2>&1
  rc=$?
  echo "moe run $i: rc=$rc in $(($(date +%s) - s)) s, rows $(grep -c '^NVIDIA' "$OUT/moe_run$i.csv" 2>/dev/null)" | tee -a "$OUT/summary.txt"
  # Keep only the logs of runs that failed (each passing one is megabytes of trace).
  [ "$rc" -eq 0 ] && rm -f "$OUT/moe_run$i.log" && [ "$i" -gt 1 ] && rm -f "$OUT/moe_run$i.csv"
done
kill "$watcher" 2>/dev/null
echo "total $(($(date +%s) - start_all)) s" | tee -a "$OUT/summary.txt"
