#!/usr/bin/env bash
# One device call for the slab order of the copy-engine ring all-reduce
# (CopyEngineOptions::slabs, kernels/tilewise/copy_engine_layout.hpp) at 4 ranks: a
# kernels-only build here (or the binaries in $CARRY_DIR/bin when they run), the slab tests
# (host layout, ranks sharing GPU 0, one rank per GPU on 4 and on 2 GPUs: bit for bit against
# the ring-order sum, within bf16 tolerance of own GEMM + NCCL, 200 calls back to back) and
# the ring route's own tests (the one-slab path the change touched), overlap-bench over
# benchmarks/suites/tilewise_ring4_allreduce.yaml on 4 ranks (sequential, decomposed, the
# tuner over slab counts --tilewise-slabs, the ring's groups, phase-2 modes and row chunks,
# all in one process and one final loop per shape), compute-sanitizer racecheck and
# synccheck on the ring's small test (a slab case included), the summary. Files in $OUT (at
# most 8): log.txt, tilewise_test.txt, bench.csv, detail.csv, tuning.yaml, stderr.txt (the
# chosen configurations' step timeline appended), summary.csv (summarize_slab4.py), and
# with PACK=1 binaries.tar.gz (overlap-bench, tilewise_test built here) for a later call.
#   bash benchmarks/gpu/run_tilewise_slab4.sh
# Step limits (s): BUILD_TIMEOUT 300, TEST_TIMEOUT 200, BENCH_TIMEOUT 300, SANITIZER_TIMEOUT 45
# per tool (0 skips a step); CE_GROUPS (2,4,8), SLABS (1,2,4),
# SLAB_SKEW (0,1: plain and skewed slab order), TEST_FILTER.
set -uo pipefail
export CUDA_VISIBLE_DEVICES="${CUDA_VISIBLE_DEVICES:-0,1,2,3}"
source "$(dirname "${BASH_SOURCE[0]}")/device_env.sh"
run_dir="$OUT"
log_machine "grep -E 'define NCCL_(MAJOR|MINOR|PATCH)' '$nccl_header'"
echo "nccl lib: $nccl_lib" >>"$log"
carry="$root/${CARRY_DIR:-build-slab-carry}"
use_device_libs "$carry/lib"
bench="$carry/bin/overlap-bench"
test_bin="$carry/bin/tilewise_test"
if ! "$test_bin" --gtest_list_tests >/dev/null 2>&1; then
  step "kernels-only build"
  build_kernels_only "${BUILD_TIMEOUT:-300}" overlap-bench tilewise_test >/tmp/build.txt 2>&1
  echo "build rc=$?" | tee -a "$log"
  grep -E "error|warning: .*(slab|row_period)" /tmp/build.txt | head -20 >>"$log"
  tail -3 /tmp/build.txt >>"$log"
  bench=build-gpu/kernels/bench/overlap-bench
  test_bin=build-gpu/tests/kernels/tilewise_test
fi
for pat in HGMMA 'LDL|STL'; do
  echo "sass $pat: $(cuobjdump -sass "$test_bin" 2>/dev/null | grep -cE "$pat")" >>"$log"
done
if [[ ${PACK:-1} == 1 && -x $bench && $bench == build-gpu/* ]]; then
  mkdir -p /tmp/pack/bin && cp "$bench" "$test_bin" /tmp/pack/bin/ &&
    tar czf "$run_dir/binaries.tar.gz" -C /tmp/pack bin
fi
export CUDA_MODULE_LOADING=EAGER
world=$(tr ',' '\n' <<<"$CUDA_VISIBLE_DEVICES" | wc -l)

if [[ ${TEST_TIMEOUT:-200} -gt 0 ]]; then
  step "tilewise_test: slabs and the ring on $world GPUs"
  timeout "${TEST_TIMEOUT:-200}" "$test_bin" \
    --gtest_filter="${TEST_FILTER:-TilewiseOwnerPlan.*:TilewiseOwnerDesign.*:TilewiseTuningCache.*:TilewiseCopyEngineSharedGpu.RingSlabs*:TilewiseCopyEngineGpu.RingSlabs*:TilewiseCopyEngineGpu.RingRoute*}" \
    >"$run_dir/tilewise_test.txt" 2>&1
  echo "tilewise_test ($world GPUs) rc=$?" | tee -a "$log"
  grep -E "^\[  (PASSED|FAILED|SKIPPED|     OK) |^\[  FAILED|Failure|not the ring|tolerance|Which is|Expected|tests ran" \
    "$run_dir/tilewise_test.txt" | head -60 >>"$log"
  step "tilewise_test: slabs on 2 GPUs (0,1)"
  CUDA_VISIBLE_DEVICES=0,1 timeout 60 "$test_bin" \
    --gtest_filter='TilewiseCopyEngineGpu.RingSlabs*' >/tmp/two.txt 2>&1
  echo "tilewise_test (2 GPUs) rc=$?" | tee -a "$log"
  { echo "### 2 GPUs"; cat /tmp/two.txt; } >>"$run_dir/tilewise_test.txt"
  grep -E "^\[  (PASSED|FAILED|SKIPPED|     OK) |^\[  FAILED|Failure|tests ran" /tmp/two.txt |
    head -20 >>"$log"
fi

if [[ ${BENCH_TIMEOUT:-300} -gt 0 ]]; then
  suite="benchmarks/suites/${SUITE:-tilewise_ring4_allreduce.yaml}"
  step "overlap-bench $suite, $world ranks, slabs ${SLABS:-1,2,4}"
  timeout "${BENCH_TIMEOUT:-300}" "$bench" --suite "$suite" \
    --world "$world" --timeout 60 --tilewise-transport copy_engine \
    --tilewise-groups "${CE_GROUPS:-2,4,8}" --tilewise-slabs "${SLABS:-1,2,4}" \
    --tilewise-slab-skew "${SLAB_SKEW:-0,1}" \
    --tilewise-detail "$run_dir/detail.csv" --tilewise-cache "$run_dir/tuning.yaml" \
    --output "$run_dir/bench.csv" --tilewise-timeline /tmp/timeline.csv \
    >/tmp/stdout.csv 2>"$run_dir/stderr.txt"
  echo "overlap-bench rc=$?" | tee -a "$log"
  grep -E "chose|error|fail|Fail" "$run_dir/stderr.txt" | head -40 >>"$log"
  [[ -s $run_dir/bench.csv ]] || cp /tmp/stdout.csv "$run_dir/bench.csv"
fi

if [[ ${SANITIZER_TIMEOUT:-45} -gt 0 ]]; then
  step "compute-sanitizer on the ring's small test, $world GPUs"
  for tool in racecheck synccheck; do
    timeout "${SANITIZER_TIMEOUT:-45}" compute-sanitizer --tool "$tool" --print-limit 20 \
      "$test_bin" --gtest_filter='TilewiseCopyEngineGpu.RingSmallForSanitizer' --gtest_brief=1 \
      >/tmp/sanitizer_$tool.txt 2>&1
    rc=$?
    { echo "### compute-sanitizer --tool $tool (rc=$rc)"
      grep -E "ERROR SUMMARY|RACECHECK SUMMARY|hazard|Error|PASSED|FAILED|tests ran" \
        /tmp/sanitizer_$tool.txt | head -20; } >>"$log"
  done
fi

step "summary"
[[ -s /tmp/timeline.csv ]] && { echo "### timeline"; cat /tmp/timeline.csv; } >>"$run_dir/stderr.txt"
[[ -s $run_dir/bench.csv ]] &&
  python3 benchmarks/gpu/summarize_slab4.py "$run_dir/bench.csv" "$run_dir/detail.csv" \
    --output "$run_dir/summary.csv" >>"$log" 2>&1
step "done"
tail -n 40 "$log"
