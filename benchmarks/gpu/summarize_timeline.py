#!/usr/bin/env python3
"""The copy-engine design's step timeline (overlap-bench OVERLAPSIM_TILEWISE_TIMELINE CSV:
op,m,n,k,groups,wait,call,rank,step,t_us): per shape, groups and rank, each step's median
time in us from the call's start over the calls after the first, in the order recorded,
with the time since the GEMM's end for the steps after it.
  summarize_timeline.py TIMELINE.csv"""
import csv
import statistics
import sys
from collections import OrderedDict, defaultdict


def main():
    rows = list(csv.DictReader(open(sys.argv[1])))
    runs = OrderedDict()
    for r in rows:
        key = (r["op"], r["m"], r["n"], r["k"], r["groups"], r["wait"], r["rank"])
        steps = runs.setdefault(key, OrderedDict())
        if int(r["call"]) == 0 and len(rows) > 1:
            steps.setdefault(r["step"], [])  # the order, but not the first call's time
            continue
        steps.setdefault(r["step"], []).append(float(r["t_us"]))
    for key, steps in runs.items():
        op, m, n, k, g, wait, rank = key
        med = {s: statistics.median(v) for s, v in steps.items() if v}
        gemm_end = med.get("gemm_end")
        print(f"\n{op} {m}x{n}x{k}, {g} groups a part, {wait}, rank {rank} "
              f"(median of {max(len(v) for v in steps.values())} calls)")
        for s, t in med.items():
            after = f"  (+{t - gemm_end:6.1f} after the GEMM)" if gemm_end is not None and t > gemm_end else ""
            print(f"  {s:28s} {t:8.1f} us{after}")


if __name__ == "__main__":
    main()
