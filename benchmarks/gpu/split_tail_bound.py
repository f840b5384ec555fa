#!/usr/bin/env python3
"""allreduce_tail_bound.py's lower bound on the 2-rank copy-engine all-reduce, from one
overlap-bench run's own rows, for the unsplit GEMM and for the GEMM with its last wave split.

Per shape, as allreduce_tail_bound.py: T >= max(GEMM * reduce + X(last wave's own bytes), link),
with
  * GEMM: own_signal_ce_tw_loop (the chosen configuration's GEMM with its signals, in the
    final loop beside sequential and ideal);
  * reduce: own_owner_reduce_pf / own from owner-epilogue-bench (REDUCE.csv, one GPU);
  * X(bytes): this run's peer_copy/copy_engine curve (both ranks at once), linear between
    points; link: X(M*N*2).
With the last wave split in S parts (split_tail_first's tail, consecutive parts on the CTAs of
one sub-wave), only the tiles finished in the last sub-wave complete at the GEMM's end:
ceil(units / CTAs) sub-waves, the last holding units - (sub-waves - 1) * CTAs parts, i.e. that
many / S tiles; the GEMM is scaled by own-gemm-bench's own_v2k<S> / own_v2 (GEMM.csv).
Captured at the bound uses the same loop's sequential and ideal; geometric means over the shapes
with collective >= 20 % of the GEMM (the bar's set).
  split_tail_bound.py BENCH.csv REDUCE.csv GEMM.csv [--split 2] [--sms 132]
"""
import argparse
import csv
import math
from collections import defaultdict

# The parent bound's tile, interpolation and mean, so both bounds compute them alike.
from allreduce_tail_bound import ELEMENT_BYTES, TILE_M, TILE_N, geomean, interpolate


def read(path):
    with open(path, newline="") as f:
        return [r for r in csv.DictReader(f) if r.get("gpu") and r["gpu"] != "gpu"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("bench")
    ap.add_argument("reduce")
    ap.add_argument("gemm")
    ap.add_argument("--split", type=int, default=2)
    ap.add_argument("--sms", type=int, default=132)
    a = ap.parse_args()
    rows = read(a.bench)
    curve = sorted((int(r["bytes"]), float(r["time_us"])) for r in rows
                   if r["op"] == "peer_copy" and r["design"] == "copy_engine")
    by = defaultdict(dict)
    for r in rows:
        if r["op"] == "gemm+allreduce":
            by[(int(r["m"]), int(r["n"]), int(r["k"]))][r["design"]] = float(r["time_us"])
    own, red = {}, {}
    for r in read(a.reduce):
        key = (int(r["m"]), int(r["n"]), int(r["k"]))
        if r["design"] == "own":
            own.setdefault(key, []).append(float(r["time_us"]))
        elif r["design"] == "own_owner_reduce_pf":
            red.setdefault(key, []).append(float(r["time_us"]))
    factor = {k: (sum(red[k]) / len(red[k])) / (sum(own[k]) / len(own[k])) for k in red if k in own}
    gemm = defaultdict(dict)
    for r in read(a.gemm):
        gemm[(int(r["m"]), int(r["n"]), int(r["k"]))][r["design"]] = float(r["time_us"])
    print(f"gpu {rows[0]['gpu']}; {a.sms} CTAs, {TILE_M}x{TILE_N} tiles, split {a.split}; µs")
    print(f"{'shape':>16} {'seq':>7} {'ideal':>7} {'gemm':>7} {'reduce':>6} {'tiles_end':>9} "
          f"{'bound':>7} {'cap':>6} | {'gemm_k':>7} {'tiles_end':>9} {'bound_k':>7} {'cap_k':>6} | "
          f"{'tuned':>7} {'cap_meas':>8}")
    caps, caps_k, meas = [], [], []
    for (m, n, k), d in sorted(by.items()):
        seq, ideal = d["sequential_tw_loop"], max(d["op_alone_tw_loop"], d["collective_alone_tw_loop"])
        t_gemm, tuned = d["own_signal_ce_tw_loop"], d["tilewise_tuned"]
        f = factor.get((m, n, k), 1.0)
        tiles = (m // TILE_M) * (n // TILE_N)
        rest = tiles % a.sms
        last = rest if rest else min(tiles, a.sms)
        own_end = min(last, tiles // 2)
        link = interpolate(curve, m * n * ELEMENT_BYTES)
        bound = max(t_gemm * f + interpolate(curve, own_end * TILE_M * TILE_N * ELEMENT_BYTES), link)
        units = last * a.split
        sub_waves = -(-units // a.sms)
        end_tiles = min(-(-(units - (sub_waves - 1) * a.sms) // a.split), tiles // 2)
        g = gemm.get((m, n, k), {})
        scale = g[f"own_v2k{a.split}"] / g["own_v2"] if g.get("own_v2") and g.get(f"own_v2k{a.split}") else float("nan")
        bound_k = max(t_gemm * scale * f + interpolate(curve, end_tiles * TILE_M * TILE_N * ELEMENT_BYTES), link)
        cap = (seq - bound) / (seq - ideal)
        cap_k = (seq - bound_k) / (seq - ideal)
        cap_m = (seq - tuned) / (seq - ideal)
        if d["collective_alone_tw_loop"] >= 0.2 * d["op_alone_tw_loop"]:
            caps.append(cap)
            meas.append(cap_m)
            if not math.isnan(cap_k):
                caps_k.append(cap_k)
        print(f"{m:>5}x{n}x{k:<5} {seq:7.1f} {ideal:7.1f} {t_gemm:7.1f} {f:6.3f} {own_end:9d} "
              f"{bound:7.1f} {cap:6.3f} | {t_gemm * scale:7.1f} {end_tiles:9d} {bound_k:7.1f} "
              f"{cap_k:6.3f} | {tuned:7.1f} {cap_m:8.3f}")
    print(f"geo-mean captured: at the unsplit bound {geomean(caps):.3f}, at the split-{a.split} bound "
          f"{geomean(caps_k):.3f}, measured (tuned) {geomean(meas):.3f} over {len(caps)} shapes")


if __name__ == "__main__":
    main()
