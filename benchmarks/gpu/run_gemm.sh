#!/usr/bin/env bash
# One device call for the own Hopper GEMM: configure (kernels only), build the GEMM's
# targets, check the SASS (HGMMA present, no local-memory spills), run its GPU tests (the
# signal test first, in a fresh process, so it covers the cold start), then benchmark own
# vs cuBLASLt on the issue-4 shapes. Everything lands in $OUT (at most 8 files).
#   bash benchmarks/gpu/run_gemm.sh            # from the repo root, on the GPU machine
set -u -o pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
OUT=${OUT:-$PWD/gemm-out}
mkdir -p "$OUT"
BUILD=${BUILD:-build-gpu}
LOG=$OUT/log.txt
: >"$LOG"
say() { echo "== $*" | tee -a "$LOG"; }

DRIVER=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1)
say "GPU: $(nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader 2>&1 | head -1)"

say "configure + build"
start=$(date +%s)
if ! { cmake -S . -B "$BUILD" -G Ninja -DOVERLAPSIM_KERNELS_ONLY=ON -DCMAKE_BUILD_TYPE=Release \
         >>"$LOG" 2>&1 &&
       cmake --build "$BUILD" -j16 --target own-gemm-bench own_gemm_test >>"$LOG" 2>&1; }; then
  say "BUILD FAILED"; tail -40 "$LOG"; exit 1
fi
say "built in $(( $(date +%s) - start )) s"

say "SASS check"
obj=$(find "$BUILD" -name 'own_gemm_sm90.cu.o' | head -1)
cuobjdump --dump-sass "$obj" >"$OUT/sass.txt" 2>&1
{
  echo "HGMMA instructions: $(grep -c HGMMA "$OUT/sass.txt")"
  echo "local memory (LDL/STL): $(grep -cE '\b(LDL|STL)\b' "$OUT/sass.txt")"
  echo "TMA (UTMALDG): $(grep -c UTMALDG "$OUT/sass.txt")"
  grep -m3 HGMMA "$OUT/sass.txt"
} | tee -a "$LOG"
gzip -f "$OUT/sass.txt"

say "tests"
TEST=$BUILD/tests/kernels/own_gemm_test
timeout -s KILL 120 "$TEST" --gtest_filter='*Signal*' 2>&1 | tee "$OUT/test_log.txt"
signal_rc=$?
timeout -s KILL 240 "$TEST" --gtest_filter='-*Signal*' 2>&1 | tee -a "$OUT/test_log.txt"
rest_rc=$?
say "test exit codes: signal $signal_rc, others $rest_rc"

if [ "${SANITIZE:-0}" = 1 ]; then
  say "compute-sanitizer (memcheck, racecheck, synccheck) on the small-shape tests"
  for tool in memcheck racecheck synccheck; do
    timeout -s KILL 60 compute-sanitizer --tool "$tool" "$TEST" \
      --gtest_filter='*SmallAndIrregular*' 2>&1 | tail -15 >>"$OUT/sanitizer.txt"
    echo "== $tool exit $?" | tee -a "$OUT/sanitizer.txt"
  done
  grep -E "ERROR SUMMARY|Tests|PASSED|FAILED|exit" "$OUT/sanitizer.txt" | tee -a "$LOG"
fi

if [ "${NCU:-0}" = 1 ]; then
  say "ncu: speed of light and memory workload of own vs cuBLAS at ${NCU_SHAPE:=8192x8192x2048}"
  for kernel in 'regex:own_gemm_kernel' 'regex:nvjet|xmma|cutlass'; do
    timeout -s KILL 120 ncu --clock-control none --kernel-name "$kernel" --launch-skip 1 \
      --launch-count 1 --section SpeedOfLight --section MemoryWorkloadAnalysis \
      "$BUILD/kernels/gemm/own-gemm-bench" --shapes "$NCU_SHAPE" --iters 2 --warmup 1 \
      --cublas-candidates 1 >>"$OUT/ncu.txt" 2>&1
    echo "== ncu $kernel exit $?" >>"$OUT/ncu.txt"
  done
  grep -E "==PROF==|Throughput|Busy|Duration|SM Frequency|Max Bandwidth|L2 Hit|exit|  [a-z_0-9]+gemm|nvjet" \
    "$OUT/ncu.txt" | head -60 | tee -a "$LOG"
fi

say "benchmark"
BENCH=$BUILD/kernels/gemm/own-gemm-bench
# defer_stores 1 is the library default (v2); 0 is v1's store-then-continue epilogue.
run=0
for defer in ${DEFER_STORES:-1 0}; do
  run=$((run + 1))
  timeout -s KILL 200 "$BENCH" --driver "$DRIVER" --defer-stores "$defer" ${BENCH_ARGS:-} \
    >"$OUT/gemm_bench_${run}_defer${defer}.csv" 2> >(tee -a "$LOG" >&2)
  say "bench run $run defer_stores $defer exit $?"
done
