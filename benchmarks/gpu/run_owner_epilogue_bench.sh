#!/usr/bin/env bash
# One device call on ONE GPU: owner-epilogue-bench (the copy-engine all-reduce's reducing
# epilogue, with the peer partial's L2 prefetch and with the phase-2 mirror stores, against
# the plain own GEMM), receive buffer cold twice, then fresh, 2 groups a part.
# Binaries from $CARRY_DIR (default build-carry/, pack_carry.sh).
# Results in $OUT: owner_epilogue.csv (one header), machine.txt, log.txt.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/device_env.sh"
use_carried_binaries
{
  date -u
  nvidia-smi --query-gpu=index,name,driver_version,memory.total,clocks.sm,clocks.max.sm,power.limit --format=csv
} >"$OUT/machine.txt" 2>&1
for recv in cold cold fresh; do
  timeout 200 "$bin_dir/owner-epilogue-bench" --groups 2 --iters 30 --warmup 5 --recv "$recv" \
    >"$OUT/run.csv" 2>>"$OUT/log.txt"
  echo "recv $recv rc=$?" | tee -a "$OUT/log.txt"
  append_csv "$OUT/run.csv" "$OUT/owner_epilogue.csv"
done
rm -f "$OUT/run.csv"
