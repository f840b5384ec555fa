#!/usr/bin/env bash
# One device call on 4 GPUs for two measurements that share a kernels-only build:
#  1. the shaped suite (run_shaped.sh, fused GEMV tests off) with the cuBLASLt algorithm of
#     every chunk GEMM plan (algos_w{2,4}.csv: tile, cluster, split-K per shape, S and k),
#     after gemm_cublaslt_test on GPU 0 (the algorithm read-back among them);
#  2. the GPU-initiated GEMM + all-to-all at 4 and 2 ranks (run_gemm_alltoall.sh) in the
#     time left.
# The build runs once here (build-gpu/); each script then finds it up to date. Everything
# that comes back is at most 8 files under $OUT: shaped.tar.gz, gemm_alltoall.tar.gz,
# summary.csv and log.txt (GEMM + all-to-all), run_log.txt (this script's steps), build.txt
# and cublaslt_test.txt.
#   bash benchmarks/gpu/run_shaped_tiles_gaa.sh
# Limits (s): BUILD_TIMEOUT 300; the whole run within DEADLINE (560) of its start.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/device_env.sh"
start=$(date +%s)
left() { echo $((${DEADLINE:-560} - ($(date +%s) - start))); }
main_log="$OUT/run_log.txt"
{
  echo "=== $(date +%T) build"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv
  b0=$(date +%s)
  build_kernels_only "${BUILD_TIMEOUT:-300}" overlap-bench shaped_test gemm_cublaslt_test \
    gemm-alltoall-bench gemm_alltoall_test >"$OUT/build.txt" 2>&1
  echo "build rc=$? in $(($(date +%s) - b0)) s"
  tail -5 "$OUT/build.txt"
} >>"$main_log" 2>&1
use_device_libs
CUDA_VISIBLE_DEVICES=0 timeout 60 build-gpu/tests/kernels/gemm_cublaslt_test \
  >"$OUT/cublaslt_test.txt" 2>&1
echo "gemm_cublaslt_test rc=$?" >>"$main_log"

echo "=== $(date +%T) shaped (left $(left) s)" >>"$main_log"
FUSED_TESTS=0 BENCH_TIMEOUT=170 TEST_TIMEOUT=60 bash benchmarks/gpu/run_shaped.sh \
  >>"$main_log" 2>&1
echo "run_shaped rc=$?" >>"$main_log"
rm -rf "$OUT/shaped"

t=$(left)
echo "=== $(date +%T) gemm_alltoall (left $t s)" >>"$main_log"
if ((t > 60)); then
  TOTAL_BUDGET=$((t - 10)) BENCH_TIMEOUT=90 TEST_TIMEOUT=90 SANITIZER_TIMEOUT=60 \
    bash benchmarks/gpu/run_gemm_alltoall.sh >>"$main_log" 2>&1
  echo "run_gemm_alltoall rc=$?" >>"$main_log"
else
  echo "gemm_alltoall skipped: out of time" >>"$main_log"
fi
rm -rf "$OUT/gemm_alltoall"
echo "=== $(date +%T) done" >>"$main_log"
ls -la "$OUT"
