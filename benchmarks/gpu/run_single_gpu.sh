#!/usr/bin/env bash
# One device call on ONE GPU (the single-GPU kinds; no NCCL peers): the GEMM-per-dtype
# calibration, then every GPU test binary (multi-GPU cases skip themselves), then
# alloc-sync-probe's one-GPU rows. Binaries are built on the workstation and carried in
# build-carry/ (bin/: overlapsim, overlap-bench, alloc-sync-probe, the kernels' test
# binaries; lib/: yaml-cpp and fmt), made by benchmarks/gpu/pack_carry.sh.
#   benchmarks/gpu/run_single_gpu.sh NAME [SUITE] [CALIBRATE_TIMEOUT_S]
# Results in $OUT: NAME/ (calibration.csv, manifest.yaml, overlap-bench.log), tests.txt,
# summary.txt, alloc_sync_probe.csv, machine.txt.
set -uo pipefail
export CUDA_MODULE_LOADING=EAGER
name="$1" suite="${2:-calibration/suites/gemm-dtypes-1gpu.yaml}" limit="${3:-330}"
start_all=$(date +%s)
source "$(dirname "${BASH_SOURCE[0]}")/device_env.sh"
mkdir -p "$OUT/$name"
use_carried_binaries
bin="$bin_dir"
{
  date -u
  nvidia-smi --query-gpu=index,name,driver_version,memory.total,clocks.sm,clocks.max.sm,power.limit --format=csv
  echo "nccl lib: $nccl_lib"
} >"$OUT/machine.txt" 2>&1

s=$(date +%s)
timeout "$limit" "$bin/overlapsim" calibrate --out "$OUT/$name" --suite "$suite" --gpus 1 \
  --bench "$bin/overlap-bench" --case-timeout 120 2>&1 | tr '\r' '\n' | tail -8 >>"$OUT/summary.txt"
echo "calibrate $name rc=${PIPESTATUS[0]} in $(($(date +%s) - s)) s" | tee -a "$OUT/summary.txt"

for t in random_values_test gemm_cublaslt_test own_gemm_test free_queue_test harness_test \
  harness_abort_test stream_gate_test collectives_test embedding_bag_test designs_test \
  pair_op_test interference_runner_test tilewise_test; do
  left=$((560 - ($(date +%s) - start_all)))
  [ "$left" -lt 20 ] && { echo "$t: not run (time)" | tee -a "$OUT/summary.txt"; continue; }
  s=$(date +%s)
  timeout "$((left < 150 ? left : 150))" "$bin/$t" --gtest_brief=1 >>"$OUT/tests.txt" 2>&1
  rc=$?
  echo "$t rc=$rc in $(($(date +%s) - s)) s: $(grep -cE '^\[  (SKIPPED|FAILED) ' "$OUT/tests.txt") skipped+failed so far; $(grep -E '^\[  (PASSED|FAILED)  \]' "$OUT/tests.txt" | tail -1)" | tee -a "$OUT/summary.txt"
done
timeout 60 "$bin/alloc-sync-probe" --hold-ms 300 >"$OUT/alloc_sync_probe.csv" 2>>"$OUT/summary.txt"
echo "probe rc=$? total $(($(date +%s) - start_all)) s" | tee -a "$OUT/summary.txt"
