#!/usr/bin/env bash
# Device calls for the own GEMM's split last wave (SchedulerOptions::split_k_tail,
# kernels/gemm/tile_scheduler.hpp work_unit) on 4 GPUs. PART picks what runs:
#   PART=a: the tests (own_gemm_test's split and bit-identity tests on GPU 0; tilewise_test's
#           copy-engine all-reduce with the split on GPUs 0,1 and AllGather+GEMM with the split
#           on 4 GPUs), own-gemm-bench (own v2 unsplit and split 2/3/4 against cuBLASLt,
#           gemm.csv), and the 2-rank copy-engine all-reduce on GPUs 0,1 over the five issue
#           shapes with the tuner free to choose the split (ar2/: bench.csv, detail.csv,
#           tuning.yaml, stderr.txt, summary.csv);
#   PART=b: AllGather+GEMM at 4 ranks like for like against PyTorch's fused_all_gather_matmul
#           (run_tilewise_ag4.sh without its tests: the tuner's candidates include the split
#           last wave by default, --tilewise-split-tail 1,2,4).
# Binaries from $CARRY_DIR (default build-split-carry: overlap-bench, tilewise_test,
# own_gemm_test, own-gemm-bench, libyaml-cpp, libfmt). Results in $OUT (at most 8 files):
# log.txt, tests.txt, gemm.csv, gemm_stderr.txt, ar2.tar.gz; PART=b: run_tilewise_ag4.sh's.
#   CARRY_DIR=build-split-carry PART=a bash benchmarks/gpu/run_split_tail.sh
set -uo pipefail
export CUDA_VISIBLE_DEVICES="${CUDA_VISIBLE_DEVICES:-0,1,2,3}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if [[ ${PART:-a} == b ]]; then
  TEST_TIMEOUT=0 SANITIZER_TIMEOUT=0 TORCH_PLAIN="${TORCH_PLAIN:-0}" \
    CARRY_DIR="${CARRY_DIR:-build-split-carry}" bash "$here/run_tilewise_ag4.sh"
  exit $?
fi
source "$here/device_env.sh"
start_tilewise_run "$root/${CARRY_DIR:-build-split-carry}" 300
gemm_bench="$(dirname "$gemm_test")/own-gemm-bench"
tests="$OUT/tests.txt"

if [[ ${TEST_TIMEOUT:-120} -gt 0 ]]; then
  step "own_gemm_test: split, scheduler and bit-identity tests (GPU 0)"
  CUDA_VISIBLE_DEVICES=0 timeout "${TEST_TIMEOUT:-120}" "$gemm_test" \
    --gtest_filter='TileOrder.*:OwnGemmArgs.*:OwnGemm.SplitTail*:OwnGemm.LargeShapes*:OwnGemm.Deferred*:OwnGemm.StoreSteps*:OwnGemm.DeviceTileOrder*:OwnGemm.Remapped*:OwnGemm.SignalNever*' \
    >>"$tests" 2>&1
  echo "own_gemm_test rc=$?" | tee -a "$log"
  step "tilewise_test: copy-engine all-reduce (split and not) on GPUs 0,1"
  CUDA_VISIBLE_DEVICES=0,1 timeout "${TEST_TIMEOUT:-120}" "$test_bin" --gtest_brief=1 \
    --gtest_filter='TilewiseCopyEngineGpu.AllReduce*:TilewiseCopyEngineGpu.BackToBack*:TilewiseOwner*' \
    >>"$tests" 2>&1
  echo "tilewise_test (2 GPUs) rc=$?" | tee -a "$log"
  step "tilewise_test: AllGather+GEMM (split and not) on 4 GPUs"
  timeout "${TEST_TIMEOUT:-120}" "$test_bin" --gtest_brief=1 \
    --gtest_filter='TilewiseAllGatherGemmGpu.*' >>"$tests" 2>&1
  echo "tilewise_test (4 GPUs) rc=$?" | tee -a "$log"
  grep -E "^\[  (PASSED|FAILED) |^\[  FAILED|tests ran|rc=" "$tests" | tee -a "$log"
fi

if [[ ${GEMM_TIMEOUT:-150} -gt 0 ]]; then
  step "own-gemm-bench: own v2 unsplit and split 2/3/4 against cuBLASLt (GPU 0)"
  CUDA_VISIBLE_DEVICES=0 timeout "${GEMM_TIMEOUT:-150}" "$gemm_bench" \
    --shapes "${GEMM_SHAPES:-4096x4096x4096,2048x8192x8192,2048x9216x12288,8192x8192x2048,16384x8192x4096,8192x8192x8192,2048x12288x12288,8192x4608x16384}" \
    --versions 2,2k2,2k3,2k4 --iters 30 >"$OUT/gemm.csv" 2>"$OUT/gemm_stderr.txt"
  echo "own-gemm-bench rc=$?" | tee -a "$log"
  grep -E "own/cuBLAS|bit-identical|geo" "$OUT/gemm_stderr.txt" | head -60 >>"$log"
fi

if [[ ${BENCH_TIMEOUT:-240} -gt 0 ]]; then
  step "overlap-bench: 2-rank copy-engine all-reduce on GPUs 0,1, split ${SPLIT:-1,2,4}"
  mkdir -p "$OUT/ar2"
  CUDA_VISIBLE_DEVICES=0,1 timeout "${BENCH_TIMEOUT:-240}" "$bench" \
    --suite benchmarks/suites/tilewise_ring2_allreduce.yaml --world 2 --timeout 60 \
    --tilewise-transport copy_engine --tilewise-groups "${CE_GROUPS:-2,4,8}" \
    --tilewise-slabs "${SLABS:-1,2,4}" --tilewise-slab-skew "${SLAB_SKEW:-0,1}" \
    --tilewise-split-tail "${SPLIT:-1,2,4}" \
    --tilewise-detail "$OUT/ar2/detail.csv" --tilewise-cache "$OUT/ar2/tuning.yaml" \
    --output "$OUT/ar2/bench.csv" >/tmp/ar2_stdout.csv 2>"$OUT/ar2/stderr.txt"
  echo "overlap-bench (2 ranks) rc=$?" | tee -a "$log"
  grep -E "chose|error|fail|Fail" "$OUT/ar2/stderr.txt" | head -40 >>"$log"
  [[ -s $OUT/ar2/bench.csv ]] || cp /tmp/ar2_stdout.csv "$OUT/ar2/bench.csv"
  python3 benchmarks/gpu/summarize_slab4.py "$OUT/ar2/bench.csv" "$OUT/ar2/detail.csv" \
    --output "$OUT/ar2/summary.csv" >>"$log" 2>&1
  cp "$log" "$OUT/ar2/log.txt"
  tar czf "$OUT/ar2.tar.gz" -C "$OUT" ar2 && rm -rf "$OUT/ar2"
fi
step "done"
tail -n 30 "$log"
