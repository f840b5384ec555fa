#!/usr/bin/env bash
# One device call for tile-wise overlap with both transports (nccl, copy_engine) on
# 2 x H200: GPU tests (copy-engine design first), the rotated-order GEMM tests, the
# tilewise_ce suite, the PyTorch peers, optionally compute-sanitizer, and the summary.
#   benchmarks/gpu/run_tilewise_ce.sh [suite.yaml]
# Binaries: $CARRY_DIR/{bin,lib} (default .carry_tilewise_ce) built on the workstation
# (carry it), else a kernels-only build here. Results in $OUT: log.txt tests.txt tilewise_ce.csv
# tilewise_ce_detail.csv tilewise_ce_tuning.yaml tilewise_ce_summary.csv torch.csv, and with
# DIAG=1 (default) the copy-engine all-reduce's step timeline (timeline/, trace_allreduce_tail.sh)
# and owner-epilogue-bench with the mirror in the other GPU (remote_mirror.csv).
# Every step has its own time limit (env TEST_TIMEOUT, BENCH_TIMEOUT, TORCH_TIMEOUT,
# SANITIZER=1 to run compute-sanitizer, TEST_FILTER to choose the tests; TEST_FILTER=all
# runs the whole tilewise_test: 2-rank, shared-GPU and two-process cases, ~40 s on 2 x H100).
set -uo pipefail
export CUDA_VISIBLE_DEVICES="${CUDA_VISIBLE_DEVICES:-0,1}"
source "$(dirname "${BASH_SOURCE[0]}")/device_env.sh"
suite="${1:-benchmarks/suites/tilewise_ce.yaml}"
start_tilewise_run "$root/${CARRY_DIR:-.carry_tilewise_ce}" 200

step "tests"
filter="${TEST_FILTER:-TilewiseCopyEngineGpu.*:TilewiseOwner*:TilewiseDesignGpu.SingleRank*:TilewiseLayoutKernels.*:TilewiseColdStart.*}"
[[ $filter == all ]] && filter='*'
timeout "${TEST_TIMEOUT:-80}" "$test_bin" --gtest_brief=1 --gtest_filter="$filter" >>"$OUT/tests.txt" 2>&1
echo "tilewise_test ($filter) rc=$?" | tee -a "$OUT/tests.txt" "$log"
if [[ ${NCCL_TRANSPORT_TESTS:-1} == 1 ]]; then
  # The NCCL transport's 2-GPU design tests (blocking communicators since the last fix).
  timeout "${TEST2_TIMEOUT:-70}" "$test_bin" --gtest_brief=1 \
    --gtest_filter='TilewiseDesignGpu.*-TilewiseDesignGpu.SingleRank*' >>"$OUT/tests.txt" 2>&1
  echo "tilewise_test (NCCL transport design tests) rc=$?" | tee -a "$OUT/tests.txt" "$log"
fi
timeout 60 "$gemm_test" --gtest_brief=1 \
  --gtest_filter='TileOrder.*:OwnGemmArgs.*:OwnGemm.DeviceTileOrder*:OwnGemm.DeviceRotated*:OwnGemm.Remapped*:OwnGemm.SignalNever*:OwnGemm.Deferred*:OwnGemm.ClusterPairs*:OwnGemm.StoreSteps*' \
  >>"$OUT/tests.txt" 2>&1
echo "own_gemm_test (scheduler subset) rc=$?" | tee -a "$OUT/tests.txt" "$log"

step "overlap-bench $suite"
timeout "${BENCH_TIMEOUT:-200}" "$bench" --suite "$suite" --timeout 30s \
  --tilewise-comm-sms "${OVERLAPSIM_TILEWISE_COMM_SMS:-16}" \
  --tilewise-wait "${OVERLAPSIM_TILEWISE_WAIT:-kernel}" \
  --tilewise-keep "${OVERLAPSIM_TILEWISE_KEEP:-3}" \
  --tilewise-exhaustive "${OVERLAPSIM_TILEWISE_EXHAUSTIVE:-4}" \
  --tilewise-detail "$OUT/tilewise_ce_detail.csv" --tilewise-cache "$OUT/tilewise_ce_tuning.yaml" \
  --output "$OUT/tilewise_ce.csv" >"$OUT/bench_stdout.txt" 2>>"$log"
echo "overlap-bench rc=$?" | tee -a "$log"
[[ -f $OUT/tilewise_ce.csv ]] || cp "$OUT/bench_stdout.txt" "$OUT/tilewise_ce.csv"
rm -f "$OUT/bench_stdout.txt"

if [[ ${TORCH_TIMEOUT:-45} -gt 0 ]]; then
  step "torch peers (fused_matmul_reduce_scatter and friends)"
  PYTHONUNBUFFERED=1 timeout "${TORCH_TIMEOUT:-45}" torchrun --standalone --nproc-per-node 2 \
    benchmarks/peers/torch_overlap.py --chunks 2 --iterations 20 --output "$OUT/torch.csv" >>"$log" 2>&1
  echo "torch rc=$?" | tee -a "$log"
fi

if [[ ${SANITIZER:-0} == 1 ]]; then
  step "compute-sanitizer (small shapes, both transports; the copy-engine one on 2 GPUs)"
  sanitize_tilewise 'TilewiseDesignGpu.SingleRank*:TilewiseCopyEngineGpu.SmallForSanitizer' \
    "${SANITIZER_TIMEOUT:-45}" ${SANITIZER_TOOLS:-racecheck synccheck}
fi

if [[ ${DIAG:-1} == 1 ]]; then
  step "diagnostics: all-reduce timeline, remote mirror"
  mkdir -p "$OUT/timeline"
  OUT="$OUT/timeline" CARRY_DIR="${CARRY_DIR:-.carry_tilewise_ce}" timeout 120 \
    bash "$(dirname "${BASH_SOURCE[0]}")/trace_allreduce_tail.sh" "4096 4096 4096;2048 8192 8192" "2 4" \
    >/dev/null 2>>"$log"
  echo "timeline rc=$?" | tee -a "$log"
  timeout 120 "$(dirname "$bench")/owner-epilogue-bench" --peer-gpu 1 --groups 2 \
    >"$OUT/remote_mirror.csv" 2>>"$log"
  echo "owner-epilogue-bench --peer-gpu 1 rc=$?" | tee -a "$log"
fi

step "summary"
python3 benchmarks/gpu/summarize_tilewise.py "$OUT/tilewise_ce.csv" "$OUT/tilewise_ce_detail.csv" \
  --torch "$OUT/torch.csv" --output "$OUT/tilewise_ce_summary.csv" 2>&1 | tee -a "$log"
step "done"
