#!/usr/bin/env bash
# One device call: how much a memory-bound kernel slows beside NCCL on 2 GPUs, by size and
# launch shape (kernels/bench/interference_memory_probe.cu), the counterpart of the GEMM
# interference rows. Binary: interference-memory-probe carried in $CARRY_DIR/bin (default
# build-carry), else built here. Everything ends up in $OUT/interference_memory.tar.gz.
#   bash benchmarks/gpu/run_interference_memory.sh     # about 2-4 minutes
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/device_env.sh"
run_dir="$OUT/interference_memory"
mkdir -p "$run_dir"
log="$run_dir/log.txt"
log_machine "grep -E 'define NCCL_(MAJOR|MINOR|PATCH)' '$nccl_header'"
carry="$root/${CARRY_DIR:-build-carry}"
use_device_libs "$carry/lib"
probe="$carry/bin/interference-memory-probe"
if [[ ! -x $probe ]]; then
  step "no carried probe: kernels-only build"
  build_kernels_only 300 interference-memory-probe >>"$log" 2>&1
  probe=build-gpu/kernels/bench/interference-memory-probe
fi
step "interference-memory-probe ${ROUNDS:-6} rounds"
timeout -k 5 420 "$probe" "${ROUNDS:-6}" >"$run_dir/interference_memory.csv" 2>>"$log"
echo "probe rc=$?" | tee -a "$log"
cat "$run_dir/interference_memory.csv"
tar -czf "$OUT/interference_memory.tar.gz" -C "$OUT" interference_memory
