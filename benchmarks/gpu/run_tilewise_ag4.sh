#!/usr/bin/env bash
# One device call for AllGather+GEMM's tile-wise consumer at 4 ranks
# (kernels/tilewise/allgather_gemm.hpp): its tests on every visible GPU (bit for bit against
# NCCL all-gather + the own GEMM, 200 calls back to back, the lazy-loading cold start), the
# ring route's reduce-scatter test as a regression of the shared GEMM, overlap-bench over
# $SUITE (default benchmarks/suites/tilewise_ag4.yaml; sequential, decomposed and the
# tile-wise tuner in one process), the PyTorch peers (fused_all_gather_matmul) on the same
# shapes, compute-sanitizer racecheck and synccheck on the small test, and the summary.
# The PyTorch peers run three times: as before (torch.csv: each design's 5 + 20 calls right
# after the previous design's), burst (torch_burst.csv: --idle-s 0.5, every GPU idle before
# each design) and steady (torch_steady.csv: --warmup-ms 1000 --iterations 30), the clock
# states of overlap-bench's <design>_burst and <design>_steady rows (TORCH_PLAIN=0 skips
# the first, TORCH_STATES=0 the last two).
# Back in $OUT: tilewise_ag4.tar.gz (folder ag4/: log.txt, tests.txt, bench.csv, stderr.txt,
# torch.csv, torch_burst.csv, torch_steady.csv, summary.csv, summary.txt), and log.txt and
# summary.txt beside it.
#   CARRY_DIR=build-ag4-carry bash benchmarks/gpu/run_tilewise_ag4.sh
# Binaries: $CARRY_DIR/{bin,lib} (overlap-bench and tilewise_test from a CUDA build here, with
# yaml-cpp and fmt), else a kernels-only build on the device. Step limits (s): TEST_TIMEOUT
# 150, BENCH_TIMEOUT 300, TORCH_TIMEOUT 120, SANITIZER_TIMEOUT 60 per tool (0 skips a step);
# AG_CHUNKS (1,2,4) and AG_PUSH (rotated,per_peer): the candidates the tuner times.
set -uo pipefail
export CUDA_VISIBLE_DEVICES="${CUDA_VISIBLE_DEVICES:-0,1,2,3}"
source "$(dirname "${BASH_SOURCE[0]}")/device_env.sh"
start_tilewise_run "$root/${CARRY_DIR:-build-ag4-carry}" "${BUILD_TIMEOUT:-400}"
[[ -f AG_COMMIT ]] && echo "source commit $(cat AG_COMMIT)" >>"$log"
world=$(tr ',' '\n' <<<"$CUDA_VISIBLE_DEVICES" | wc -l)
tests="$OUT/tests.txt"

if [[ ${TEST_TIMEOUT:-150} -gt 0 ]]; then
  step "tilewise_test: AllGather+GEMM and the cold start on $world GPUs"
  timeout "${TEST_TIMEOUT:-150}" "$test_bin" \
    --gtest_filter="${TEST_FILTER:-TilewiseAllGatherGemm*:TilewiseColdStart.*:TilewiseCopyEngineGpu.RingRouteBitIdenticalToTheRingOrderSum}" \
    >/tmp/tests.txt 2>&1
  echo "tilewise_test rc=$?" | tee -a "$log"
  grep -E "^\[  (PASSED|FAILED|SKIPPED|     OK) |^\[  FAILED|Failure|Which is|Expected|not NCCL|unwritten|tests ran|hung|error" \
    /tmp/tests.txt | head -80 >>"$tests"
fi

suite="benchmarks/suites/${SUITE:-tilewise_ag4.yaml}"
if [[ ${BENCH_TIMEOUT:-300} -gt 0 ]]; then
  step "overlap-bench $suite, $world ranks"
  timeout "${BENCH_TIMEOUT:-300}" "$bench" --suite "$suite" --world "$world" --timeout 60 \
    --tilewise-ag-chunks "${AG_CHUNKS:-1,2,4}" --tilewise-ag-push "${AG_PUSH:-rotated,per_peer}" \
    --output "$OUT/bench.csv" >/tmp/stdout.csv 2>"$OUT/stderr.txt"
  echo "overlap-bench rc=$?" | tee -a "$log"
  grep -E "chose|error|fail|Fail|differ|ag_bits" "$OUT/stderr.txt" | head -60 >>"$log"
  [[ -s $OUT/bench.csv ]] || cp /tmp/stdout.csv "$OUT/bench.csv"
fi

if [[ ${TORCH_TIMEOUT:-120} -gt 0 ]]; then
  step "torch peers (fused_all_gather_matmul), $world ranks"
  shapes=$(python3 - "$suite" <<'PY'
import re, sys
seen = []
for m, n, k in re.findall(r"- \[(\d+), (\d+), (\d+)\]", open(sys.argv[1]).read()):
    s = f"{m}x{n}x{k}"
    if s not in seen:
        seen.append(s)
print(" ".join(seen))
PY
)
  if [[ ${TORCH_PLAIN:-1} -ne 0 ]]; then
    PYTHONUNBUFFERED=1 timeout "${TORCH_TIMEOUT:-120}" torchrun --standalone --nproc-per-node "$world" \
      benchmarks/peers/torch_overlap.py --chunks 2 4 --iterations 20 --shapes $shapes \
      --ops allgather+gemm --output "$OUT/torch.csv" >/tmp/torch.txt 2>&1
    echo "torch rc=$?" | tee -a "$log"
    grep -E "failed|Error|error" /tmp/torch.txt | head -20 >>"$log"
  fi
  if [[ ${TORCH_STATES:-1} -ne 0 ]]; then
    for state in burst steady; do
      step "torch peers, $state clock state: GEMM alone, sequential, fused_all_gather_matmul"
      flags=(--warmup-ms 1000 --iterations 30)
      [[ $state == burst ]] && flags=(--idle-s 0.5 --iterations 20)
      PYTHONUNBUFFERED=1 timeout "${TORCH_TIMEOUT:-120}" torchrun --standalone --nproc-per-node "$world" \
        benchmarks/peers/torch_overlap.py "${flags[@]}" --shapes $shapes --ops allgather+gemm \
        --designs torch torch_sequential torch_symm_mem --output "$OUT/torch_$state.csv" \
        >/tmp/torch_$state.txt 2>&1
      echo "torch $state rc=$?" | tee -a "$log"
      grep -E "failed|Error|error" /tmp/torch_$state.txt | head -20 >>"$log"
    done
  fi
fi

if [[ ${SANITIZER_TIMEOUT:-60} -gt 0 ]]; then
  step "compute-sanitizer on AllGather+GEMM's small test, $world GPUs"
  sanitize_tilewise 'TilewiseAllGatherGemmGpu.SmallForSanitizer' "${SANITIZER_TIMEOUT:-60}" \
    racecheck synccheck
fi

step "summary"
python3 benchmarks/gpu/summarize_ag4.py "$OUT/bench.csv" --torch "$OUT/torch.csv" \
  --torch-burst "$OUT/torch_burst.csv" --torch-steady "$OUT/torch_steady.csv" \
  --stderr "$OUT/stderr.txt" --output "$OUT/summary.csv" >"$OUT/summary.txt" 2>&1
cat "$OUT/summary.txt" >>"$log"
step "done"
mkdir -p "$OUT/ag4"
for f in log.txt tests.txt bench.csv stderr.txt torch.csv torch_burst.csv torch_steady.csv \
  summary.csv summary.txt; do
  [[ -f $OUT/$f ]] && cp "$OUT/$f" "$OUT/ag4/"
done
tar czf "$OUT/tilewise_ag4.tar.gz" -C "$OUT" ag4 &&
  rm -rf "$OUT/ag4" "$OUT"/{tests.txt,bench.csv,stderr.txt,torch.csv,torch_burst.csv,torch_steady.csv,summary.csv}
tail -n 40 "$log"
