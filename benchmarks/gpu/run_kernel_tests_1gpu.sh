#!/usr/bin/env bash
# One device call on ONE GPU: the own GEMM's and the tile-wise design's GPU tests (the
# multi-GPU cases skip themselves), then compute-sanitizer (memcheck, racecheck,
# synccheck) on the tests named by SANITIZE_FILTER. Binaries from $CARRY_DIR (default build-carry/,
# (benchmarks/gpu/pack_carry.sh). Results in $OUT: machine.txt, <test>.txt,
# sanitizer_<tool>.txt, summary.txt.
#   benchmarks/gpu/run_kernel_tests_1gpu.sh [SANITIZE_FILTER]
set -uo pipefail
filter="${1:-TilewiseCopyEngineGpu.EpiloguePhase2MirrorsReducedTilesOnOneGpu}"
start_all=$(date +%s)
source "$(dirname "${BASH_SOURCE[0]}")/device_env.sh"
use_carried_binaries
bin="$bin_dir"
{
  date -u
  nvidia-smi --query-gpu=index,name,driver_version,memory.total,clocks.sm,clocks.max.sm,power.limit --format=csv
  echo "nccl lib: $nccl_lib"
  echo "sass LDL|STL in tilewise_test: $(cuobjdump -sass "$bin/tilewise_test" 2>/dev/null | grep -cE 'LDL|STL')"
} >"$OUT/machine.txt" 2>&1
for t in own_gemm_test tilewise_test; do
  s=$(date +%s)
  timeout 200 "$bin/$t" --gtest_brief=1 >"$OUT/$t.txt" 2>&1
  rc=$?
  echo "$t rc=$rc in $(($(date +%s) - s)) s: $(grep -E '^\[  (PASSED|FAILED)  \]' "$OUT/$t.txt" | tail -2 | tr '\n' ' ')" | tee -a "$OUT/summary.txt"
done
sanitizer="$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)"
for tool in memcheck racecheck synccheck; do
  left=$((560 - ($(date +%s) - start_all)))
  [ "$left" -lt 30 ] && { echo "sanitizer $tool: not run (time)" | tee -a "$OUT/summary.txt"; continue; }
  timeout "$((left < 120 ? left : 120))" "$sanitizer" --tool "$tool" "$bin/tilewise_test" \
    --gtest_filter="$filter" >"$OUT/sanitizer_$tool.txt" 2>&1
  echo "sanitizer $tool rc=$?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|hazard' "$OUT/sanitizer_$tool.txt" | tail -1)" | tee -a "$OUT/summary.txt"
done
echo "total $(($(date +%s) - start_all)) s" | tee -a "$OUT/summary.txt"
