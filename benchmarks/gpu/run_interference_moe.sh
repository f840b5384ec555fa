#!/usr/bin/env bash
# One device call: how much a cuBLAS GEMM slows while NCCL moves data beside it on NCCL's
# default CTAs (overlap-bench --op interference, ctas 0), at the MoE layers' own GEMM shapes
# and the large anchor shape of the calibration suites, on 2 GPUs. The simulator charges
# the step's own concurrency one factor, compute.concurrent_comm_slowdown, fitted on two
# large shapes; the EP overlap puts expert GEMMs of a few GFLOP beside the token exchange.
# Binaries: overlap-bench carried in $CARRY_DIR/{bin,lib} (default build-carry,
# benchmarks/gpu/pack_carry.sh), else a kernels-only build here. Everything ends up in
# $OUT/interference_moe.tar.gz.
#   bash benchmarks/gpu/run_interference_moe.sh     # about 2-4 minutes
# Environment: SHAPES, COLLECTIVES (allreduce,alltoall), BYTES (8MiB,32MiB,128MiB), CTAS (0:
# NCCL's default; a list sweeps NCCL's CTA limit), RUN (the results folder's name), WORLD
# (ranks, one a GPU; default 2).
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/device_env.sh"
RUN=${RUN:-interference_moe}
run_dir="$OUT/$RUN"
mkdir -p "$run_dir"
log="$run_dir/log.txt"
# m x n x k, bf16: Qwen3-30B-A3B's experts at EP 16 (4,096 rows an expert; fc1 2 x 768
# wide from 2,048, fc2 back), GPT-OSS 120B's at EP 8 (1,024 rows; 2 x 2,880 from 2,880),
# a Qwen3-235B-sized attention projection, and the suites' 8192 x 8192 x 4096.
SHAPES=${SHAPES:-4096x1536x2048,4096x2048x768,1024x5760x2880,4096x4608x4096,8192x8192x4096}
log_machine "grep -E 'define NCCL_(MAJOR|MINOR|PATCH)' '$nccl_header'"
carry="$root/${CARRY_DIR:-build-carry}"
use_device_libs "$carry/lib"
bench="$carry/bin/overlap-bench"
if ! "$bench" --help >/dev/null 2>>"$log"; then
  step "carried overlap-bench does not run here: kernels-only build"
  build_kernels_only 300 overlap-bench >>"$log" 2>&1
  echo "build rc=$?" | tee -a "$log"
  bench=build-gpu/kernels/bench/overlap-bench
fi
COLLECTIVES=${COLLECTIVES:-allreduce,alltoall}
BYTES=${BYTES:-8MiB,32MiB,128MiB}
CTAS=${CTAS:-0}
WORLD=${WORLD:-2}
step "interference at ctas $CTAS, $WORLD ranks: $SHAPES"
timeout -k 5 420 "$bench" --op interference --shapes "$SHAPES" --collectives "$COLLECTIVES" \
  --bytes "$BYTES" --ctas "$CTAS" --min-time-ms 20 --warmup-ms 50 --world "$WORLD" \
  --output "$run_dir/interference.csv" >>"$log" 2>&1
echo "overlap-bench rc=$?" | tee -a "$log"
tar -czf "$OUT/$RUN.tar.gz" -C "$OUT" "$RUN"
