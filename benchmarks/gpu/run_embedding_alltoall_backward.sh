#!/usr/bin/env bash
# One device call for the fused all-to-all + embedding-bag backward
# (kernels/fused/embedding_alltoall_backward.*) on 4 GPUs: the binaries (carried in
# $CARRY_DIR/{bin,lib}, default build-eba-bwd-carry; else a kernels-only build here),
# embedding_alltoall_backward_test on 4 GPUs (bit-exact against the sequential design and a
# host reference, 200 calls back to back, a cold start under lazy module loading),
# compute-sanitizer racecheck (GPUs 0,1) and synccheck (GPUs 2,3) at once on the small
# 2-rank case, embedding-alltoall-bench --passes backward at 4 and 2 ranks (DCNv2 tables,
# local batches 256..32768, MLPerf pooling x1 and x4), the PyTorch peer
# (benchmarks/peers/torch_embedding_alltoall_backward.py) at 4 and 2 ranks, and the summary
# (summarize_embedding_alltoall_backward.py). Each step has its own time limit and writes
# its own files: a failed or cut step loses nothing else. Everything ends up in
# $OUT/embedding_alltoall_backward.tar.gz (log.txt and summary.csv beside it).
#   bash benchmarks/gpu/run_embedding_alltoall_backward.sh   # about 4 minutes
#   AB=1 AB_CONFIGS="base spread shift pw3 claim4" bash ...    # the 4-rank A/B (see below)
# Step limits (s): BUILD_TIMEOUT 240, TEST_TIMEOUT 120, SANITIZER_TIMEOUT 120 (0 skips),
# BENCH_TIMEOUT 120, TORCH_TIMEOUT 120 (0 skips); no step runs past TOTAL_BUDGET (540).
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/device_env.sh"
TOTAL_BUDGET=${TOTAL_BUDGET:-540}  # limit() (device_env.sh) cuts every step to it
run_dir="$OUT/embedding_alltoall_backward"
mkdir -p "$run_dir"
log="$run_dir/log.txt"
: "${TEST_TIMEOUT:=120}" "${BENCH_TIMEOUT:=120}" "${TORCH_TIMEOUT:=120}" "${SANITIZER_TIMEOUT:=120}"
bench_args=(--passes backward --batches 256,1024,2112,8192,32768 --pooling-scales 1,4
  --iterations 30 --warmup 5 --b2b-calls 50)
torch_args=(--batches 256 1024 2112 8192 32768 --pooling-scales 1 4 --iterations 30 --warmup 5)

log_machine "python3 -c 'import torch; print(\"torch\", torch.__version__, torch.cuda.device_count())'" \
  "grep -E 'define NCCL_(MAJOR|MINOR|PATCH)' '$nccl_header'"
echo "nccl lib: $nccl_lib" >>"$log"
carry="$root/${CARRY_DIR:-build-eba-bwd-carry}"
use_device_libs "$carry/lib"
bench="$carry/bin/embedding-alltoall-bench"
test_bin="$carry/bin/embedding_alltoall_backward_test"
if ! "$test_bin" --gtest_list_tests >/dev/null 2>>"$log"; then
  step "carried binaries do not run here: kernels-only build"
  build_kernels_only "$(limit "${BUILD_TIMEOUT:-240}")" embedding-alltoall-bench \
    embedding_alltoall_backward_test >>"$log" 2>&1
  echo "build rc=$?" | tee -a "$log"
  bench=build-gpu/kernels/bench/embedding-alltoall-bench
  test_bin=build-gpu/tests/kernels/embedding_alltoall_backward_test
fi
ldd "$bench" | grep -E "not found|nccl" >>"$log" 2>&1
echo "sass spills (LDL|STL): $(cuobjdump -sass -fun embedding_alltoall_backward_kernel "$test_bin" 2>/dev/null | grep -cE 'LDL|STL')" >>"$log"
# Eager loading for everything but the cold-start test, which asks for lazy loading itself.
export CUDA_MODULE_LOADING=EAGER

# AB=1: the push-schedule A/B at 4 ranks instead of the full run: the test (no cold start;
# its spread case forces the schedule with one push warp), then the 4-rank bench for
# the committed kernel's binary ($carry/bin/embedding-alltoall-bench-base, if carried) and
# this one under settings (the bench's --backward-push* / --backward-claim-tiles flags),
# alternating, each its own CSV.
if [[ ${AB:-0} == 1 ]]; then
  step "A/B: tests on GPUs 0,1,2,3"
  CUDA_VISIBLE_DEVICES=0,1,2,3 timeout -k 5 60 "$test_bin" --gtest_filter='-*ColdStart*' \
    >"$run_dir/tests_gpus0123.txt" 2>&1
  echo "test default rc=$?" | tee -a "$log" "$run_dir/tests.txt"
  grep -hE "^\[  (PASSED|FAILED) |Failure|differ" "$run_dir"/tests_*.txt >>"$run_dir/tests.txt"
  for cfg in ${AB_CONFIGS:-base spread shift base spread}; do
    bin=$bench
    flags=()
    case $cfg in
      base) bin=$carry/bin/embedding-alltoall-bench-base ;;
      shift | spread) flags=(--backward-push "$cfg") ;;
      pw*) flags=(--backward-push-warps "${cfg#pw}") ;;
      claim*) flags=(--backward-claim-tiles "${cfg#claim}") ;;
    esac
    [[ -x $bin ]] || continue
    n=1
    while [[ -e $run_dir/ours_w4_${cfg}_$n.csv ]]; do n=$((n + 1)); done
    t=$(limit 40)
    [[ $t == 0 ]] && { echo "skipped $cfg: out of time" | tee -a "$log"; continue; }
    step "A/B bench world=4 $cfg ($n)"
    CUDA_VISIBLE_DEVICES=0,1,2,3 timeout -k 5 "$t" "$bin" --world 4 \
      "${bench_args[@]}" "${flags[@]}" --timeout 30 --output "$run_dir/ours_w4_${cfg}_$n.csv" \
      >"$run_dir/ours_w4_${cfg}_${n}_stdout.txt" 2>>"$log"
    echo "bench $cfg rc=$?" | tee -a "$log"
  done
  step "done"
  cp "$log" "$OUT/log.txt"
  tar -czf "$OUT/embedding_alltoall_backward.tar.gz" -C "$OUT" embedding_alltoall_backward &&
    rm -rf "$run_dir"
  exit 0
fi

step "tests on GPUs 0,1,2,3"
t=$(limit "$TEST_TIMEOUT")
CUDA_VISIBLE_DEVICES=0,1,2,3 timeout -k 5 "$t" "$test_bin" >"$run_dir/tests_gpus0123.txt" 2>&1
echo "embedding_alltoall_backward_test (GPUs 0,1,2,3) rc=$?" | tee -a "$log" "$run_dir/tests.txt"
grep -E "^\[  (PASSED|FAILED|SKIPPED|     OK) |^\[  FAILED|Failure|differ|off the reference" \
  "$run_dir/tests_gpus0123.txt" | head -40 >>"$run_dir/tests.txt"

if [[ $SANITIZER_TIMEOUT -gt 0 ]]; then
  sanitize_in_parallel "$test_bin" 'EmbeddingAllToAllBackward.SmallForSanitizer' "$(limit "$SANITIZER_TIMEOUT")" 2,3
fi

for world in 4 2; do
  gpus=$([[ $world == 2 ]] && echo 0,1 || echo 0,1,2,3)
  step "embedding-alltoall-bench --passes backward world=$world"
  t=$(limit "$BENCH_TIMEOUT")
  [[ $t == 0 ]] && { echo "skipped: out of time" | tee -a "$log"; continue; }
  CUDA_VISIBLE_DEVICES=$gpus timeout -k 5 "$t" "$bench" --world "$world" "${bench_args[@]}" \
    --timeout 30 --output "$run_dir/ours_w$world.csv" >"$run_dir/ours_w${world}_stdout.txt" 2>>"$log"
  echo "embedding-alltoall-bench world=$world rc=$?" | tee -a "$log"
  [[ -s $run_dir/ours_w$world.csv ]] || grep -E "^(gpu|NVIDIA)" "$run_dir/ours_w${world}_stdout.txt" \
    >"$run_dir/ours_w$world.csv"
done

if [[ $TORCH_TIMEOUT -gt 0 ]]; then
  for world in 4 2; do
    gpus=$([[ $world == 2 ]] && echo 0,1 || echo 0,1,2,3)
    step "torch peer world=$world"
    t=$(limit "$TORCH_TIMEOUT")
    [[ $t == 0 ]] && { echo "skipped: out of time" | tee -a "$log"; continue; }
    CUDA_VISIBLE_DEVICES=$gpus PYTHONUNBUFFERED=1 PYTHONPATH=benchmarks/peers timeout -k 5 "$t" \
      torchrun --standalone --nproc-per-node "$world" \
      benchmarks/peers/torch_embedding_alltoall_backward.py "${torch_args[@]}" \
      --output "$run_dir/torch_w$world.csv" >"$run_dir/torch_w${world}_stdout.txt" 2>>"$log"
    echo "torch world=$world rc=$?" | tee -a "$log"
    [[ -s $run_dir/torch_w$world.csv ]] || grep -E "^(gpu|NVIDIA)" "$run_dir/torch_w${world}_stdout.txt" \
      >"$run_dir/torch_w$world.csv"
  done
fi

step "summary"
python3 benchmarks/gpu/summarize_embedding_alltoall_backward.py "$run_dir" 2>&1 | tee -a "$log"
step "done"
cp "$log" "$OUT/log.txt"
[[ -f $run_dir/summary.csv ]] && cp "$run_dir/summary.csv" "$OUT/summary.csv"
tar -czf "$OUT/embedding_alltoall_backward.tar.gz" -C "$OUT" embedding_alltoall_backward && rm -rf "$run_dir"
