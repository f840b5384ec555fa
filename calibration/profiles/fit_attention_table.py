#!/usr/bin/env python3
"""Build a profile's compute.attention_table from benchmarks/peers/attention_probe.py rows and
check how well it predicts rows it was not built from.

The table holds, per head dimension and causal sequence length, the efficiency (fraction of
the bf16 peak) of one backend's fused attention: forward over 2 s^2 d FLOPs per (batch, head),
backward over 2.5x that (the kernel recomputes the scores; FlashAttention-2's count), the
backward's time being forward+backward minus forward. The simulator interpolates it linearly
in the head dimension and in log(sequence) (sim/profile/attention_table.hpp).

  fit_attention_table.py PROBE.csv [--backend cudnn] [--peak 989.5e12] [--check OTHER.csv ...]
                         [--occupancy HEADS.csv]

--occupancy takes a probe run with --heads-list (batch 1, few heads): each row's efficiency
over the grid's at its head dimension and sequence is how much a call with that few query
tiles (heads x ceil(s / 128)) loses; the medians per query-tile count become
occupancy_forward / occupancy_backward ([[query tiles, factor], ...], factors capped at 1 and
made non-decreasing), which the simulator multiplies into the grid's efficiency. Only rows of
the head dimension whose grid rows all ran the same number of query tiles are used (128: 32
heads x 16,384 tokens / 128 = 4,096 tiles at every sequence), so the factor is 1 there by
construction. Rows whose
forward the grid puts under --min-us (default 50 us) are left out: there the host's work per
call (about 40 us through PyTorch's SDPA), not the GPU, sets the time even back to back.

Prints the YAML block (head_dims, seq_lens, forward, backward) and then, as comments:
  - a cross-check: the grid rebuilt without every other inner head dimension and sequence
    length, predicting the rows left out (|error| of time, median and max), and its median
    as the table's `fit_error` line (the error the simulator's band gives attention ops);
  - for each --check file (other widths and token counts, the same backend), the full
    table's prediction of each row's forward and backward time.
"""
import argparse
import csv
import math
import statistics
import sys


def rows_of(path, backend):
    with open(path) as f:
        return [r for r in csv.DictReader(f) if r["backend"] == backend and r["wrong"] == "0"]


def efficiencies(r, peak):
    flops = float(r["fwd_flops"])
    t_fwd = float(r["fwd_us"]) * 1e-6
    t_bwd = float(r["fwdbwd_us"]) * 1e-6 - t_fwd
    return flops / t_fwd / peak, 2.5 * flops / t_bwd / peak


def build(rows, peak, head_dims=None, seqs=None):
    cells = {}
    for r in rows:
        d, s = int(r["head_dim"]), int(r["seq"])
        if (head_dims is None or d in head_dims) and (seqs is None or s in seqs):
            cells[(d, s)] = efficiencies(r, peak)
    dims = sorted({d for d, _ in cells})
    lens = sorted({s for _, s in cells})
    missing = [(d, s) for d in dims for s in lens if (d, s) not in cells]
    if missing:
        sys.exit(f"fit_attention_table: no row for head dims / sequences {missing}")
    return dims, lens, cells


def interpolate(dims, lens, cells, which, d, s):
    def pos(axis, x, log):
        if len(axis) == 1 or x <= axis[0]:
            return 0, 0.0
        if x >= axis[-1]:
            return len(axis) - 1, 0.0
        hi = next(i for i, a in enumerate(axis) if a > x)
        lo = hi - 1
        w = (math.log(x / axis[lo]) / math.log(axis[hi] / axis[lo]) if log
             else (x - axis[lo]) / (axis[hi] - axis[lo]))
        return lo, w

    i, wd = pos(dims, d, False)
    j, ws = pos(lens, s, True)

    def at(a, b):
        return cells[(dims[min(a, len(dims) - 1)], lens[min(b, len(lens) - 1)])][which]

    lo = at(i, j) * (1 - ws) + at(i, j + 1) * ws
    hi = at(i + 1, j) * (1 - ws) + at(i + 1, j + 1) * ws
    return lo * (1 - wd) + hi * wd


def errors(rows, peak, dims, lens, cells):
    out = []
    for r in rows:
        d, s = int(r["head_dim"]), int(r["seq"])
        measured = efficiencies(r, peak)
        for which in (0, 1):
            predicted = interpolate(dims, lens, cells, which, d, s)
            # time error = measured efficiency / predicted efficiency - 1
            out.append((r, which, measured[which] / predicted - 1))
    return out


def summary(errs):
    a = [abs(e) for _, _, e in errs]
    return f"median {100 * statistics.median(a):.1f} %, max {100 * max(a):.1f} % over {len(a)}"


def query_tiles(r):
    return int(r["batch"]) * int(r["heads"]) * math.ceil(int(r["seq"]) / 128)


def occupancy(rows, peak, dims, lens, cells, grid_tiles, min_s):
    by_tiles = {}
    kept = []
    for r in rows:
        d, s = int(r["head_dim"]), int(r["seq"])
        grid_fwd_s = float(r["fwd_flops"]) / (peak * interpolate(dims, lens, cells, 0, d, s))
        if d != 128 or grid_fwd_s < min_s:
            continue
        kept.append(r)
        measured = efficiencies(r, peak)
        ratio = [measured[w] / interpolate(dims, lens, cells, w, d, s) for w in (0, 1)]
        by_tiles.setdefault(query_tiles(r), []).append(ratio)
    for which, name in ((0, "occupancy_forward"), (1, "occupancy_backward")):
        points, best = [], 0.0
        for tiles in sorted(by_tiles):
            factor = min(1.0, statistics.median(x[which] for x in by_tiles[tiles]))
            best = max(best, factor)  # a call with more tiles never runs less of the GPU
            points.append((tiles, best))
        # Keep the points up to the first that reaches 1 (the simulator holds the last
        # factor beyond it); if none does, end at the grid's largest tile count, where the
        # grid itself was measured: factor 1 by definition.
        cut = next((i for i, (_, f) in enumerate(points) if f >= 1.0), None)
        if cut is not None:
            points = points[:cut + 1]
        elif grid_tiles > points[-1][0]:
            points.append((grid_tiles, 1.0))
        else:
            points[-1] = (points[-1][0], 1.0)
        print(f"{name}: [" + ", ".join(f"[{t}, {f:.3f}]" for t, f in points) + "]")
    print(f"# occupancy rows kept ({len(kept)} of {len(rows)}; query tiles, head dim, seq: "
          "forward, backward efficiency / grid's):")
    for r in sorted(kept, key=query_tiles):
        measured = efficiencies(r, peak)
        d, s = int(r["head_dim"]), int(r["seq"])
        print(f"#   {query_tiles(r):6d} tiles, d {d}, s {s}: "
              + ", ".join(f"{measured[w] / interpolate(dims, lens, cells, w, d, s):.3f}"
                          for w in (0, 1)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("probe")
    ap.add_argument("--backend", default="cudnn")
    ap.add_argument("--peak", type=float, default=989.5e12, help="bf16 dense peak, FLOP/s")
    ap.add_argument("--check", nargs="*", default=[])
    ap.add_argument("--occupancy", default="")
    ap.add_argument("--min-us", type=float, default=50.0)
    args = ap.parse_args()

    rows = rows_of(args.probe, args.backend)
    dims, lens, cells = build(rows, args.peak)
    fmt = lambda xs: "[" + ", ".join(f"{x:.3f}" for x in xs) + "]"
    print(f"head_dims: [{', '.join(str(d) for d in dims)}]")
    print(f"seq_lens: [{', '.join(str(s) for s in lens)}]")
    for which, name in ((0, "forward"), (1, "backward")):
        grid = ",\n  ".join(fmt([cells[(d, s)][which] for s in lens]) for d in dims)
        print(f"{name}: [{grid}]")

    if args.occupancy:
        occupancy(rows_of(args.occupancy, args.backend), args.peak, dims, lens, cells,
                  max(query_tiles(r) for r in rows if int(r["head_dim"]) == 128),
                  args.min_us * 1e-6)

    keep_d = set(dims[::2]) | {dims[-1]}
    keep_s = set(lens[::2]) | {lens[-1]}
    sub_dims, sub_lens, sub_cells = build(rows, args.peak, keep_d, keep_s)
    left_out = [r for r in rows
                if int(r["head_dim"]) not in keep_d or int(r["seq"]) not in keep_s]
    errs = errors(left_out, args.peak, sub_dims, sub_lens, sub_cells)
    print(f"# cross-check, grid of head dims {sub_dims} x sequences {sub_lens} predicting the "
          f"other {len(left_out)} rows' times: {summary(errs)}")
    # The table's error for the simulator's uncertainty band (the profile's fit_error): the
    # cross-check's median, a held-out figure and so no smaller than the in-sample one.
    print(f"fit_error: {statistics.median(abs(e) for _, _, e in errs):.3f}")
    for path in args.check:
        errs = errors(rows_of(path, args.backend), args.peak, dims, lens, cells)
        print(f"# {path}: {summary(errs)}")
        for r, which, e in errs:
            print(f"#   {r['batch']} x {r['heads']} heads, seq {r['seq']}, d {r['head_dim']}, "
                  f"{'backward' if which else 'forward'}: {100 * e:+.1f} %")


if __name__ == "__main__":
    main()
