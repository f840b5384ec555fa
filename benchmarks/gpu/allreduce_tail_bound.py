#!/usr/bin/env python3
"""How much of the tile-wise AllReduce's bar 1 the copy-engine design can reach at all.

A lower bound on the tile-wise all-reduce's time from measured parts, per shape:
  * the GEMM: the own GEMM with the copy-engine layout's signals, timed in the same loop as
    sequential and ideal (summary column t_own_signal_ce_same_loop_s), times what the
    reducing epilogue costs it (owner-epilogue-bench: own_owner_reduce_h2 / own, mean over
    the given runs; 1 where a shape was not measured, which only weakens the bound);
  * the tail: the GEMM's last wave finishes all its tiles together at the GEMM's end, and
    with the own part computed last all of them are own tiles whose reduced values the peer
    still needs, so at least that wave's bytes cross the link after the GEMM: the copy
    engines' two-way exchange time for them (tail-exchange-bench copy_engine rows, both GPUs
    sending at once, linear between measured sizes), with no latency beyond the copy's;
  * the link: every rank sends its partial of the peer's part and receives the reduced part
    back, M*N*2 bytes each way over the run, at the same curve.
T >= max(GEMM * reduce + last wave's exchange, link). Captured overlap at that T, with the
same loop's sequential and ideal, is the most this design with this GEMM (128 x 256 tiles,
one tile per CTA and wave) can capture. Printed per shape, with the measured figure and the
geometric means over the shapes where T_comm >= 20 % of T_GEMM (the bar's set).
  allreduce_tail_bound.py SUMMARY.csv EXCHANGE.csv EPILOGUE.csv [EPILOGUE.csv ...]
                          [--sms 132] [--output FILE]
"""
import argparse
import csv
import math
import os
import sys
import tempfile

TILE_M, TILE_N, ELEMENT_BYTES = 128, 256, 2


def read(path):
    with open(path, newline="") as f:
        return [r for r in csv.DictReader(f) if r.get("gpu")]


def exchange_curve(rows):
    points = sorted((int(r["bytes"]), float(r["time_us"]) * 1e-6)
                    for r in rows if r["op"] == "peer_exchange" and r["design"] == "copy_engine")
    if len(points) < 2:
        sys.exit("exchange CSV: needs at least two peer_exchange copy_engine rows")
    return points


def interpolate(points, x):
    if x <= points[0][0]:
        (x0, y0), (x1, y1) = points[0], points[1]
    elif x >= points[-1][0]:
        (x0, y0), (x1, y1) = points[-2], points[-1]
    else:
        i = next(i for i in range(1, len(points)) if points[i][0] >= x)
        (x0, y0), (x1, y1) = points[i - 1], points[i]
    return y0 + (y1 - y0) * (x - x0) / (x1 - x0)


def reduce_factors(paths):
    by_shape = {}
    for path in paths:
        rows = read(path)
        own = {(r["m"], r["n"], r["k"]): float(r["time_us"]) for r in rows if r["design"] == "own"}
        for r in rows:
            key = (r["m"], r["n"], r["k"])
            if r["design"] == "own_owner_reduce_h2" and key in own:
                by_shape.setdefault(key, []).append(float(r["time_us"]) / own[key])
    return {k: sum(v) / len(v) for k, v in by_shape.items()}


def geomean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("summary")
    ap.add_argument("exchange")
    ap.add_argument("epilogue", nargs="+")
    ap.add_argument("--sms", type=int, default=132)
    ap.add_argument("--output")
    a = ap.parse_args()
    curve = exchange_curve(read(a.exchange))
    factors = reduce_factors(a.epilogue)
    lines = []
    say = lines.append
    rows = [r for r in read(a.summary) if r["op"] == "gemm+allreduce"]
    if not rows:
        sys.exit(f"{a.summary}: no gemm+allreduce rows")
    say(f"gpu {rows[0]['gpu']}, driver {rows[0]['driver']}, NCCL {rows[0]['nccl']}; "
        f"{a.sms} CTAs, {TILE_M}x{TILE_N} tiles")
    say(f"{'shape':>18} {'T_seq':>7} {'ideal':>7} {'gemm_ce':>7} {'reduce':>6} "
        f"{'last_MiB':>8} {'X_last':>6} {'link':>7} {'bound':>7} {'measured':>8} "
        f"{'over':>5} {'cap_bound':>9} {'cap_meas':>8}  (times in us)")
    bounded, measured, mixed = [], [], []
    for r in rows:
        m, n, k = int(r["m"]), int(r["n"]), int(r["k"])
        t_seq = float(r["t_sequential_same_loop_s"])
        t_ideal = float(r["t_ideal_same_loop_s"])
        t_gemm = float(r["t_own_signal_ce_same_loop_s"])
        t_meas = float(r["t_tilewise_ce_s"])  # the final loop: the same loop as T_seq
        tiles = (m // TILE_M) * (n // TILE_N)
        waves = -(-tiles // a.sms)
        last_items = tiles - (waves - 1) * a.sms
        part_tiles = tiles // 2
        own_last = min(last_items, part_tiles)
        last_bytes = own_last * TILE_M * TILE_N * ELEMENT_BYTES
        factor = factors.get((str(m), str(n), str(k)), 1.0)
        x_last = interpolate(curve, last_bytes)
        link = interpolate(curve, m * n * ELEMENT_BYTES)
        bound = max(t_gemm * factor + x_last, link)
        cap_bound = (t_seq - bound) / (t_seq - t_ideal)
        cap_meas = float(r["captured_tilewise_ce_same_loop"])
        in_set = float(r["comm_over_gemm_same_loop"]) >= 0.2
        if in_set:
            bounded.append(cap_bound)
            measured.append(cap_meas)
            mixed.append((cap_bound, cap_meas))
        say(f"{m:>5}x{n}x{k:<5} {t_seq*1e6:7.1f} {t_ideal*1e6:7.1f} {t_gemm*1e6:7.1f} "
            f"{factor:6.3f} {last_bytes/2**20:8.2f} {x_last*1e6:6.1f} {link*1e6:7.1f} "
            f"{bound*1e6:7.1f} {t_meas*1e6:8.1f} {(t_meas-bound)*1e6:5.1f} {cap_bound:9.3f} "
            f"{cap_meas:8.3f}{'' if in_set else '  (T_comm < 20 % of T_GEMM: not in the bar)'}")
    say(f"geo-mean over the bar's {len(bounded)} shapes: measured {geomean(measured):.3f}, "
        f"bound {geomean(bounded):.3f}")
    # The bound where the tail decides it (shapes whose measured figure is under their bound
    # by more than 0.1), the measured figure elsewhere: what removing every overhead of the
    # tail alone would give.
    tail_only = [b if b - c > 0.1 else c for b, c in mixed]
    say(f"geo-mean with the tail-limited shapes at their bound and the rest as measured: "
        f"{geomean(tail_only):.3f} (bar 0.85)")
    text = "\n".join(lines) + "\n"
    if a.output:
        d = os.path.dirname(os.path.abspath(a.output))
        fd, tmp = tempfile.mkstemp(dir=d, prefix=".bound")
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, a.output)
    sys.stdout.write(text)


if __name__ == "__main__":
    main()
