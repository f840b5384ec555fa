#!/usr/bin/env python3
"""The slab order of the copy-engine ring all-reduce against the ring without slabs, one
row per pair shape, from overlap-bench's CSV and detail CSV (run_tilewise_slab4.sh).

From the tile-wise runner's final interleaved loop (one clock state): sequential_tw_loop,
op_alone_tw_loop (cuBLAS), collective_alone_tw_loop (NCCL), the tuner's choice
(tilewise_tuned; sequential where the best candidate was not more than 1 % faster in the
search), the chosen copy-engine configuration (its tilewise_ce* row) and the best candidate
of the other slab family (alt_<design>_tw_loop: without slabs where the choice has them,
with where it has none). So "slabs" and "no slabs" below are the best of each family, timed
in the same loop. Captured = (T_seq - T) / (T_seq - T_ideal), T_ideal = max(op alone,
collective alone). From the search (detail.csv): each family's best candidate and its
search time (ring: no slabs; plain and skewed slab orders apart). Decomposed: the pair runner's best chunk count. Geometric means over the shapes
whose collective alone takes at least 20 % of the GEMM alone (non-positive values left out
and counted).

  summarize_slab4.py bench.csv detail.csv --output summary.csv
"""
import argparse
import csv
import os
import re
import sys
from collections import defaultdict

from pair_rows import fastest_us, geo, read_rows as read, write_rows


def slabs_of(design):
    m = re.search(r"_s(\d+)d?(_|$)", design)
    return int(m.group(1)) if m else 1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("bench_csv")
    ap.add_argument("detail_csv")
    ap.add_argument("--output", required=True)
    args = ap.parse_args()
    rows = read(args.bench_csv)
    if not rows:
        print("no rows in", args.bench_csv, file=sys.stderr)
        return 1
    detail = []
    if os.path.exists(args.detail_csv):
        with open(args.detail_csv, newline="") as f:
            detail = [r for r in csv.DictReader(f) if r["record"] == "candidate"]
    by = defaultdict(list)
    for r in rows:
        if r["op"] == "gemm+allreduce":
            by[(int(r["world"]), int(r["m"]), int(r["n"]), int(r["k"]))].append(r)
    out = []
    for key in sorted(by):
        rs = by[key]
        seq, op_, co = (fastest_us(rs, d) for d in
                        ("sequential_tw_loop", "op_alone_tw_loop", "collective_alone_tw_loop"))
        if not (seq and op_ and co):
            continue
        ideal = max(op_, co)
        cap = lambda x: round((seq - x) / (seq - ideal), 4) if x and seq > ideal else None
        chosen = next((r for r in rs if r["design"].startswith("tilewise_ce")), None)
        alt = next((r for r in rs if r["design"].startswith("alt_")), None)
        tuned = next((r for r in rs if r["design"] == "tilewise_tuned"), None)
        fam = {}
        for r in (chosen, alt):
            if r:
                name = r["design"][4:-8] if r["design"].startswith("alt_") else r["design"]
                fam["slabs" if slabs_of(name) > 1 else "ring"] = (name, r["chunks"],
                                                                  float(r["time_us"]))
        search = {}
        for d in detail:
            if (int(d["world"]), int(d["m"]), int(d["n"]), int(d["k"])) != key:
                continue
            f = ("ring" if slabs_of(d["wait"]) == 1 else
                 "skewed" if re.search(r"_s\d+d(_|$)", d["wait"]) else "plain")
            t = 1e6 * float(d["measured_s"])
            if f not in search or t < search[f][2]:
                search[f] = (d["wait"], d["groups"], t)
        tuned_us = float(tuned["time_us"]) if tuned else None
        dec = fastest_us(rs, "decomposed")
        r = dict(world=key[0], op="gemm+allreduce", m=key[1], n=key[2], k=key[3], gpu=rs[0]["gpu"],
                 sequential_us=seq, op_alone_us=op_, collective_alone_us=co, ideal_us=ideal,
                 comm_share=round(co / op_, 3),
                 tuned_choice=("sequential" if tuned and tuned["chunks"] == "0" else
                               (chosen["design"] if chosen else "")) if tuned else "",
                 tuned_us=tuned_us, captured_tuned=cap(tuned_us),
                 tuned_over_sequential=round(tuned_us / seq, 4) if tuned_us else None,
                 decomposed_us=dec,
                 tuned_beats_decomposed=("yes" if dec and tuned_us and tuned_us < dec else "no"))
        for f in ("slabs", "ring"):
            name, groups, t = fam.get(f, ("", "", None))
            r[f + "_design"], r[f + "_groups"], r[f + "_us"] = name, groups, t
            r["captured_" + f] = cap(t)
            r[f + "_over_sequential"] = round(t / seq, 4) if t else None
        for f in ("ring", "plain", "skewed"):
            sname, sgroups, st = search.get(f, ("", "", None))
            r["search_" + f + "_wait"], r["search_" + f + "_groups"], r["search_" + f + "_us"] = (
                sname, sgroups, round(st, 1) if st else None)
        r["slabs_over_ring"] = (round(r["slabs_us"] / r["ring_us"], 4)
                                if r["slabs_us"] and r["ring_us"] else None)
        out.append(r)
    write_rows(args.output, out)
    print("wrote", args.output, len(out), "rows")
    fmt = lambda x: "n/a" if x is None else "%.3f" % x
    for world in sorted({r["world"] for r in out}):
        rs = [r for r in out if r["world"] == world]
        sel = [r for r in rs if r["collective_alone_us"] >= 0.2 * r["op_alone_us"]]
        line = "%d ranks, allreduce: %d shapes, %d with comm >= 20%% of GEMM; captured geo-mean" % (
            world, len(rs), len(sel))
        for c in ("tuned", "slabs", "ring"):
            vals = [r["captured_" + c] for r in sel]
            bad = sum(1 for v in vals if v is None or v <= 0)
            line += " %s %s%s" % (c, fmt(geo(vals)), " (%d left out)" % bad if bad else "")
        worst = max((r["tuned_over_sequential"] or 0) for r in rs)
        dec_ok = sum(r["tuned_beats_decomposed"] == "yes" for r in sel)
        line += "; worst tuned/sequential %.4f; tuned faster than decomposed on %d/%d" % (
            worst, dec_ok, len(sel))
        print(line)
    for r in out:
        print(r["world"], "%dx%dx%d" % (r["m"], r["n"], r["k"]),
              "seq %.1f ideal %.1f" % (r["sequential_us"], r["ideal_us"]),
              "tuned", r["tuned_choice"], r["tuned_us"], "cap", r["captured_tuned"],
              "| slabs", r["slabs_design"], r["slabs_groups"], r["slabs_us"], r["captured_slabs"],
              "| ring", r["ring_design"], r["ring_groups"], r["ring_us"], r["captured_ring"],
              "| slabs/ring", r["slabs_over_ring"], "| dec", r["decomposed_us"],
              "| search ring/plain/skewed", r["search_ring_us"], r["search_plain_us"],
              r["search_skewed_us"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
