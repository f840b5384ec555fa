#!/usr/bin/env bash
# Fills build-carry/ (git-ignored, like every build-*/) with what the device scripts run:
# the CLI, overlap-bench, alloc-sync-probe, owner-epilogue-bench, own-gemm-bench and the
# kernels' test binaries from build/ (a CUDA build made here), and the yaml-cpp and fmt
# libraries they link, which the device image may lack. Usage: benchmarks/gpu/pack_carry.sh [BUILD_DIR]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${1:-$root/build}"
carry="$root/build-carry"
rm -rf "$carry"
mkdir -p "$carry/bin" "$carry/lib"
cp "$build/app/overlapsim" "$build/kernels/bench/overlap-bench" "$build/kernels/bench/alloc-sync-probe" \
  "$build/kernels/bench/owner-epilogue-bench" "$build/kernels/bench/tail-exchange-bench" \
  "$build/kernels/gemm/own-gemm-bench" "$carry/bin/"
for t in "$build"/tests/kernels/*_test; do cp "$t" "$carry/bin/"; done
for lib in yaml-cpp fmt; do
  ldd "$build/app/overlapsim" | awk -v l="lib$lib" '$1 ~ l {print $3}' | xargs -r -I{} cp -L {} "$carry/lib/"
done
du -sh "$carry"
