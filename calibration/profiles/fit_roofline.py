#!/usr/bin/env python3
"""Fits the efficiency curves of a datasheet profile from a roofline_probe.py CSV.

Prints the YAML fragments (points and fit_error) that datasheet-*.yaml cite. Standard
library only. Usage: python3 fit_roofline.py roofline-h200.csv PEAK_BF16 PEAK_FP8 MEM_BW_Bps

Curve points are the median efficiency of the measured cases within a quarter decade of
each knot (half decades of FLOPs or bytes); the fit error is the relative RMS error of the
fitted curve's predicted time against every measured case it was fitted from.
"""
import csv
import math
import statistics
import sys


def interp(points, x):
    lx = math.log10(x)
    if lx <= math.log10(points[0][0]):
        return points[0][1]
    for (x0, y0), (x1, y1) in zip(points, points[1:]):
        l0, l1 = math.log10(x0), math.log10(x1)
        if lx <= l1:
            return y0 + (y1 - y0) * (lx - l0) / (l1 - l0)
    return points[-1][1]


def fit(samples, knots):
    """samples: (x, efficiency). Returns knots that have data, with median efficiency."""
    points = []
    for knot in knots:
        near = [e for (x, e) in samples if abs(math.log10(x) - math.log10(knot)) <= 0.25]
        if near:
            points.append((knot, round(statistics.median(near), 3)))
    return points


def rel_rms(samples, points):
    errs = [(interp(points, x) - e) / e for (x, e) in samples]  # time error = eff ratio error
    errs = [e / (1 + e) for e in errs]  # t_pred/t_meas - 1 = e_meas/e_pred - 1
    return math.sqrt(sum(e * e for e in errs) / len(errs))


def show(name, over, points, samples):
    print(f"{name}:  # over {over}; fit_error {rel_rms(samples, points):.3f} over {len(samples)} cases")
    print("  points: [" + ", ".join(f"[{x:.0e}, {y}]" for x, y in points) + "]")


def main(path, peak_bf16, peak_fp8, mem_bw):
    rows = list(csv.DictReader(open(path)))
    decades = [10.0 ** (p / 2) for p in range(12, 28)]  # half decades
    gemm = {"bf16": [], "fp8": []}
    for r in rows:
        if r["case"] == "gemm" and int(r["m"]) >= 128:
            peak = peak_bf16 if r["precision"] == "bf16" else peak_fp8
            gemm[r["precision"]].append((float(r["flops"]), float(r["achieved_flops_per_s"]) / peak))
    for prec, samples in gemm.items():
        if samples:
            show(f"gemm {prec}", "flops", fit(samples, decades), samples)

    fwd = {}
    attn_f, attn_b = [], []
    for r in rows:
        key = (r["m"], r["n"], r["k"])
        if r["case"] == "attn_fwd":
            fwd[key] = (float(r["flops"]), float(r["time_s"]))
            attn_f.append((float(r["flops"]), float(r["achieved_flops_per_s"]) / peak_bf16))
        elif r["case"] == "attn_fwdbwd" and key in fwd:
            f_flops, f_t = fwd[key]
            b_flops = 2.5 * f_flops
            b_t = float(r["time_s"]) - f_t
            attn_b.append((b_flops, b_flops / b_t / peak_bf16))
    show("attention forward", "flops", fit(attn_f, decades), attn_f)
    show("attention backward", "flops", fit(attn_b, decades), attn_b)

    mem = [(float(r["bytes"]), float(r["achieved_Bps"]) / mem_bw) for r in rows
           if r["case"] in ("copy", "add") or (r["case"] == "gemm" and int(r["m"]) < 128)]
    show("memory", "bytes", fit(mem, decades), mem)
    emb = [(float(r["bytes"]), float(r["achieved_Bps"]) / mem_bw) for r in rows
           if r["case"] == "embedding"]
    show("embedding", "bytes", fit(emb, decades), emb)
    for r in rows:
        if r["case"].startswith("launch"):
            print(f"{r['case']}: {float(r['time_s']) * 1e6:.2f} us per kernel")


if __name__ == "__main__":
    main(sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]))
