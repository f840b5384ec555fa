#!/usr/bin/env bash
# One device call for our embedding-bag lookup (kernels/ops/embedding_bag.hpp): its GPU
# test, compute-sanitizer memcheck over it, embedding-bag-bench (DLRM-DCNv2 shapes, the
# copy bandwidth) and the PyTorch peer (benchmarks/peers/torch_embedding_bag.py) at the
# same shapes. Each on its own GPU at the same time (0: bench, 1: PyTorch, 2: test then
# memcheck), so no two share a GPU's memory. Binaries from $CARRY_DIR (default
# build-eb-carry: bin/embedding_bag_test, bin/embedding-bag-bench, lib/ with yaml-cpp and
# fmt); the bench is rebuilt with nvcc here when the carried one does not run. Everything
# ends up in $OUT/embedding_bag.tar.gz.
#   bash benchmarks/gpu/run_embedding_bag.sh
#   SMOKE=1 bash benchmarks/gpu/run_embedding_bag.sh    # 1M rows, one batch, pooling 1, 100
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/device_env.sh"
run_dir="$OUT/embedding_bag"
mkdir -p "$run_dir"
log="$run_dir/log.txt"
log_machine "python3 -c 'import torch; print(\"torch\", torch.__version__)'"
carry="$root/${CARRY_DIR:-build-eb-carry}"
use_device_libs "$carry/lib"
bench="$carry/bin/embedding-bag-bench"
test_bin="$carry/bin/embedding_bag_test"
smoke=()
[[ ${SMOKE:-0} == 1 ]] && smoke=(--smoke)
"$bench" --help >/dev/null 2>&1
if [[ $? != 2 ]]; then
  step "carried bench does not run here: nvcc"
  nvcc -O3 -std=c++17 -arch=sm_90 -I. kernels/bench/embedding_bag_bench.cu \
    kernels/harness/dtype.cpp kernels/ops/embedding_bag.cu -o "$run_dir/embedding-bag-bench" >>"$log" 2>&1
  bench="$run_dir/embedding-bag-bench"
fi
step "bench (GPU 0), PyTorch (GPU 1), test + memcheck (GPU 2)"
CUDA_VISIBLE_DEVICES=0 timeout "${BENCH_TIMEOUT:-200}" "$bench" "${smoke[@]}" \
  --output "$run_dir/ours.csv" >"$run_dir/ours_stdout.txt" 2>&1 &
ours=$!
CUDA_VISIBLE_DEVICES=1 PYTHONUNBUFFERED=1 timeout "${BENCH_TIMEOUT:-200}" python3 \
  benchmarks/peers/torch_embedding_bag.py "${smoke[@]}" --output "$run_dir/torch.csv" \
  >"$run_dir/torch_stdout.txt" 2>&1 &
peer=$!
(
  export CUDA_VISIBLE_DEVICES=2
  timeout "${TEST_TIMEOUT:-90}" "$test_bin" >"$run_dir/test.txt" 2>&1
  echo "embedding_bag_test rc=$?"
  sanitizer="$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)"
  timeout "${TEST_TIMEOUT:-90}" "$sanitizer" --tool memcheck "$test_bin" >"$run_dir/memcheck.txt" 2>&1
  echo "memcheck rc=$?: $(grep -E 'ERROR SUMMARY' "$run_dir/memcheck.txt" | tail -1)"
) >>"$log" 2>&1 &
tests=$!
wait $ours; echo "bench rc=$?" >>"$log"
wait $peer; echo "torch rc=$?" >>"$log"
wait $tests
grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[  FAILED|Failure" "$run_dir/test.txt" >>"$log" 2>&1
# A run cut short still leaves its rows: the bench's in its .tmp file, PyTorch's on stdout.
[[ -s $run_dir/ours.csv ]] || cp "$run_dir/ours.csv.tmp" "$run_dir/ours.csv" 2>/dev/null
[[ -s $run_dir/torch.csv ]] || grep -E "^(gpu|NVIDIA)" "$run_dir/torch_stdout.txt" >"$run_dir/torch.csv"
step "done"
cat "$log"
tar -czf "$OUT/embedding_bag.tar.gz" -C "$OUT" embedding_bag
