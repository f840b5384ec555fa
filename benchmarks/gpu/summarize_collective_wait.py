#!/usr/bin/env python3
"""A collective behind back-to-back GEMMs against the rule the simulator charges it
(ExecOptions::comm_waits_for_gemm_kernel): an NCCL kernel finds no SM until the running
GEMM kernel ends, so each collective of a back-to-back burst starts at a GEMM kernel
boundary and the next one waits for the boundary after its end. With P the GEMM's time
beside the collectives and T the collective's time alone, the rule's time per collective
is ceil(T / P) * P; no parameter is fitted. Reads overlap-bench --op interference CSVs
(rows `<coll>|gemm:alone|beside` and `gemm|<coll>:beside`, NCCL's default CTAs only) and
prints one row per GEMM shape, collective and size, then the median and the spread of
measured / rule. Usage: summarize_collective_wait.py CSV [CSV...]"""
import collections
import csv
import math
import statistics
import sys


def rows_of(paths):
    points = collections.defaultdict(dict)
    for i, path in enumerate(paths):
        with open(path) as f:
            for r in csv.DictReader(f):
                if r.get("chunks", "0") not in ("0", ""):
                    continue  # a capped CTA count: not the default the rule is for
                key = (int(r["world"]), int(r["m"]), int(r["n"]), int(r["k"]), int(r["bytes"]), i)
                points[key][r["design"]] = float(r["time_us"])
    return points


def main(paths):
    points = rows_of(paths)
    ratios, alone = [], []
    print("world,m,n,k,MiB,collective,gemm_alone_us,gemm_beside_us,coll_alone_us,"
          "coll_beside_us,beside_over_alone,rule_us,measured_over_rule")
    for key in sorted(points, key=lambda k: (k[0], k[1] * k[2] * k[3], k[4])):
        v = points[key]
        for coll in ("allreduce", "alltoall"):
            names = [f"gemm|{coll}:alone", f"gemm|{coll}:beside", f"{coll}|gemm:alone",
                     f"{coll}|gemm:beside"]
            if not all(n in v for n in names):
                continue
            ga, gb, ca, cb = (v[n] for n in names)
            rule = math.ceil(ca / gb) * gb
            ratios.append(cb / rule)
            alone.append(cb / ca)
            world, m, n, k, b, _ = key
            print(f"{world},{m},{n},{k},{b >> 20},{coll},{ga:.1f},{gb:.1f},{ca:.1f},{cb:.1f},"
                  f"{cb / ca:.2f},{rule:.1f},{cb / rule:.2f}")
    if ratios:
        q = statistics.quantiles(ratios, n=10)
        print(f"# {len(ratios)} points: measured / rule median {statistics.median(ratios):.3f}, "
              f"10th-90th percentile {q[0]:.2f}-{q[-1]:.2f}, "
              f"min {min(ratios):.2f}, max {max(ratios):.2f}; measured / alone (no rule) "
              f"median {statistics.median(alone):.2f}, max {max(alone):.2f}")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: summarize_collective_wait.py CSV [CSV...]")
    main(sys.argv[1:])
