#!/usr/bin/env python3
"""Compares fp8_ops_probe.py's measured kernel times with the simulator's memory-bound
model for the same bytes: time = bytes / (memory_bandwidth_Bps x efficiency.memory(bytes))
+ launch_overhead_s (sim/profile/compute_model.cpp; efficiency interpolated linearly in
log10(bytes) and held at the ends, as sim/profile/log_curve.cpp does).

Only the CUDA-graph rows (timing=graph) are compared: they are the GPU's time per kernel
with the gap between kernels, which is what the model's launch term stands for; the
stream rows also carry Python's launch cost. Prints one line per row and the median
|error| per op, as Markdown.

Usage: python3 fp8_ops_compare.py MEASURED.csv PROFILE.yaml [--impl triton]
"""
import argparse
import csv
import math
import re
import statistics

import yaml

UNITS = {"": 1, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "u": 1e-6, "n": 1e-9, "m": 1e-3}


def quantity(v):
    """'3.35TBps' -> 3.35e12, '1.11us' -> 1.11e-6, numbers unchanged."""
    if isinstance(v, (int, float)):
        return float(v)
    m = re.fullmatch(r"\s*([0-9.eE+-]+)\s*([KMGTunm]?)(B|Bps|s|FLOPS)?\s*", str(v))
    if not m:
        raise ValueError(f"cannot read quantity {v!r}")
    return float(m.group(1)) * UNITS[m.group(2)]


def log_curve(points, x):
    if x <= points[0][0]:
        return points[0][1]
    if x >= points[-1][0]:
        return points[-1][1]
    for (x0, y0), (x1, y1) in zip(points, points[1:]):
        if x <= x1:
            f = (math.log10(x) - math.log10(x0)) / (math.log10(x1) - math.log10(x0))
            return y0 + f * (y1 - y0)
    return points[-1][1]


BANDS = ["< 1e7", "1e7 - 1e8", ">= 1e8", "all"]


def band(nbytes):
    """Size bands: launch-dominated, L2-resident in the probe, streaming from HBM."""
    return BANDS[0] if nbytes < 1e7 else BANDS[1] if nbytes < 1e8 else BANDS[2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("measured")
    ap.add_argument("profile")
    ap.add_argument("--impl", default="triton")
    args = ap.parse_args()
    with open(args.profile) as f:
        c = yaml.safe_load(f)["compute"]
    bw = quantity(c["memory_bandwidth_Bps"]["value"])
    launch = quantity(c["launch_overhead_s"]["value"])
    points = [(float(x), float(y)) for x, y in c["efficiency"]["memory"]["points"]]

    errors = {}
    print("| op | rows x cols | bytes | measured us | predicted us | error |")
    print("| --- | --- | --- | --- | --- | --- |")
    with open(args.measured) as f:
        for r in csv.DictReader(f):
            if r["timing"] != "graph" or r["impl"] not in (args.impl, "torch"):
                continue
            if r["impl"] == "torch" and r["op"] != "copy":
                continue
            nbytes = float(r["bytes"])
            if nbytes <= 0:
                continue
            measured = float(r["time_s"])
            predicted = nbytes / (bw * log_curve(points, nbytes)) + launch
            err = predicted / measured - 1
            errors.setdefault((r["op"], band(nbytes)), []).append(err)
            errors.setdefault((r["op"], "all"), []).append(err)
            print(f"| {r['op']} | {r['rows']} x {r['cols']} | {nbytes:.3g} | "
                  f"{measured * 1e6:.2f} | {predicted * 1e6:.2f} | {err * 100:+.0f}% |")
    print()
    print("| op | bytes | rows | median error | median abs error |")
    print("| --- | --- | --- | --- | --- |")
    for (op, size), e in sorted(errors.items(), key=lambda kv: (kv[0][0], BANDS.index(kv[0][1]))):
        print(f"| {op} | {size} | {len(e)} | {statistics.median(e) * 100:+.0f}% | "
              f"{statistics.median(abs(x) for x in e) * 100:.0f}% |")


if __name__ == "__main__":
    main()
