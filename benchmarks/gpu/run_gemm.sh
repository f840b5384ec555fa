#!/usr/bin/env bash
# One device call for the own Hopper GEMM: configure (kernels only), build the GEMM's
# targets, check the SASS (HGMMA present, no local-memory spills, TMA multicast present),
# run its GPU tests (the signal test first, in a fresh process, so it covers the cold
# start), then benchmark own v3 and v2 vs cuBLASLt, interleaved, on the acceptance and MoE
# shapes. Everything lands in $OUT (at most 8 files).
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
       cmake --build "$BUILD" -j16 --target own-gemm-bench own_gemm_test ${EXTRA_TARGETS:-} \
         >>"$LOG" 2>&1; }; then
  say "BUILD FAILED"; tail -40 "$LOG"; exit 1
fi
say "built in $(( $(date +%s) - start )) s"

say "SASS check"
obj=$(find "$BUILD" -name 'own_gemm_sm90.cu.o' | head -1)
cuobjdump --dump-sass "$obj" >"$OUT/sass.txt" 2>&1
{
  echo "HGMMA instructions: $(grep -c HGMMA "$OUT/sass.txt")"
  echo "local memory (LDL/STL): $(grep -cE '\b(LDL|STL)\b' "$OUT/sass.txt")"
  echo "TMA (UTMALDG): $(grep -c UTMALDG "$OUT/sass.txt"), multicast: $(grep -c 'UTMALDG.*MULTICAST' "$OUT/sass.txt")"
  echo "per kernel: HGMMA / UTMALDG / LDL+STL"
  awk '/Function :/{name=$3} /HGMMA/{h[name]++} /UTMALDG/{t[name]++} /[ \t](LDL|STL)[ .]/{l[name]++}
       END{for (n in h) printf "  %s %d %d %d\n", n, h[n], t[n], l[n]}' "$OUT/sass.txt" | sort
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
      --launch-count 1 --section SpeedOfLight --section MemoryWorkloadAnalysis ${NCU_EXTRA:-} \
      "$BUILD/kernels/gemm/own-gemm-bench" --shapes "$NCU_SHAPE" --iters 2 --warmup 1 \
      --cublas-candidates 1 --versions "${NCU_VERSION:-3}" >>"$OUT/ncu.txt" 2>&1
    echo "== ncu $kernel exit $?" >>"$OUT/ncu.txt"
  done
  grep -E "==PROF==|Throughput|Busy|Duration|SM Frequency|Max Bandwidth|L2 Hit|exit|  [a-z_0-9]+gemm|nvjet" \
    "$OUT/ncu.txt" | head -60 | tee -a "$LOG"
fi

say "benchmark"
BENCH=$BUILD/kernels/gemm/own-gemm-bench
SHAPES=${SHAPES:-4096x4096x4096,8192x8192x2048,8192x8192x8192,16384x8192x4096,2048x8192x8192,4096x12288x49152,8192x4096x14336,16384x4096x14336,16384x7168x2048,32768x7168x2048}
# Own variants interleaved with cuBLASLt: own_v3 (clusters of 2, B multicast), own_v2 (no
# cluster), and v3 with the epilogue's store spread over s k-blocks and/or 16-byte vector
# stores (v); then, if GROUP_M_ALT is set, v3 alone with that raster group.
VERSIONS=${VERSIONS:-3,2,3n,2n,3i,2i}
timeout -s KILL 300 "$BENCH" --driver "$DRIVER" --shapes "$SHAPES" --versions "$VERSIONS" ${BENCH_ARGS:-} \
  >"$OUT/gemm_bench_variants.csv" 2> >(tee -a "$LOG" >&2)
say "bench $VERSIONS exit $?"
if [ -n "${GROUP_M_ALT:-}" ]; then
  timeout -s KILL 120 "$BENCH" --driver "$DRIVER" --versions 3 --group-m "$GROUP_M_ALT" \
    --shapes 8192x8192x2048,16384x8192x4096,32768x7168x2048,4096x4096x4096 \
    >"$OUT/gemm_bench_v3_group${GROUP_M_ALT}.csv" 2> >(tee -a "$LOG" >&2)
  say "bench v3 group_m $GROUP_M_ALT exit $?"
fi
