#!/usr/bin/env bash
# A/B of two owner-epilogue-bench builds on one GPU: BASE ($CARRY_DIR/bin/
# owner-epilogue-bench-base, copied there by hand from the build before the change) and the
# current one, in turn BASE, NEW, BASE, NEW (receive buffer cold, 2 groups a part), so the
# plain own GEMM and the copy-engine owner GEMMs (reducing, with L2 prefetch, with mirror
# stores) are compared build against build under the same drift (run_ab, device_env.sh).
# Outputs under $OUT: owner_ab_<i>_<base|new>.csv / .err, owner_ab_log.txt,
# owner_ab_summary.csv (mean time per build and design, new/base, and each owner variant
# over the plain own GEMM of its run, per build, the change in points), machine.txt; also
# packed as owner_ab.tar.gz.
# Usage: CARRY_DIR=build-carry bash benchmarks/gpu/run_owner_epilogue_ab.sh
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/device_env.sh"
use_carried_binaries
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv >"$OUT/machine.txt" 2>&1
run_ab owner_ab "$bin_dir/owner-epilogue-bench-base" "$bin_dir/owner-epilogue-bench" \
  --groups 2 --iters 30 --warmup 5 --recv cold
python3 - "$OUT" >"$OUT/owner_ab_summary.csv" <<'PY'
# Per shape and design: mean time of each build, new/base, and (owner variants) the time
# over the plain own GEMM of the same run, averaged per build, with the change in points:
# the plain GEMM drifts run to run (8192x8192x2048 took 376-418 us across one call), so
# the over-own figures are the build-against-build measure.
import csv, glob, os, sys
times, over = {}, {}  # (shape, design, build) -> [us] / [time over own of its run]
for path in sorted(glob.glob(os.path.join(sys.argv[1], "owner_ab_*_*.csv"))):
    build = path.rsplit("_", 1)[1][:-4]
    rows = list(csv.DictReader(open(path)))
    own = {f"{r['m']}x{r['n']}x{r['k']}": float(r["time_us"]) for r in rows if r["design"] == "own"}
    for r in rows:
        shape = f"{r['m']}x{r['n']}x{r['k']}"
        times.setdefault((shape, r["design"], build), []).append(float(r["time_us"]))
        if r["design"] != "own" and shape in own:
            over.setdefault((shape, r["design"], build), []).append(float(r["time_us"]) / own[shape])
mean = lambda v: sum(v) / len(v)
print("shape,design,base_us,new_us,new_over_base,base_over_own,new_over_own,change_points")
for (shape, design, build) in sorted(times):
    if build != "base" or (shape, design, "new") not in times:
        continue
    b, n = mean(times[(shape, design, "base")]), mean(times[(shape, design, "new")])
    line = f"{shape},{design},{b:.2f},{n:.2f},{n / b:.4f}"
    if (shape, design, "base") in over and (shape, design, "new") in over:
        ob, on = mean(over[(shape, design, "base")]), mean(over[(shape, design, "new")])
        line += f",{ob:.4f},{on:.4f},{100 * (on - ob):+.2f}"
    else:
        line += ",,,"
    print(line)
PY
cat "$OUT/owner_ab_summary.csv"
tar -C "$OUT" -czf "$OUT/owner_ab.tar.gz" $(cd "$OUT" && ls owner_ab_* machine.txt)
