#!/usr/bin/env bash
# A/B of two owner-epilogue-bench builds on one GPU: BASE ($CARRY_DIR/bin/
# owner-epilogue-bench-base, copied there by hand from the build before the change) and the
# current one, in turn BASE, NEW, BASE, NEW (receive buffer cold, 2 groups a part), so the
# plain own GEMM and the copy-engine owner GEMMs (reducing, with L2 prefetch, with mirror
# stores) are compared build against build under the same drift (run_ab, device_env.sh).
# Outputs under $OUT: owner_ab_<i>_<base|new>.csv / .err, owner_ab_log.txt,
# owner_ab_summary.csv (mean time per build and design, new/base), machine.txt; also
# packed as owner_ab.tar.gz.
# Usage: CARRY_DIR=build-carry bash benchmarks/gpu/run_owner_epilogue_ab.sh
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/device_env.sh"
use_carried_binaries
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv >"$OUT/machine.txt" 2>&1
run_ab owner_ab "$bin_dir/owner-epilogue-bench-base" "$bin_dir/owner-epilogue-bench" \
  --groups 2 --iters 30 --warmup 5 --recv cold
python3 - "$OUT" >"$OUT/owner_ab_summary.csv" <<'PY'
import csv, glob, os, sys
times = {}  # (shape, design, build) -> [us]
for path in sorted(glob.glob(os.path.join(sys.argv[1], "owner_ab_*_*.csv"))):
    build = path.rsplit("_", 1)[1][:-4]
    for r in csv.DictReader(open(path)):
        key = (f"{r['m']}x{r['n']}x{r['k']}", r["design"])
        times.setdefault(key + (build,), []).append(float(r["time_us"]))
print("shape,design,base_us,new_us,new_over_base")
for (shape, design, build) in sorted(times):
    if build != "base" or (shape, design, "new") not in times:
        continue
    b = sum(times[(shape, design, "base")]) / len(times[(shape, design, "base")])
    n = sum(times[(shape, design, "new")]) / len(times[(shape, design, "new")])
    print(f"{shape},{design},{b:.2f},{n:.2f},{n / b:.4f}")
PY
cat "$OUT/owner_ab_summary.csv"
tar -C "$OUT" -czf "$OUT/owner_ab.tar.gz" $(cd "$OUT" && ls owner_ab_* machine.txt)
