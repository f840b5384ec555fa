#!/usr/bin/env bash
# One short device call (2 x H200): the stream-gate GPU tests, then every collective at
# 1 KiB .. 8 MiB (x2) with the calibration suite's steady-state settings, twice, with the
# gated timing (kernels/harness/stream_gate.hpp); binaries built on the workstation and
# carried in .carry_gate/ (bin/overlap-bench, bin/stream_gate_test, lib/ with yaml-cpp and
# fmt). Results in $OUT: log.txt, gated_run1.csv, gated_run2.csv. Under 120 s.
#   bash benchmarks/gpu/run_gate_smoke.sh
set -uo pipefail
export CUDA_MODULE_LOADING=EAGER
source "$(dirname "${BASH_SOURCE[0]}")/device_env.sh"
carry="$root/.carry_gate"
use_device_libs "$carry/lib"
log="$OUT/log.txt"
{
  nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv
  echo "nccl lib: $nccl_lib"
} >>"$log" 2>&1
timeout 60 "$carry/bin/stream_gate_test" >>"$log" 2>&1
echo "stream_gate_test rc=$?" | tee -a "$log"
sizes=$(python3 -c "print(','.join(str(1024 << i) for i in range(14)))")
for run in 1 2; do
  for op in allreduce reducescatter allgather alltoall; do
    timeout 60 "$carry/bin/overlap-bench" --op "$op" --bytes "$sizes" --warmup-ms 50 \
      --min-time-ms 20 --iterations 10 --world 2 --timeout 60s \
      --output "$OUT/gated_${op}_run$run.csv" >/dev/null 2>>"$log"
    echo "overlap-bench $op run $run rc=$?" | tee -a "$log"
  done
done
for run in 1 2; do
  head -1 "$OUT/gated_allreduce_run$run.csv" >"$OUT/gated_run$run.csv"
  for op in allreduce reducescatter allgather alltoall; do
    tail -n +2 "$OUT/gated_${op}_run$run.csv" >>"$OUT/gated_run$run.csv"
    rm -f "$OUT/gated_${op}_run$run.csv"
  done
done
