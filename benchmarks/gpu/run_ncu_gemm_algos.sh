#!/usr/bin/env bash
# ncu of the own GEMM (default variant) and of chosen cuBLASLt algorithms at one shape, on
# one GPU: which kernel each cuBLAS algorithm is (its name carries tile, stages, cluster,
# schedule), and speed of light, launch statistics, pipe utilisation and warp stall
# reasons for each. --clock-control none (the GPU's own clocks; nothing is set).
# Outputs under $OUT: ncu_<what>.txt and ncu_summary.txt, also packed as ncu.tar.gz.
# Usage: NCU_SHAPE=8192x8192x2048 ALGOS="0 6" CARRY_DIR=build-carry bash benchmarks/gpu/run_ncu_gemm_algos.sh
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/device_env.sh"
use_carried_binaries
gemm_bench="$bin_dir/own-gemm-bench"
shape="${NCU_SHAPE:-8192x8192x2048}"
stalls=""
for r in barrier branch_resolving dispatch_stall gmma long_scoreboard math_pipe_throttle \
  mio_throttle no_instruction not_selected selected short_scoreboard wait lg_throttle; do
  stalls+="smsp__average_warps_issue_stalled_${r}_per_issue_active.ratio,"
done
metrics="${stalls}sm__inst_executed.sum,l1tex__t_bytes.sum,lts__t_bytes.sum,dram__bytes.sum"
profile() {  # profile NAME KERNEL_REGEX ALGO
  timeout -s KILL 150 ncu --clock-control none --kernel-name "$2" --launch-skip 2 --launch-count 1 \
    --section SpeedOfLight --section LaunchStats --section Occupancy --section ComputeWorkloadAnalysis --metrics "$metrics" \
    "$gemm_bench" --shapes "$shape" --iters 3 --warmup 1 --versions 2 --cublas-algo "$3" \
    >"$OUT/ncu_$1.txt" 2>&1
  echo "== $1 exit $?" >>"$OUT/ncu_summary.txt"
}
: >"$OUT/ncu_summary.txt"
profile own 'regex:own_gemm_kernel' 0
for a in ${ALGOS:-0 6}; do profile "cublas_algo$a" 'regex:nvjet|xmma|cutlass' "$a"; done
for f in "$OUT"/ncu_own.txt "$OUT"/ncu_cublas_algo*.txt; do
  echo "### $(basename "$f")"
  grep -E "^  [^ ].*\(|Duration|SM Frequency|Elapsed Cycles|SM Active Cycles|Compute \(SM\)|Memory Throughput|DRAM Throughput|L2 Cache Throughput|Registers Per|Shared Memory Config|Dynamic Shared|Grid Size|Block Size|Cluster Size|Waves Per SM|Tensor|Issue Slots Busy|stalled_(barrier|gmma|long_scoreboard|wait|mio_throttle|short_scoreboard|selected)_|inst_executed|lts__t_bytes|dram__bytes|l1tex__t_bytes" "$f"
done >>"$OUT/ncu_summary.txt"
tar -C "$OUT" -czf "$OUT/ncu.tar.gz" $(cd "$OUT" && ls ncu_*.txt)
cat "$OUT/ncu_summary.txt"
