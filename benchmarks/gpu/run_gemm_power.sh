#!/usr/bin/env bash
# Does the own GEMM lose to cuBLAS under sustained load because it runs at a lower clock
# (more power per FLOP), or at the same clock? On one GPU: each of own and cuBLAS alone,
# back to back for SUSTAIN_MS per shape (gated timing, overlap-bench --op gemm), while
# nvidia-smi samples SM clock, power and throttle reasons every 50 ms (queries only; no
# setting is touched); then own-gemm-bench interleaving both, short (30 calls) and long
# (LONG_ITERS calls). Outputs under $OUT: gemm_sustained.csv, phases.csv (start/end of each
# run, epoch seconds), smi.csv, interleaved_short.csv, interleaved_long.csv, versions.txt.
# Usage: CARRY_DIR=build-carry bash benchmarks/gpu/run_gemm_power.sh
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/device_env.sh"
use_carried_binaries
bench="$bin_dir/overlap-bench"
gemm_bench="$bin_dir/own-gemm-bench"
shapes="${SHAPES:-8192x8192x2048,4096x4096x4096,2048x8192x8192,8192x8192x8192}"
sustain_ms="${SUSTAIN_MS:-3000}"
long_iters="${LONG_ITERS:-1500}"

{
  nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv
  echo "nccl: ${nccl_lib:-none}"
} >"$OUT/versions.txt" 2>&1

start_smi_sampling "$OUT/smi.csv"

echo "shape,design,start_s,end_s" >"$OUT/phases.csv"
for shape in ${shapes//,/ }; do
  for design in own cublas; do
    start=$(date +%s.%N)
    timeout 120 "$bench" --op gemm --designs "$design" --shapes "$shape" --world 1 \
      --min-time-ms "$sustain_ms" --warmup-ms 1000 >"$OUT/run.csv" 2>>"$OUT/bench.err"
    echo "rc=$? $shape $design" >>"$OUT/bench.err"
    end=$(date +%s.%N)
    echo "$shape,$design,$start,$end" >>"$OUT/phases.csv"
    append_csv "$OUT/run.csv" "$OUT/gemm_sustained.csv"
    sleep 2  # idle between runs, so each starts from the same cool state
  done
done
rm -f "$OUT/run.csv"

timeout 200 "$gemm_bench" --shapes "$shapes" --versions 2 --iters 30 >"$OUT/interleaved_short.csv" \
  2>"$OUT/interleaved_short.err"
echo "short rc=$?" >>"$OUT/bench.err"
start=$(date +%s.%N)
timeout 300 "$gemm_bench" --shapes "$shapes" --versions 2 --iters "$long_iters" \
  >"$OUT/interleaved_long.csv" 2>"$OUT/interleaved_long.err"
echo "long rc=$? $start $(date +%s.%N)" >>"$OUT/bench.err"
stop_smi_sampling
cat "$OUT/gemm_sustained.csv"
tail -n 8 "$OUT/interleaved_short.err" "$OUT/interleaved_long.err"
cat "$OUT/bench.err" | tail -n 12
