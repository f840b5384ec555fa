#!/usr/bin/env bash
# One device call on a 2-GPU machine for the fused all-to-all + embedding-bag backward
# (kernels/fused/embedding_alltoall_backward.*): a kernels-only build from source (sm_90,
# the system NCCL), embedding_alltoall_backward_test on both GPUs, embedding-alltoall-bench
# --passes backward at 2 ranks twice (h100x4 run 3's 2-rank arguments), the PyTorch peer at
# 2 ranks, then compute-sanitizer racecheck and synccheck one after the other on
# SmallForSanitizer and on SpreadOnePushWarpMatchesSequentialBits (the forced one-warp spread
# schedule). Bench and peer run before the sanitizers so a slow sanitizer loses nothing else.
# Every step has its own limit, none past TOTAL_BUDGET (s). Writes $OUT/eba_bwd_2gpu.tar.gz.
#   bash benchmarks/results/h200x2/embedding_alltoall_backward/run_2gpu.sh
set -uo pipefail
source benchmarks/gpu/device_env.sh
t0=$(date +%s)
limit() {  # limit CAP: CAP or what is left of TOTAL_BUDGET less 15 s, 0 under 10 s
  local left=$((${TOTAL_BUDGET:-530} - ($(date +%s) - t0) - 15))
  ((left > $1)) && left=$1
  ((left < 10)) && left=0
  echo "$left"
}
run_dir="$OUT/eba_bwd_2gpu"
mkdir -p "$run_dir"
log="$run_dir/log.txt"
export CUDA_VISIBLE_DEVICES=0,1
log_machine "python3 -c 'import torch; print(\"torch\", torch.__version__, torch.cuda.device_count(), torch.cuda.nccl.version())'" \
  "grep -E 'define NCCL_(MAJOR|MINOR|PATCH)' '$nccl_header'" "compute-sanitizer --version | tail -1"
echo "nccl lib: $nccl_lib" >>"$log"
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader -i 0)

step "build (kernels only, sm_90, ninja -j16)"
b0=$(date +%s)
{ timeout 60 cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DOVERLAPSIM_KERNELS_ONLY=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
    -DOVERLAPSIM_NCCL_INCLUDE="$(dirname "$nccl_header")" -DOVERLAPSIM_NCCL_LIB="$nccl_lib" &&
  timeout "$(limit 240)" ninja -C build-gpu -j16 tests/kernels/embedding_alltoall_backward_test \
    kernels/bench/embedding-alltoall-bench; } >"$run_dir/build.txt" 2>&1
echo "build rc=$? in $(($(date +%s) - b0)) s" | tee -a "$log"
use_device_libs
bench=build-gpu/kernels/bench/embedding-alltoall-bench
test_bin=build-gpu/tests/kernels/embedding_alltoall_backward_test
ldd "$bench" | grep -E "not found|nccl" >>"$log" 2>&1
echo "sass spills (LDL|STL): $(cuobjdump -sass -fun embedding_alltoall_backward_kernel "$test_bin" 2>/dev/null | grep -cE 'LDL|STL')" >>"$log"
export CUDA_MODULE_LOADING=EAGER  # the cold-start test asks for lazy loading itself

step "tests on GPUs 0,1"
timeout -k 5 "$(limit 120)" "$test_bin" >"$run_dir/tests_gpus01.txt" 2>&1
echo "embedding_alltoall_backward_test (GPUs 0,1) rc=$?" | tee -a "$log"

bench_args=(--world 2 --passes backward --batches 256,1024,2112,8192,32768 --pooling-scales 1,4
  --iterations 30 --warmup 5 --b2b-calls 50 --timeout 30)
# The second run's CSV is named so the summary (which reads *_w*.csv) takes the first only.
for csv in ours_w2 repeat_ours2; do
  step "embedding-alltoall-bench --passes backward world=2 ($csv)"
  timeout -k 5 "$(limit 90)" "$bench" "${bench_args[@]}" --output "$run_dir/$csv.csv" \
    >"$run_dir/${csv}_stdout.txt" 2>>"$log"
  echo "bench $csv rc=$?" | tee -a "$log"
done

step "torch peer world=2"
PYTHONUNBUFFERED=1 PYTHONPATH=benchmarks/peers timeout -k 5 "$(limit 120)" \
  torchrun --standalone --nproc-per-node 2 benchmarks/peers/torch_embedding_alltoall_backward.py \
  --batches 256 1024 2112 8192 32768 --pooling-scales 1 4 --iterations 30 --warmup 5 \
  --output "$run_dir/torch_w2.csv" >"$run_dir/torch_w2_stdout.txt" 2>>"$log"
echo "torch world=2 rc=$?" | tee -a "$log"

echo "gpu,test,tool,rc,seconds,summary" >"$run_dir/sanitizer.csv"
for job in racecheck:SmallForSanitizer:60 synccheck:SmallForSanitizer:60 \
  synccheck:SpreadOnePushWarpMatchesSequentialBits:120 \
  racecheck:SpreadOnePushWarpMatchesSequentialBits:150; do
  IFS=: read -r tool test cap <<<"$job"
  t=$(limit "$cap")
  [[ $t == 0 ]] && { echo "skipped $tool $test: out of time" | tee -a "$log"; continue; }
  step "compute-sanitizer --tool $tool $test (limit $t s)"
  s0=$(date +%s)
  timeout -k 5 "$t" compute-sanitizer --tool "$tool" --print-limit 20 "$test_bin" \
    --gtest_filter="EmbeddingAllToAllBackward.$test" >"$run_dir/sanitizer_${tool}_$test.txt" 2>&1
  rc=$?
  sum=$(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$run_dir/sanitizer_${tool}_$test.txt" | tail -1 | tr -d ',')
  echo "$gpu,$test,$tool,$rc,$(($(date +%s) - s0)),${sum:-none}" >>"$run_dir/sanitizer.csv"
  { echo "### $tool $test rc=$rc"
    grep -E "ERROR SUMMARY|RACECHECK SUMMARY|hazard|Error|PASSED|FAILED" \
      "$run_dir/sanitizer_${tool}_$test.txt" | head -20; } | tee -a "$log"
done

step "summary"
python3 benchmarks/gpu/summarize_embedding_alltoall_backward.py "$run_dir" 2>&1 | tee -a "$log"
step "done"
tar -czf "$OUT/eba_bwd_2gpu.tar.gz" -C "$OUT" eba_bwd_2gpu && rm -rf "$run_dir"
