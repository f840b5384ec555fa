#!/usr/bin/env bash
# One device call for the tile-wise copy-engine transport at 4 ranks with both routes of
# the partial tiles (direct, ring; kernels/tilewise/copy_engine_layout.hpp): the ring's
# tests (host simulation, ranks sharing GPU 0, then one rank per GPU on 4 GPUs: bit for
# bit against the ring-order sum, within bf16 tolerance of own GEMM + NCCL, 200 calls back
# to back), overlap-bench over benchmarks/suites/tilewise_ring4.yaml on 4 ranks
# (sequential, decomposed and the tile-wise tuner in one process), the PyTorch peers on
# the same shapes, compute-sanitizer racecheck and synccheck on the ring's small test, the
# summary. The tuner also times the all-reduce's phase 2 on one stream a peer
# (CopyEngineOptions::parallel_phase2). Everything lands in $OUT as at most 8 files (what the
# device tool brings back): log.txt (steps, test and sanitizer summaries), tilewise_test.txt,
# bench.csv (4 ranks, then with WORLD2=1, default, the all-reduce at 2 ranks on GPUs 0,1:
# tilewise_ring2_allreduce.yaml), detail.csv, tuning.yaml, stderr.txt (with the 4-rank step
# timeline of each shape's chosen configuration appended after a "### timeline" line, from
# --tilewise-timeline), torch.csv, summary.csv; no archive, so a call cut short still returns
# what it has. REGRESSION=1 (default) also runs the copy-engine tests
# of the direct route on GPUs 0,1 (bit for bit against own GEMM + NCCL) and the cold start.
#   bash benchmarks/gpu/run_tilewise_ring4.sh
# Binaries: $CARRY_DIR/{bin,lib} (default build-ring4-carry: overlap-bench and tilewise_test
# from a CUDA build here, with yaml-cpp and fmt), else a kernels-only build on the device.
# SUITE (default tilewise_ring4.yaml) the 4-rank bench's suite under benchmarks/suites/;
# TEST_FILTER and REGRESSION_FILTER replace the two test steps' gtest filters.
# Step limits (s): TEST_TIMEOUT 150, BENCH_TIMEOUT 300, TORCH_TIMEOUT 100, SANITIZER_TIMEOUT
# 60 per tool (0 skips a step); CE_GROUPS (2,4,8): the groups per part the tuner times.
set -uo pipefail
export CUDA_VISIBLE_DEVICES="${CUDA_VISIBLE_DEVICES:-0,1,2,3}"
source "$(dirname "${BASH_SOURCE[0]}")/device_env.sh"
run_dir="$OUT"
log="$run_dir/log.txt"
log_machine "grep -E 'define NCCL_(MAJOR|MINOR|PATCH)' '$nccl_header'"
echo "nccl lib: $nccl_lib; commit $(git rev-parse HEAD 2>/dev/null)" >>"$log"
carry="$root/${CARRY_DIR:-build-ring4-carry}"
use_device_libs "$carry/lib"
bench="$carry/bin/overlap-bench"
test_bin="$carry/bin/tilewise_test"
if ! "$test_bin" --gtest_list_tests >/dev/null 2>>"$log"; then
  step "carried binaries do not run here: kernels-only build"
  build_kernels_only "${BUILD_TIMEOUT:-300}" overlap-bench tilewise_test >>"$log" 2>&1
  echo "build rc=$?" | tee -a "$log"
  bench=build-gpu/kernels/bench/overlap-bench
  test_bin=build-gpu/tests/kernels/tilewise_test
fi
export CUDA_MODULE_LOADING=EAGER
tests="$log"
world=$(tr ',' '\n' <<<"$CUDA_VISIBLE_DEVICES" | wc -l)

if [[ ${TEST_TIMEOUT:-150} -gt 0 ]]; then
  step "tilewise_test: the ring route on $world GPUs"
  timeout "${TEST_TIMEOUT:-150}" "$test_bin" \
    --gtest_filter="${TEST_FILTER:-TilewiseOwnerPlan.*:TilewiseOwnerDesign.*:TilewiseTuningCache.*:TilewiseCopyEngineSharedGpu.RingRoute*:TilewiseCopyEngineSharedGpu.RefusesParallelPhase2:TilewiseCopyEngineSharedGpu.TailWholePart*:TilewiseCopyEngineGpu.Ring*:TilewiseCopyEngineGpu.RowChunks*}" \
    >"$run_dir/tilewise_test.txt" 2>&1
  echo "tilewise_test (ring, row chunks, parallel phase 2) rc=$?" | tee -a "$log"
  grep -E "^\[  (PASSED|FAILED|SKIPPED|     OK) |^\[  FAILED|Failure|not the ring|tolerance|Which is|Expected|tests ran" \
    "$run_dir/tilewise_test.txt" | head -60 >>"$tests"
  if [[ ${REGRESSION:-1} == 1 ]]; then
    step "tilewise_test: the direct route's copy-engine tests and the cold start on GPUs 0,1"
    CUDA_VISIBLE_DEVICES=0,1 timeout "${TEST_TIMEOUT:-150}" "$test_bin" \
      --gtest_filter="${REGRESSION_FILTER:-TilewiseCopyEngineGpu.*:TilewiseCopyEngineSharedGpu.*:TilewiseColdStart.*}" \
      >/tmp/regression.txt 2>&1
    echo "tilewise_test (direct route, GPUs 0,1) rc=$?" | tee -a "$log"
    { echo "### regression on GPUs 0,1"; cat /tmp/regression.txt; } >>"$run_dir/tilewise_test.txt"
    grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[  FAILED|Failure|tests ran" /tmp/regression.txt |
      head -30 >>"$tests"
  fi
fi

suite="benchmarks/suites/${SUITE:-tilewise_ring4.yaml}"
step "overlap-bench $suite, $world ranks"
timeout "${BENCH_TIMEOUT:-300}" "$bench" --suite "$suite" \
  --world "$world" --timeout 60 --tilewise-transport copy_engine \
  --tilewise-groups "${CE_GROUPS:-2,4,8}" --tilewise-detail "$run_dir/detail.csv" \
  --tilewise-cache "$run_dir/tuning.yaml" --output "$run_dir/bench.csv" \
  --tilewise-timeline /tmp/timeline.csv >"$run_dir/stdout.csv" 2>"$run_dir/stderr.txt"
echo "overlap-bench rc=$?" | tee -a "$log"
grep -E "chose|error|fail|Fail|differ" "$run_dir/stderr.txt" | head -60 >>"$log"
[[ -s $run_dir/bench.csv ]] || cp "$run_dir/stdout.csv" "$run_dir/bench.csv"
rm -f "$run_dir/stdout.csv"

if [[ ${WORLD2:-1} == 1 ]]; then
  step "overlap-bench tilewise_ring2_allreduce, 2 ranks (GPUs 0,1)"
  CUDA_VISIBLE_DEVICES=0,1 timeout "${BENCH2_TIMEOUT:-120}" "$bench" \
    --suite benchmarks/suites/tilewise_ring2_allreduce.yaml --world 2 --timeout 60 \
    --tilewise-transport copy_engine --tilewise-groups "${CE_GROUPS:-2,4,8}" \
    --tilewise-detail /tmp/detail2.csv --tilewise-cache "$run_dir/tuning.yaml" \
    --output /tmp/bench2.csv >/tmp/stdout2.csv 2>/tmp/stderr2.txt
  echo "overlap-bench 2 ranks rc=$?" | tee -a "$log"
  grep -E "chose|error|fail|Fail|differ" /tmp/stderr2.txt | head -30 >>"$log"
  [[ -s /tmp/bench2.csv ]] || cp /tmp/stdout2.csv /tmp/bench2.csv
  append_csv /tmp/bench2.csv "$run_dir/bench.csv"
  [[ -s /tmp/detail2.csv ]] && append_csv /tmp/detail2.csv "$run_dir/detail.csv"
  cat /tmp/stderr2.txt >>"$run_dir/stderr.txt"
fi

if [[ ${TORCH_TIMEOUT:-100} -gt 0 ]]; then
  step "torch peers (fused_matmul_reduce_scatter and friends), $world ranks"
  shapes=$(python3 - <<'PY'
import re
text = open("benchmarks/suites/tilewise_ring4.yaml").read()  # every shape of the 4-rank bars
seen = []
for m, n, k in re.findall(r"- \[(\d+), (\d+), (\d+)\]", text):
    s = f"{m}x{n}x{k}"
    if s not in seen:
        seen.append(s)
print(" ".join(seen))
PY
)
  PYTHONUNBUFFERED=1 timeout "${TORCH_TIMEOUT:-100}" torchrun --standalone --nproc-per-node "$world" \
    benchmarks/peers/torch_overlap.py --chunks 2 --iterations 20 --shapes $shapes \
    --ops gemm+reducescatter gemm+allreduce --output "$run_dir/torch.csv" >>"$log" 2>&1
  echo "torch rc=$?" | tee -a "$log"
fi

if [[ ${SANITIZER_TIMEOUT:-60} -gt 0 ]]; then
  step "compute-sanitizer on the ring's small test, $world GPUs"
  for tool in racecheck synccheck; do
    timeout "${SANITIZER_TIMEOUT:-60}" compute-sanitizer --tool "$tool" --print-limit 20 \
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
python3 benchmarks/gpu/summarize_ring4.py "$run_dir/bench.csv" --torch "$run_dir/torch.csv" \
  --output "$run_dir/summary.csv" >>"$log" 2>&1
step "done"
tail -n 30 "$log"
