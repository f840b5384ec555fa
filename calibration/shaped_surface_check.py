#!/usr/bin/env python3
"""How well the shaped design's GEMM slowdown on fewer SMs matches the shaped kernels' surface.

Reads the shaped runner's surface.csv (cuBLASLt with CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET =
SMs - S against all SMs; one row per grid point, the GEMM's slowdown repeated per point)
and prints, over the distinct (ranks, shape, S > 0) points (each the median of its rows),
the relative error of
  - the wave quantisation the design uses: ceil(tiles / (SMs - S)) / ceil(tiles / SMs), tiles
    of tile_m x tile_n (the profile's shaped.tile_m / tile_n),
  - plain proportion SMs / (SMs - S),
  - the power law (SMs / (SMs - S))^e with e fitted by least squares in log space,
and with --algos (the shaped runner's algos_w*.csv, overlap-bench --shaped-algos: the tile
cuBLASLt chose per shape and S), the wave quantisation with each point's own tiles:
  - the tile chosen at S on both sides: ceil(tiles_S / (SMs - S)) / ceil(tiles_S / SMs),
  - the tiles chosen at S and on all SMs, each wave weighted by its tile's area:
    ceil(tiles_S / (SMs - S)) * area_S / (ceil(tiles_0 / SMs) * area_0).
With --chunks (overlap-bench CSVs holding gemm/cublas_shaped_chunks:s<S> rows: each chunked
plan's k GEMMs alone, benchmarks/gpu/run_shaped_chunk_gemms.sh), the same predictors for
what the simulator's shaped model prices, a chunk of m / k rows on SMs - S against one on
all SMs, over every S > 0 and k, and at the model's own point (S 16, k 4).
Deterministic. docs/designs.md ("The shaped GEMM on fewer SMs") quotes its output.

Usage: calibration/shaped_surface_check.py [SURFACE.csv] [--sms 132] [--tile 128x256]
                                          [--algos ALGOS.csv ...] [--chunks BENCH.csv ...]
"""
import argparse
import collections
import csv
import math
import statistics

p = argparse.ArgumentParser()
p.add_argument("surface", nargs="?", default="benchmarks/results/h100x4/shaped/run2/surface.csv")
p.add_argument("--sms", type=int, default=132)  # H100 SXM (NVIDIA datasheet)
p.add_argument("--tile", default="128x256")
p.add_argument("--algos", nargs="*", default=[])
p.add_argument("--chunks", nargs="*", default=[])
a = p.parse_args()
tm, tn = (int(x) for x in a.tile.split("x"))

by_point = collections.defaultdict(list)
with open(a.surface) as f:
    for r in csv.DictReader(f):
        s = int(float(r["free_sms"]))
        if 0 < s < a.sms:
            key = (r["world"], int(r["m"]), int(r["n"]), int(r["k"]), s)
            by_point[key].append(float(r["gemm_slowdown"]))
points = {k: statistics.median(v) for k, v in by_point.items()}


def report(name, predict):
    errs = [(predict(k) - v) / v for k, v in points.items()]
    rms = math.sqrt(sum(e * e for e in errs) / len(errs))
    print("%-34s RMS %5.1f %%  mean %+5.1f %%  max |err| %5.1f %%" %
          (name, 100 * rms, 100 * sum(errs) / len(errs), 100 * max(abs(e) for e in errs)))


def waves(k):
    _, m, n, _, s = k
    tiles = math.ceil(m / tm) * math.ceil(n / tn)
    return math.ceil(tiles / (a.sms - s)) / math.ceil(tiles / a.sms)


x = {k: math.log(a.sms / (a.sms - k[4])) for k in points}
e = sum(x[k] * math.log(v) for k, v in points.items()) / sum(x[k] ** 2 for k in points)
print("%d points from %s" % (len(points), a.surface))
report("wave quantisation, %dx%d tiles" % (tm, tn), waves)
report("proportion SMs/(SMs-S)", lambda k: a.sms / (a.sms - k[4]))
report("power law, e = %.4g" % e, lambda k: math.exp(e * x[k]))

if a.algos:
    # (world, m, n, k, S) -> (tile_m, tile_n) of the unchunked GEMM: the grid's sequential
    # point for S = 0, the GEMM alone for S > 0.
    chosen = {}
    for path in a.algos:
        with open(path) as f:
            for r in csv.DictReader(f):
                s = int(r["free_sms"])
                if r["chunks"] != "1" or (s == 0) != (r["role"] == "grid"):
                    continue
                chosen[(r["world"], int(r["m"]), int(r["n"]), int(r["k"]), s)] = (
                    int(r["tile_m"]), int(r["tile_n"]))

    def tiles_of(k, s):
        tm_, tn_ = chosen[k[:4] + (s,)]
        return math.ceil(k[1] / tm_) * math.ceil(k[2] / tn_), tm_ * tn_

    def own_tile(k):
        t, _ = tiles_of(k, k[4])
        return math.ceil(t / (a.sms - k[4])) / math.ceil(t / a.sms)

    def own_tiles_area(k):
        t, area = tiles_of(k, k[4])
        t0, area0 = tiles_of(k, 0)
        return math.ceil(t / (a.sms - k[4])) * area / (math.ceil(t0 / a.sms) * area0)

    missing = [k for k in points if k[:4] + (k[4],) not in chosen or k[:4] + (0,) not in chosen]
    if missing:
        print("--algos: no tile for %d points, e.g. %s" % (len(missing), missing[0]))
    else:
        report("wave quantisation, tile chosen at S", own_tile)
        report("same, tiles at S and 0, x area", own_tiles_area)

if a.chunks:
    chunk_s = {}
    for path in a.chunks:
        with open(path) as f:
            for r in csv.DictReader(f):
                if r["op"] == "gemm" and r["design"].startswith("cublas_shaped_chunks:s"):
                    # The file too: the pairs chunk the same GEMM differently (batched or not).
                    key = (path, int(r["m"]), int(r["n"]), int(r["k"]), int(r["chunks"]),
                           int(r["design"].split(":s")[1]))
                    chunk_s[key] = float(r["time_us"])
    chunk_points = {k: v / chunk_s[k[:5] + (0,)] for k, v in chunk_s.items()
                    if k[5] > 0 and k[:5] + (0,) in chunk_s}

    def chunk_waves(k):
        rows = round(k[1] / k[4])
        tiles = math.ceil(rows / tm) * math.ceil(k[2] / tn)
        return math.ceil(tiles / (a.sms - k[5])) / math.ceil(tiles / a.sms)

    def chunk_report(name, sel, predict):
        errs = [(predict(k) - v) / v for k, v in sel.items()]
        rms = math.sqrt(sum(e * e for e in errs) / len(errs))
        print("%-34s RMS %5.1f %%  mean %+5.1f %%  max |err| %5.1f %%  (%d)" %
              (name, 100 * rms, 100 * sum(errs) / len(errs), 100 * max(abs(e) for e in errs),
               len(errs)))

    own = {k: v for k, v in chunk_points.items() if k[4] == 4 and k[5] == 16}
    print("chunk GEMMs: %d points (S > 0, every k) from %s" % (len(chunk_points), " ".join(a.chunks)))
    for name, sel in (("every S and k", chunk_points), ("S 16, k 4", own)):
        if not sel:
            continue
        chunk_report("%s: waves, %dx%d tiles" % (name, tm, tn), sel, chunk_waves)
        chunk_report("%s: proportion" % name, sel, lambda k: a.sms / (a.sms - k[5]))
        chunk_report("%s: power law, e = %.4g" % (name, e), sel,
                     lambda k: (a.sms / (a.sms - k[5])) ** e)
