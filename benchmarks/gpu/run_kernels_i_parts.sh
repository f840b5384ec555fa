#!/usr/bin/env bash
# One device call (2 x H200) for GPU kernels I's two open gaps: (1) sequential GEMM+AllReduce
# against the sum of its parts, timed interleaved in one loop (pair_runner.cpp,
# time_interleaved), twice, plus the GEMMs in a loop of their own as before for contrast;
# (2) the harness abort tests with blocking communicators, each test binary run under
# `timeout 60`. Results in $OUT: log.txt, tests.txt, interleaved.csv, interleaved_repeat.csv,
# separate_gemm.csv, summary.csv, summary_repeat.csv. Under 240 s.
#   bash benchmarks/gpu/run_kernels_i_parts.sh
set -uo pipefail
export CUDA_MODULE_LOADING=EAGER
source "$(dirname "${BASH_SOURCE[0]}")/device_env.sh"
log="$OUT/log.txt"
step() { echo "=== $(date +%T) $*" | tee -a "$log"; }
step "machine"
{
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu --format=csv
  nvcc --version | tail -1
} >>"$log" 2>&1
echo "nccl: $nccl_lib $nccl_header" >>"$log"
use_device_libs

step "build (kernels only: overlap-bench, harness tests)"
start=$(date +%s)
build_kernels_only 150 overlap-bench harness_abort_test harness_test >>"$log" 2>&1
echo "build rc=$? in $(($(date +%s) - start)) s" | tee -a "$log"
find_bin() { find build-gpu -type f -name "$1" -perm -u+x 2>/dev/null | head -1; }

step "abort tests"
abort="$(find_bin harness_abort_test)"
for filter in 'NonBlocking/*' 'Blocking/*PeerFailure*' 'Blocking/*CollectiveTimeout*'; do
  repeat=1; [[ $filter == Blocking/* ]] && repeat=3
  s=$(date +%s)
  timeout 60 "$abort" --gtest_also_run_disabled_tests --gtest_filter="$filter" \
    --gtest_repeat=$repeat >>"$OUT/tests.txt" 2>&1
  echo "harness_abort_test $filter x$repeat rc=$? in $(($(date +%s) - s)) s" | tee -a "$OUT/tests.txt" "$log"
done
timeout 60 "$(find_bin harness_test)" --gtest_brief=1 >>"$OUT/tests.txt" 2>&1
echo "harness_test rc=$?" | tee -a "$OUT/tests.txt" "$log"

bench="$(find_bin overlap-bench)"
shapes=4096x4096x4096,8192x8192x2048,8192x8192x8192,16384x8192x4096,2048x8192x8192,4096x12288x49152
for name in interleaved interleaved_repeat; do
  step "overlap-bench gemm+allreduce sequential, parts interleaved ($name)"
  timeout 60 "$bench" --op gemm+allreduce --shapes "$shapes" --designs sequential \
    --iterations 50 --timeout 60s --output "$OUT/$name.csv" >/dev/null 2>>"$log"
  echo "overlap-bench rc=$?" | tee -a "$log"
  nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >>"$log" 2>&1
done
step "GEMMs alone in a loop of their own (the old method), for contrast"
timeout 40 "$bench" --op gemm --designs cublas --shapes "$shapes" --iterations 50 \
  --output "$OUT/separate_gemm.csv" >/dev/null 2>>"$log"
echo "overlap-bench rc=$?" | tee -a "$log"
for name in interleaved interleaved_repeat; do
  suffix="${name#interleaved}"
  [[ -f $OUT/$name.csv ]] &&
    python3 benchmarks/gpu/summarize_overlap.py "$OUT/$name.csv" --output "$OUT/summary$suffix.csv" 2>&1 | tee -a "$log"
done
step "done"
