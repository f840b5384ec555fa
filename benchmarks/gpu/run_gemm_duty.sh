#!/usr/bin/env bash
# The own GEMM and cuBLAS back to back against duty-cycled, on one GPU: own-gemm-bench times
# them interleaved, then each alone for SUSTAIN_MS back to back (designs *_sustained) and
# once per gap in GAPS_US with that much idle GPU after every call (designs *_gap<G>us, the
# duty cycle of a sequential GEMM-then-collective loop), while nvidia-smi samples clock and
# power. Outputs under $OUT: duty.csv (rows), duty.err (summary and `# phase` lines),
# phases.csv, smi.csv, summary.csv (summarize_gemm_power.py against cublas_sustained).
# Usage: CARRY_DIR=build-carry bash benchmarks/gpu/run_gemm_duty.sh
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/device_env.sh"
use_carried_binaries
shapes="${SHAPES:-4096x4096x4096,2048x8192x8192,8192x8192x2048,8192x8192x8192}"
{
  date -u
  nvidia-smi --query-gpu=index,name,driver_version,memory.total,clocks.sm,clocks.max.sm,power.limit,temperature.gpu --format=csv
} >"$OUT/machine.txt" 2>&1
start_smi_sampling "$OUT/smi.csv"
timeout 500 "$bin_dir/own-gemm-bench" --shapes "$shapes" --versions "${VERSIONS:-2}" --iters 30 \
  --sustain-ms "${SUSTAIN_MS:-2000}" --gaps-us "${GAPS_US:-150,450}" >"$OUT/duty.csv" 2>"$OUT/duty.err"
echo "own-gemm-bench rc=$?" | tee -a "$OUT/duty.err"
stop_smi_sampling
own_gemm_phases "$OUT/duty.err" >"$OUT/phases.csv"
python3 "$root/benchmarks/gpu/summarize_gemm_power.py" "$OUT" duty.csv cublas_sustained >"$OUT/summary.csv"
cat "$OUT/summary.csv"
grep -v "^# phase" "$OUT/duty.err"
