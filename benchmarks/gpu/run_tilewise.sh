#!/usr/bin/env bash
# One device call for tile-wise overlap on 2 x H200: tests, compute-sanitizer
# (racecheck, synccheck) on the single-GPU tile-wise tests, the tilewise suite (cuBLAS,
# NCCL, sequential, decomposed and tilewise rows side by side) and the summary.
#   benchmarks/gpu/run_tilewise.sh [suite.yaml]
# Binaries: build-gpu/ when this machine can build (kernels-only), else .carry_tilewise/
# (built on the workstation: bin/ and lib/ with yaml-cpp and fmt). Results in $OUT:
# log.txt tests.txt (with the sanitizer summaries) tilewise.csv tilewise_detail.csv
# tilewise_tuning.yaml tilewise_summary.csv torch.csv [diag.txt]. Steps have their own time limits (env: BENCH_TIMEOUT, TEST_TIMEOUT).
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/device_env.sh"
suite="${1:-benchmarks/suites/tilewise.yaml}"
# Carried binaries when they run here, else a kernels-only build of just these targets.
start_tilewise_run "$root/.carry_tilewise" 240

step "tests"
timeout "${TEST_TIMEOUT:-120}" "$test_bin" --gtest_brief=1 >>"$OUT/tests.txt" 2>&1
echo "tilewise_test rc=$?" | tee -a "$OUT/tests.txt" "$log"
timeout 60 "$gemm_test" --gtest_brief=1 \
  --gtest_filter='TileOrder.*:OwnGemm.SmallAndIrregular*:OwnGemm.Remapped*:OwnGemm.SignalNever*:OwnGemm.DeviceTileOrder*:OwnGemm.Deferred*' \
  >>"$OUT/tests.txt" 2>&1
echo "own_gemm_test (scheduler subset) rc=$?" | tee -a "$OUT/tests.txt" "$log"

if [[ -n ${DIAG_FILTER:-} ]]; then
  step "diagnosis: $DIAG_FILTER with NCCL_DEBUG=WARN, system NCCL then PyTorch's"
  NCCL_DEBUG=WARN timeout 60 "$test_bin" --gtest_filter="$DIAG_FILTER" 2>&1 | tail -30 >"$OUT/diag.txt"
  torch_nccl="$(find /opt -name 'libnccl.so.2*' 2>/dev/null | head -1)"
  echo "### with $torch_nccl" >>"$OUT/diag.txt"
  NCCL_DEBUG=WARN LD_LIBRARY_PATH="$(dirname "${torch_nccl:-/x/x}"):$LD_LIBRARY_PATH" timeout 60 \
    "$test_bin" --gtest_filter="$DIAG_FILTER" 2>&1 | tail -30 >>"$OUT/diag.txt"
fi

step "overlap-bench $suite"
timeout "${BENCH_TIMEOUT:-270}" "$bench" --suite "$suite" --timeout 60s \
  --tilewise-comm-sms "${OVERLAPSIM_TILEWISE_COMM_SMS:-4,8,16}" \
  --tilewise-detail "$OUT/tilewise_detail.csv" --tilewise-cache "$OUT/tilewise_tuning.yaml" \
  --output "$OUT/tilewise.csv" >"$OUT/bench_stdout.txt" 2>>"$log"
echo "overlap-bench rc=$?" | tee -a "$log"
[[ -f $OUT/tilewise.csv ]] || cp "$OUT/bench_stdout.txt" "$OUT/tilewise.csv"
rm -f "$OUT/bench_stdout.txt"

step "torch peers (fused_matmul_reduce_scatter and friends)"
PYTHONUNBUFFERED=1 timeout "${TORCH_TIMEOUT:-60}" torchrun --standalone --nproc-per-node 2 \
  benchmarks/peers/torch_overlap.py --output "$OUT/torch.csv" >>"$log" 2>&1
echo "torch rc=$?" | tee -a "$log"

step "compute-sanitizer (one GPU, small shapes)"
CUDA_VISIBLE_DEVICES=0 sanitize_tilewise 'TilewiseLayoutKernels.*:TilewiseDesignGpu.SingleRank*' \
  "${SANITIZER_TIMEOUT:-60}" racecheck synccheck

step "summary"
python3 benchmarks/gpu/summarize_tilewise.py "$OUT/tilewise.csv" "$OUT/tilewise_detail.csv" \
  --torch "$OUT/torch.csv" --output "$OUT/tilewise_summary.csv" 2>&1 | tee -a "$log"
step "done"
