#!/usr/bin/env bash
# One device call that builds kernels/ (kernels-only) on the GPU machine and runs every GPU
# test through ctest, the most recently changed tests first. Results in $OUT: log.txt,
# ctest.txt. Usage (device tool): bash benchmarks/gpu/run_ctest.sh
set -uo pipefail
export CUDA_MODULE_LOADING=EAGER  # cross-stream device waits (design.md); cold-start test unsets it
source "$(dirname "${BASH_SOURCE[0]}")/device_env.sh"
log="$OUT/log.txt"
{
  date -u
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  nvcc --version | tail -1
} >>"$log" 2>&1
echo "nccl: $nccl_lib $nccl_header" >>"$log"
use_device_libs
start=$(date +%s)
build_kernels_only "${BUILD_TIMEOUT:-240}" >>"$log" 2>&1
echo "build rc=$? in $(($(date +%s) - start)) s" | tee -a "$log"
cd build-gpu
# Tile-wise and harness tests first: their last fixes had not yet run on a GPU.
timeout "${TEST_TIMEOUT:-300}" ctest --timeout 120 --output-on-failure -R 'Tilewise|Harness|Abort' \
  >"$OUT/ctest.txt" 2>&1
echo "ctest (tilewise, harness) rc=$?" | tee -a "$log"
timeout "${TEST_TIMEOUT:-300}" ctest --timeout 120 --output-on-failure -E 'Tilewise|Harness|Abort' \
  >>"$OUT/ctest.txt" 2>&1
echo "ctest (rest) rc=$?" | tee -a "$log"
grep -E "tests passed|Skipped|Failed|\*\*\*" "$OUT/ctest.txt" | tail -40
