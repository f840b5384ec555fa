"""The shaped runner's pairs at one grid point as overlap-bench rows, for `overlapsim
validate`: each surface.csv row at S SMs free, C NCCL CTAs and k chunks becomes a row of
design `shaped:s<S>:c<C>`, op `gemm+<collective>`, chunks k, whose time is the pair's median
from the runner's search loop (surface.csv keeps no minimum or maximum: both are the median).
The GPU (older surface files have no gpu column), driver, CUDA and NCCL versions come from
the run's shaped_w<world>.csv.

  python3 benchmarks/gpu/shaped_point_rows.py --point 16:16:4 --out FILE RUN_DIR...
"""
import argparse
import csv
import os
import sys

from pair_rows import read_rows, write_rows


def versions(run_dir, world):
    rows = read_rows(os.path.join(run_dir, f"shaped_w{world}.csv"))
    if not rows:
        sys.exit(f"shaped_point_rows: {run_dir}/shaped_w{world}.csv: no rows (expected the runner's CSV)")
    return {k: rows[0][k] for k in ("gpu", "driver", "cuda", "nccl")}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--point", required=True, help="S:C:k (SMs free, NCCL CTAs, chunks)")
    ap.add_argument("--out", required=True)
    ap.add_argument("runs", nargs="+")
    a = ap.parse_args()
    try:
        s, c, k = (int(x) for x in a.point.split(":"))
    except ValueError:
        sys.exit(f"shaped_point_rows: --point: '{a.point}' (expected S:C:k, e.g. 16:16:4)")
    out = []
    for run in a.runs:
        path = os.path.join(run, "surface.csv")
        with open(path, newline="") as f:
            rows = [r for r in csv.DictReader(f)
                    if (int(r["free_sms"]), int(r["comm_ctas"]), int(r["chunks"])) == (s, c, k)]
        if not rows:
            sys.exit(f"shaped_point_rows: {path}: no row at S {s}, C {c}, k {k}")
        seen = {}
        for r in rows:
            world = r["world"]
            if world not in seen:
                seen[world] = versions(run, world)
            coll = r["op"].split("+", 1)[1]
            t = r["pair_us"]
            out.append({**seen[world], "world": world, "op": r["op"],
                        "design": f"shaped:s{s}:c{c}", "dtype": "bf16", "m": r["m"],
                        "n": r["n"], "k": r["k"],
                        "bytes": int(r["m"]) * int(r["n"]) * 2, "chunks": k, "time_us": t,
                        "time_min_us": t, "time_max_us": t, "tflops": "0.00",
                        "algbw_GBps": "0.00", "busbw_GBps": "0.00",
                        "wrong": r["exact_mismatches"]})
            assert coll in ("allreduce", "reducescatter", "alltoall"), coll
    write_rows(a.out, out)


if __name__ == "__main__":
    main()
