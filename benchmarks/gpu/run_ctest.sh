#!/usr/bin/env bash
# One device call that builds kernels/ (kernels-only) on the GPU machine and runs every GPU
# test through ctest, the most recently changed tests first. Results in $OUT: log.txt,
# ctest.txt. Usage (device tool): bash benchmarks/gpu/run_ctest.sh
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export CUDA_MODULE_LOADING=EAGER  # cross-stream device waits (design.md); cold-start test unsets it
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
OUT="${OUT:-/tmp/overlapsim-out}"
mkdir -p "$OUT"
log="$OUT/log.txt"
{
  date -u
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  nvcc --version | tail -1
} >>"$log" 2>&1
nccl_lib="$(find /usr/lib/x86_64-linux-gnu /usr/local/cuda*/lib* /usr/local/lib /opt -name 'libnccl.so.2*' 2>/dev/null | head -1)"
nccl_header="$(find /usr/local/cuda*/include /usr/include /opt -name nccl.h 2>/dev/null | head -1)"
echo "nccl: $nccl_lib $nccl_header" >>"$log"
export LD_LIBRARY_PATH="$(dirname "${nccl_lib:-/x/x}"):/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
start=$(date +%s)
timeout "${BUILD_TIMEOUT:-240}" cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DOVERLAPSIM_KERNELS_ONLY=ON -DOVERLAPSIM_NCCL_INCLUDE="$(dirname "$nccl_header")" \
  -DOVERLAPSIM_NCCL_LIB="$nccl_lib" >>"$log" 2>&1 &&
  timeout "${BUILD_TIMEOUT:-240}" cmake --build build-gpu -j "$(nproc)" >>"$log" 2>&1
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
