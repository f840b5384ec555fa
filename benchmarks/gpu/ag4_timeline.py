#!/usr/bin/env python3
"""Summarises overlap-bench's AllGather+GEMM call timeline (OVERLAPSIM_AG_TIMELINE=DIR:
DIR/timeline_rank<r>.csv, rows shape,variant,rank,call,start,pushes_start,step_1..step_n-1,
gemm_end,end in µs after a common t0) per shape and variant, over the calls from --skip on:
  max_dur   median over calls of the slowest rank's call (what overlap-bench's rows report)
  period    (last end − first start) / calls, the slowest rank's: the throughput
  gemm      median of start → GEMM end (before the join), all ranks
  skew      median over calls of the spread of the ranks' starts
  arr_k     median over ranks and calls of when block r + k landed (its sender's step k
            ended) after this rank's call started; negative: before the call started
  late_k    the same against the GEMM alone's time for the blocks before it (the latest it
            may land without a wait, k / n of the own GEMM alone's median)
  gap       median of a call's start after the previous call's end on the same rank
DIR may also be a merged timeline CSV (--merge's output: a header, the GPU in each row).
Usage: ag4_timeline.py DIR|TIMELINE.csv [--skip 5] [--csv OUT] [--gpu NAME] [--merge OUT]
(--gpu: the GPU name written into --csv and --merge rows when the input has none)"""
import argparse
import csv
import glob
import os
import statistics as st
from collections import defaultdict


def med(xs):
    xs = [x for x in xs if x == x]
    return st.median(xs) if xs else float("nan")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--skip", type=int, default=5)
    ap.add_argument("--csv")
    ap.add_argument("--gpu", default="")
    ap.add_argument("--merge")
    a = ap.parse_args()
    rows = defaultdict(dict)  # (shape, variant) -> {(rank, call): values}
    gpu = a.gpu
    raw = []  # [shape, variant, rank, call, values...] as read
    if os.path.isdir(a.dir):
        for path in sorted(glob.glob(os.path.join(a.dir, "timeline_rank*.csv"))):
            raw += [r for r in csv.reader(open(path)) if r]
    else:
        for r in csv.DictReader(open(a.dir)):
            gpu = gpu or r["gpu"]
            raw.append([r[k] for k in list(r)[1:]])
    for r in raw:
        shape, variant, rank, call = r[0], r[1], int(r[2]), int(r[3])
        rows[(shape, variant)][(rank, call)] = [float(x) for x in r[4:]]
    if a.merge:
        steps = max(len(r) for r in raw) - 8
        with open(a.merge, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["gpu", "shape", "variant", "rank", "call", "start_us", "pushes_start_us"]
                       + [f"step{i}_end_us" for i in range(1, steps + 1)]
                       + ["gemm_end_us", "end_us"])
            for r in sorted(raw, key=lambda r: (r[0], r[1], int(r[2]), int(r[3]))):
                w.writerow([gpu] + r)
    out = []
    own = {}
    for (shape, variant), d in rows.items():
        ranks = sorted({k[0] for k in d})
        calls = sorted({k[1] for k in d})
        n = len(ranks)
        use = [c for c in calls if c >= a.skip]
        gemm_alone = own.get(shape)
        max_dur, gemm, skew, gap = [], [], [], []
        arr = defaultdict(list)
        for c in use:
            durs = [d[(r, c)][-1] - d[(r, c)][0] for r in ranks if (r, c) in d]
            max_dur.append(max(durs))
            starts = [d[(r, c)][0] for r in ranks if (r, c) in d]
            skew.append(max(starts) - min(starts))
            for r in ranks:
                v = d[(r, c)]
                gemm.append(v[-2] - v[0])
                if (r, c - 1) in d:
                    gap.append(v[0] - d[(r, c - 1)][-1])
                for k in range(1, n):
                    p = (r + k) % n
                    if (p, c) in d:
                        arr[k].append(d[(p, c)][1 + k] - v[0])
        periods = []
        for r in ranks:
            first, last = d[(r, use[0])][0], d[(r, use[-1])][-1]
            periods.append((last - first) / len(use))
        rec = {"shape": shape, "variant": variant, "calls": len(use), "max_dur": med(max_dur),
               "period": max(periods), "gemm": med(gemm), "skew": med(skew), "gap": med(gap)}
        for k in range(1, n):
            rec[f"arr_{k}"] = med(arr[k])
        if variant == "own_gemm":
            own[shape] = rec["max_dur"]
        out.append(rec)
    for rec in out:
        g = own.get(rec["shape"])
        n = sum(1 for key in rec if key.startswith("arr_")) + 1
        for k in range(1, n):
            rec[f"late_{k}"] = rec[f"arr_{k}"] - (g * k / n if g else float("nan"))
    for rec in out:
        rec["gpu"] = gpu
    keys = ["shape", "variant", "calls", "max_dur", "period", "gemm", "skew", "gap"] + sorted(
        {k for rec in out for k in rec if k.startswith(("arr_", "late_"))})
    print(" ".join(f"{k:>9}" if i > 1 else f"{k:<22}" for i, k in enumerate(keys)))
    for rec in out:
        print(" ".join((f"{rec.get(k, float('nan')):9.1f}" if isinstance(rec.get(k), float)
                        else f"{str(rec.get(k)):>9}") if i > 1 else f"{str(rec[k]):<22}"
                       for i, k in enumerate(keys)))
    if a.csv:
        with open(a.csv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=["gpu"] + keys)
            w.writeheader()
            for rec in out:
                w.writerow({k: (round(v, 1) if isinstance(v, float) else v) for k, v in rec.items()})


if __name__ == "__main__":
    main()
