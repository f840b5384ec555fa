#!/usr/bin/env bash
# One device call on a 4-GPU machine: compute-sanitizer racecheck and synccheck where the
# 4-rank code paths had none, each test also run plainly first.
#  - the fused all-to-all + embedding-bag backward's spread push schedule, which only
#    rotates its owners from 3 ranks on (SpreadOnePushWarpMatchesSequentialBits, and
#    SmallForSanitizer), and the whole backward test binary;
#  - the per-chunk vendor designs (AllGather+GEMM and GEMM+ReduceScatter on cuBLASLt chunk
#    GEMMs, tilewise_vendor_test), whose bit-identity tests are the sanitizer's workload.
# A kernels-only build from source (sm_90, the system NCCL, ninja -j48); every step has its
# own limit, none past TOTAL_BUDGET (s). Writes $OUT/san4.tar.gz.
#   bash benchmarks/gpu/run_sanitizers_4gpu.sh
set -uo pipefail
source benchmarks/gpu/device_env.sh
TOTAL_BUDGET=${TOTAL_BUDGET:-540}  # limit() (device_env.sh) cuts every step to it
LIMIT_MARGIN_S=15  # limit(): the summary and the archive after the last step
run_dir="$OUT/san4"
mkdir -p "$run_dir"
log="$run_dir/log.txt"
export CUDA_VISIBLE_DEVICES=0,1,2,3
log_machine "compute-sanitizer --version | tail -1" \
  "grep -E 'define NCCL_(MAJOR|MINOR|PATCH)' '$nccl_header'"
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader -i 0)

step "build (kernels only, sm_90, ninja -j48)"
b0=$(date +%s)
{ timeout 60 cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DOVERLAPSIM_KERNELS_ONLY=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
    -DOVERLAPSIM_NCCL_INCLUDE="$(dirname "$nccl_header")" -DOVERLAPSIM_NCCL_LIB="$nccl_lib" &&
  timeout "$(limit 300)" ninja -C build-gpu -j48 tests/kernels/embedding_alltoall_backward_test \
    tests/kernels/tilewise_vendor_test; } >"$run_dir/build.txt" 2>&1
echo "build rc=$? in $(($(date +%s) - b0)) s" | tee -a "$log"
use_device_libs
export CUDA_MODULE_LOADING=EAGER  # the cold-start test asks for lazy loading itself
backward=build-gpu/tests/kernels/embedding_alltoall_backward_test
vendor=build-gpu/tests/kernels/tilewise_vendor_test

step "embedding_alltoall_backward_test, 4 GPUs"
timeout -k 5 "$(limit 120)" "$backward" >"$run_dir/backward_tests.txt" 2>&1
echo "embedding_alltoall_backward_test rc=$?" | tee -a "$log"
step "tilewise_vendor_test, 4 GPUs"
timeout -k 5 "$(limit 150)" "$vendor" >"$run_dir/vendor_tests.txt" 2>&1
echo "tilewise_vendor_test rc=$?" | tee -a "$log"

echo "gpu,binary,test,tool,rc,seconds,summary" >"$run_dir/sanitizer.csv"
for job in \
  backward:synccheck:EmbeddingAllToAllBackward.SpreadOnePushWarpMatchesSequentialBits:90 \
  backward:racecheck:EmbeddingAllToAllBackward.SpreadOnePushWarpMatchesSequentialBits:120 \
  vendor:synccheck:TilewiseVendorGpu.AllGatherBitIdenticalToNcclThenTheSameChunkGemms:90 \
  vendor:racecheck:TilewiseVendorGpu.AllGatherBitIdenticalToNcclThenTheSameChunkGemms:120 \
  vendor:synccheck:TilewiseVendorGpu.ReduceScatterBitIdenticalToTheRankOrderSumOfChunkGemms:90 \
  vendor:racecheck:TilewiseVendorGpu.ReduceScatterBitIdenticalToTheRankOrderSumOfChunkGemms:120; do
  IFS=: read -r which tool test cap <<<"$job"
  bin=$backward
  [[ $which == vendor ]] && bin=$vendor
  t=$(limit "$cap")
  [[ $t == 0 ]] && { echo "skipped $tool $test: out of time" | tee -a "$log"; continue; }
  step "compute-sanitizer --tool $tool $test (limit $t s)"
  s0=$(date +%s)
  out="$run_dir/sanitizer_${tool}_${test#*.}.txt"
  timeout -k 5 "$t" compute-sanitizer --tool "$tool" --print-limit 20 "$bin" \
    --gtest_filter="$test" >"$out" 2>&1
  rc=$?
  sum=$(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$out" | tail -1 | tr -d ',')
  echo "$gpu,$which,$test,$tool,$rc,$(($(date +%s) - s0)),${sum:-none}" >>"$run_dir/sanitizer.csv"
  { echo "### $tool $test rc=$rc"
    grep -E "ERROR SUMMARY|RACECHECK SUMMARY|PASSED|FAILED|SKIPPED" "$out" | head -12; } | tee -a "$log"
done
step "done"
tar -czf "$OUT/san4.tar.gz" -C "$OUT" san4 && rm -rf "$run_dir"
