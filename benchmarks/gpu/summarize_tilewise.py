#!/usr/bin/env python3
"""Tile-wise overlap summary from overlap-bench's tilewise suite CSV and the tilewise detail CSV.

Per pair shape: T_cuBLAS, T_NCCL, T_sequential (cuBLAS then NCCL, the pair runner's
interleaved loop) and the sequential pair re-timed in the tile-wise loop (same loop as
both transports' chosen configurations), T_ideal = max(T_cuBLAS, T_NCCL), best
decomposed, PyTorch symm_mem, and per transport (nccl: `tilewise` rows, copy_engine:
`tilewise_ce` rows) T, overlap captured = (T_seq - T) / (T_seq - T_ideal) against both
sequential times, T / T_seq, the chosen configuration, the predictor's error; own GEMM
alone vs with signalling (both transports, the copy-engine one also with the other
signal scope: own_signal_ce_sys in helper gemm3's runs, own_signal_ce_gpu since; the scope
the candidates used, the faster of the two, in older runs the system scope: signal_slowdown_ce_chosen) and vs
the previous own GEMM version (v2), all in one interleaved loop; the peer-copy curve; then the acceptance lines.

  summarize_tilewise.py tilewise.csv tilewise_detail.csv --output summary.csv
"""
import argparse
import csv
import math
import os
import sys
import tempfile
from collections import defaultdict


# Pair rows of the copy-engine transport: every design named tilewise_ce*: tilewise_ce,
# tilewise_ce_ep where the all-reduce's phase 2 is done by the epilogue, tilewise_ce_tk where
# the last own group's is done by the tail kernel, and the ring and slab routes
# (tilewise_ce_ring_s4, tilewise_ce_tk_ring_s4, tilewise_ce_ring_s2d, ...); one of them is a
# shape's chosen configuration. A fixed list missed the route variants the tuner picks.
def is_copy_engine(design):
    return design.startswith("tilewise_ce")


def is_tilewise(design):
    return design == "tilewise" or is_copy_engine(design)


def read(path):
    if not path or not os.path.exists(path):
        return []
    with open(path, newline="") as f:
        return [r for r in csv.DictReader(f) if r.get("gpu") and r.get("op")]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("bench_csv")
    ap.add_argument("detail_csv")
    ap.add_argument("--torch", default="", help="PyTorch peers CSV (torch_overlap.py)")
    ap.add_argument("--output", required=True)
    args = ap.parse_args()
    rows = read(args.bench_csv)
    detail = read(args.detail_csv)
    if not rows:
        print("no rows in", args.bench_csv, file=sys.stderr)
        return 1
    t = defaultdict(dict)  # (m,n,k) -> key -> seconds
    tags = {}
    for r in rows:
        shape = (int(r["m"]), int(r["n"]), int(r["k"]))
        s = float(r["time_us"]) * 1e-6
        key = (r["op"], r["design"], int(r["chunks"]))
        t[shape][key] = min(s, t[shape].get(key, math.inf))
        tags = {k: r[k] for k in ("gpu", "driver", "cuda", "nccl", "world")}
    for r in read(args.torch):
        shape = (int(r["m"]), int(r["n"]), int(r["k"]))
        key = (r["op"], r["design"], int(r["chunks"]))
        t[shape][key] = min(float(r["time_us"]) * 1e-6, t[shape].get(key, math.inf))
    cand = defaultdict(list)
    final = {}
    for d in detail:
        transport = d.get("transport") or "nccl"
        key = (transport, d["op"], int(d["m"]), int(d["n"]), int(d["k"]))
        if d["record"] == "candidate":
            cand[key].append(d)
        else:
            final[key] = d

    def nan_if_none(v):
        return math.nan if v is None else v

    def captured(seq, tile, ideal):
        if seq != seq or tile != tile or ideal != ideal or seq <= ideal:
            return math.nan
        return (seq - tile) / (seq - ideal)

    def transport_columns(prefix, transport, op, shape, tile, seq, seq_loop, ideal, ideal_loop):
        f = final.get((transport, op) + shape, {})
        cs = cand.get((transport, op) + shape, [])
        # The ring and slab routes have no predictor: overlap-bench writes predicted_s 0 and
        # pred_error -1 for them, which are not predictions.
        errors = [abs(float(c["pred_error"])) for c in cs
                  if c.get("pred_error") and float(c.get("predicted_s") or 0) > 0]
        pred = float(f["predicted_s"]) if float(f.get("predicted_s") or 0) > 0 else math.nan
        return {
            f"t_{prefix}_s": tile,
            f"captured_{prefix}": captured(seq, tile, ideal),
            f"captured_{prefix}_same_loop": captured(seq_loop, tile, ideal_loop),
            f"{prefix}_over_sequential": tile / seq if seq == seq and seq else math.nan,
            f"{prefix}_over_sequential_same_loop": tile / seq_loop if seq_loop == seq_loop and seq_loop else math.nan,
            f"{prefix}_config": (f"groups/part {f.get('partition', '')}" + (" phase2 epilogue" if f.get("wait") == "epilogue_phase2" else "")
                                 if transport == "copy_engine"
                                 else f"{f.get('partition', '')} s={f.get('comm_sms', '')} {f.get('wait', '')}") if f else "",
            f"{prefix}_predicted_s": pred,
            f"{prefix}_pred_error": (pred - tile) / tile if pred == pred and tile == tile else math.nan,
            f"{prefix}_pred_abs_error_mean_candidates": sum(errors) / len(errors) if errors else math.nan,
            f"{prefix}_candidates": len(cs),
            f"{prefix}_bit_mismatches": f.get("bit_mismatches", ""),
        }

    out = []
    pairs = []
    for r in rows:
        if "+" in r["op"] and is_tilewise(r["design"]):
            key = (r["op"], int(r["m"]), int(r["n"]), int(r["k"]))
            if key not in pairs:
                pairs.append(key)
    for op, m, n, k in pairs:
        shape = (m, n, k)
        coll = op.split("+")[1]
        ts = t[shape]
        cublas = nan_if_none(ts.get(("gemm", "cublas", 1)))
        nccl = nan_if_none(ts.get((coll, "nccl", 1)))
        seq = nan_if_none(ts.get((op, "sequential", 1)))
        seq_loop = nan_if_none(ts.get((op, "sequential_tw_loop", 1)))
        ideal = max(cublas, nccl) if cublas == cublas and nccl == nccl else math.nan
        op_loop = nan_if_none(ts.get((op, "op_alone_tw_loop", 1)))
        coll_loop = nan_if_none(ts.get((op, "collective_alone_tw_loop", 1)))
        ideal_loop = max(op_loop, coll_loop) if op_loop == op_loop and coll_loop == coll_loop else ideal
        tile = min([v for (o, d, c), v in ts.items() if o == op and d == "tilewise"] or [math.nan])
        tile_ce = min([v for (o, d, c), v in ts.items() if o == op and is_copy_engine(d)]
                      or [math.nan])
        dec = min([v for (o, d, c), v in ts.items() if o == op and d == "decomposed"] or [math.nan])
        own = nan_if_none(ts.get(("gemm", "own_interleaved", 0)))
        own_sig = nan_if_none(ts.get(("gemm", "own_signal", 0)))
        own_sig_ce = nan_if_none(ts.get(("gemm", "own_signal_ce", 0)))
        own_sig_ce_sys = nan_if_none(ts.get(("gemm", "own_signal_ce_sys", 0)))
        own_sig_ce_gpu = nan_if_none(ts.get(("gemm", "own_signal_ce_gpu", 0)))
        own_v2 = nan_if_none(ts.get(("gemm", "own_v2_interleaved", 0)))
        # The copy-engine GEMM with its chosen groups, timed in the final loop beside
        # tilewise_ce: what of tilewise_ce is GEMM, what is transport tail.
        own_ce_loop = min([v for (o, d, c), v in ts.items() if o == op and d == "own_signal_ce_tw_loop"]
                          or [math.nan])
        wrong = sum(int(r["wrong"]) for r in rows if r["op"] == op and (int(r["m"]), int(r["n"]), int(r["k"])) == shape
                    and is_tilewise(r["design"]))
        o = {**tags, "op": op, "m": m, "n": n, "k": k,
             "t_cublas_s": cublas, "t_nccl_s": nccl, "t_sequential_s": seq,
             "t_sequential_same_loop_s": seq_loop, "t_ideal_s": ideal,
             "t_op_same_loop_s": op_loop, "t_collective_same_loop_s": coll_loop,
             "t_ideal_same_loop_s": ideal_loop,
             "comm_over_gemm_same_loop": coll_loop / op_loop if op_loop == op_loop and coll_loop == coll_loop else math.nan,
             "comm_over_gemm": nccl / cublas if cublas == cublas and nccl == nccl else math.nan,
             "t_decomposed_best_s": dec,
             "t_torch_symm_mem_s": ts.get((op, "torch_symm_mem", 1), math.nan)}
        o.update(transport_columns("tilewise", "nccl", op, shape, tile, seq, seq_loop, ideal, ideal_loop))
        o.update(transport_columns("tilewise_ce", "copy_engine", op, shape, tile_ce, seq, seq_loop, ideal,
                                   ideal_loop))
        o.update({
            "t_own_interleaved_s": own, "t_own_signal_s": own_sig, "t_own_signal_ce_s": own_sig_ce,
            "signal_slowdown": own_sig / own - 1 if own == own and own_sig == own_sig else math.nan,
            "signal_slowdown_ce": own_sig_ce / own - 1 if own == own and own_sig_ce == own_sig_ce else math.nan,
            "t_own_signal_ce_sys_s": own_sig_ce_sys,
            "signal_slowdown_ce_sys": own_sig_ce_sys / own - 1 if own == own and own_sig_ce_sys == own_sig_ce_sys else math.nan,
            "t_own_signal_ce_gpu_s": own_sig_ce_gpu,
            "signal_slowdown_ce_gpu": own_sig_ce_gpu / own - 1 if own == own and own_sig_ce_gpu == own_sig_ce_gpu else math.nan,
            # The runner gives the copy-engine candidates the faster of the two scopes of
            # this loop (older runs: the system scope): that scope's slowdown.
            "signal_slowdown_ce_chosen": (min(own_sig_ce, own_sig_ce_gpu) / own - 1
                                          if own == own and own_sig_ce == own_sig_ce and own_sig_ce_gpu == own_sig_ce_gpu
                                          else math.nan),
            "t_own_v2_interleaved_s": own_v2,
            "own_over_v2": own / own_v2 if own == own and own_v2 == own_v2 else math.nan,
            "own_over_cublas_same_loop": own / op_loop if own == own and op_loop == op_loop else math.nan,
            "t_own_signal_ce_same_loop_s": own_ce_loop,
            "own_signal_ce_over_cublas_same_loop": own_ce_loop / op_loop if own_ce_loop == own_ce_loop and op_loop == op_loop else math.nan,
            "tilewise_ce_tail_same_loop_s": tile_ce - own_ce_loop if own_ce_loop == own_ce_loop and tile_ce == tile_ce else math.nan,
            "t_unpermute_s": ts.get(("unpermute", "tilewise", 1), math.nan),
            "t_rmsnorm_natural_s": ts.get(("residual_rmsnorm", "natural", 1), math.nan),
            "t_rmsnorm_fused_s": ts.get(("residual_rmsnorm", "tilewise_fused", 1), math.nan),
            "wrong": wrong,
        })
        out.append(o)
    copy_rows = sorted((int(r["bytes"]), float(r["time_us"])) for r in rows
                       if r["op"] == "peer_copy" and r["design"] == "copy_engine")
    fields = list(out[0].keys()) if out else ["gpu"]
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(args.output)) or ".")
    with os.fdopen(fd, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=fields)
        w.writeheader()
        for o in out:
            w.writerow({k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in o.items()})
    os.replace(tmp, args.output)

    def ms(v):
        return f"{v * 1e3:7.3f}" if isinstance(v, float) and v == v else "      -"

    def f2(v):
        return f"{v:6.2f}" if isinstance(v, float) and v == v else "     -"

    for b, us in copy_rows:
        print(f"peer copy {b / 2**20:8.2f} MiB: {us:9.1f} us  {b / us / 1e3:7.1f} GB/s (both ranks at once)")
    print(f"{'op':20} {'shape':18} {'cuBLAS':>7} {'NCCL':>7} {'seq':>7} {'seqL':>7} {'ideal':>7} {'decomp':>7} "
          f"{'torch':>7} {'tw':>7} {'capt':>6} {'tw_ce':>7} {'capt':>6} {'captL':>6} {'ce/sL':>6} {'pred%':>6} "
          f"{'sig%':>6} {'sigce%':>6} cfg_ce bits")
    for o in out:
        print(f"{o['op']:20} {o['m']}x{o['n']}x{o['k']:<7} {ms(o['t_cublas_s'])} {ms(o['t_nccl_s'])} "
              f"{ms(o['t_sequential_s'])} {ms(o['t_sequential_same_loop_s'])} {ms(o['t_ideal_s'])} "
              f"{ms(o['t_decomposed_best_s'])} {ms(o['t_torch_symm_mem_s'])} {ms(o['t_tilewise_s'])} "
              f"{f2(o['captured_tilewise'])} {ms(o['t_tilewise_ce_s'])} {f2(o['captured_tilewise_ce'])} "
              f"{f2(o['captured_tilewise_ce_same_loop'])} {f2(o['tilewise_ce_over_sequential_same_loop'])} "
              f"{f2(100 * o['tilewise_ce_pred_error'])} {f2(100 * o['signal_slowdown'])} "
              f"{f2(100 * o['signal_slowdown_ce'])} {o['tilewise_ce_config'].replace('groups/part ', '').replace(' phase2 epilogue', 'e'):>6} "
              f"{o['tilewise_bit_mismatches']}/{o['tilewise_ce_bit_mismatches']}")
    for prefix in ("tilewise", "tilewise_ce"):
        for coll in ("allreduce", "reducescatter", "alltoall"):
            for loop in ("", "_same_loop"):
                sel = [o for o in out if o["op"].endswith(coll) and o["comm_over_gemm"] >= 0.2
                       and o[f"captured_{prefix}{loop}"] == o[f"captured_{prefix}{loop}"]]
                caps = [o[f"captured_{prefix}{loop}"] for o in sel]
                if caps:
                    geo = math.exp(sum(math.log(c) for c in caps) / len(caps)) if all(c > 0 for c in caps) else math.nan
                    print(f"{prefix} {coll}{loop}: shapes with T_comm >= 20% T_GEMM: {len(caps)}, captured "
                          f"geo-mean {geo:.3f}, arithmetic {sum(caps) / len(caps):.3f}, min {min(caps):.3f} (bar 0.85)")
        for loop in ("", "_same_loop"):
            ratios = [o[f"{prefix}_over_sequential{loop}"] for o in out if o[f"{prefix}_over_sequential{loop}"] == o[f"{prefix}_over_sequential{loop}"]]
            if ratios:
                print(f"{prefix}{loop}: worst / sequential {max(ratios):.3f}, shapes > 1.02: "
                      f"{sum(1 for x in ratios if x > 1.02)} of {len(ratios)} (bar: none)")
    for o in out:
        if o["op"].endswith("reducescatter") and o["comm_over_gemm"] >= 0.2:
            print(f"acceptance 2 {o['m']}x{o['n']}x{o['k']}: tilewise_ce {ms(o['t_tilewise_ce_s'])} vs decomposed "
                  f"{ms(o['t_decomposed_best_s'])} / torch symm_mem {ms(o['t_torch_symm_mem_s'])}")
    for key in ("signal_slowdown", "signal_slowdown_ce", "signal_slowdown_ce_sys", "signal_slowdown_ce_gpu",
                "signal_slowdown_ce_chosen"):
        v = [o[key] for o in out if o[key] == o[key]]
        if v:
            print(f"acceptance 3 {key} (interleaved): max {100 * max(v):.2f}%, median "
                  f"{100 * sorted(v)[len(v) // 2]:.2f}% over {len(v)} shapes (bar <= 2%)")
    seen = set()
    for o in out:
        shape = (o["m"], o["n"], o["k"])
        if shape in seen or o["own_over_v2"] != o["own_over_v2"]:
            continue
        seen.add(shape)
        print(f"own GEMM {o['m']}x{o['n']}x{o['k']}: current / v2 (same loop) {o['own_over_v2']:.3f}")
    for o in out:
        if o["t_own_signal_ce_same_loop_s"] == o["t_own_signal_ce_same_loop_s"]:
            print(f"same loop {o['op']} {o['m']}x{o['n']}x{o['k']}: cuBLAS {ms(o['t_op_same_loop_s'])}, "
                  f"copy-engine GEMM alone {ms(o['t_own_signal_ce_same_loop_s'])} "
                  f"({o['own_signal_ce_over_cublas_same_loop']:.3f} of cuBLAS time), tilewise_ce "
                  f"{ms(o['t_tilewise_ce_s'])}, transport tail {ms(o['tilewise_ce_tail_same_loop_s'])} ms")
    errs = [abs(o["tilewise_ce_pred_error"]) for o in out if o["tilewise_ce_pred_error"] == o["tilewise_ce_pred_error"]]
    if errs:
        print(f"copy_engine predictor |error| on the chosen configs: mean {100 * sum(errs) / len(errs):.1f}%, "
              f"max {100 * max(errs):.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
