#!/usr/bin/env bash
# One device call (2 GPUs are enough): the shaped tuner's search over the suite's shapes
# (benchmarks/suites/shaped.yaml) at 2 ranks, without tile-wise, for its
# gemm/cublas_shaped_chunks:s<S> rows: each chunked plan's k GEMMs alone on SMs - S, the
# GEMM work the simulator's shaped model prices (a chunk on SMs - S against one on all
# SMs), with --shaped-algos (the tiles cuBLASLt chose). A kernels-only build of overlap-bench
# first. Back in $OUT: chunk_gemms.tar.gz (shaped_<op>.csv, algos_<op>.csv, stderr, log).
#   bash benchmarks/gpu/run_shaped_chunk_gemms.sh
# Limits (s): BUILD_TIMEOUT 300, BENCH_TIMEOUT 120 per pair.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/device_env.sh"
run_dir="$OUT/chunk_gemms"
mkdir -p "$run_dir"
log="$run_dir/log.txt"
log_machine
step "build"
build_kernels_only "${BUILD_TIMEOUT:-300}" overlap-bench >"$run_dir/build.txt" 2>&1
echo "build rc=$?" | tee -a "$log"
use_device_libs
export CUDA_MODULE_LOADING=EAGER
acceptance=8192x8192x2048,8192x8192x8192,16384x8192x4096,4096x4096x4096,2048x8192x8192,4096x12288x49152
for pair in gemm+allreduce:$acceptance gemm+reducescatter:$acceptance \
  gemm+alltoall:8192x4096x14336,16384x4096x14336,16384x7168x2048,32768x7168x2048; do
  op=${pair%%:*}
  name=${op#gemm+}
  step "overlap-bench $op, 2 ranks"
  CUDA_VISIBLE_DEVICES=0,1 timeout "${BENCH_TIMEOUT:-120}" build-gpu/kernels/bench/overlap-bench \
    --op "$op" --shapes "${pair#*:}" --designs sequential,decomposed,shaped --chunks 2,4 \
    --ctas 16,32 --iterations 20 --warmup 3 --warmup-ms 25 --world 2 --timeout 60 \
    --shaped-algos "$run_dir/algos_$name.csv" --output "$run_dir/shaped_$name.csv" \
    >"$run_dir/stdout_$name.csv" 2>"$run_dir/stderr_$name.txt"
  echo "overlap-bench $op rc=$?" | tee -a "$log"
  [[ -s $run_dir/shaped_$name.csv ]] || cp "$run_dir/stdout_$name.csv" "$run_dir/shaped_$name.csv"
  rm -f "$run_dir/stdout_$name.csv"
done
step "done"
tar -czf "$OUT/chunk_gemms.tar.gz" -C "$OUT" chunk_gemms && cp "$log" "$OUT/chunk_log.txt" &&
  rm -rf "$run_dir"
