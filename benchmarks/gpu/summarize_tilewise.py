#!/usr/bin/env python3
"""Issue 5 summary from overlap-bench's tilewise suite CSV and the tilewise detail CSV.

Per pair shape: T_cuBLAS, T_NCCL, T_sequential (cuBLAS then NCCL), T_ideal =
max(T_cuBLAS, T_NCCL), best decomposed, T_tilewise, overlap captured =
(T_seq - T_tilewise) / (T_seq - T_ideal), tilewise / sequential, the chosen
configuration, the predictor's error on it and on every timed candidate, the best time
per wait mechanism, own GEMM with signalling alone vs without, un-permute and
residual+RMSNorm (natural vs fused). Then the acceptance lines.

  summarize_tilewise.py tilewise.csv tilewise_detail.csv --output summary.csv
"""
import argparse
import csv
import math
import os
import sys
import tempfile
from collections import defaultdict


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
        key = (d["op"], int(d["m"]), int(d["n"]), int(d["k"]))
        if d["record"] == "candidate":
            cand[key].append(d)
        else:
            final[key] = d
    out = []
    for r in rows:
        if r["design"] != "tilewise" or "+" not in r["op"]:
            continue
        op = r["op"]
        shape = (int(r["m"]), int(r["n"]), int(r["k"]))
        coll = op.split("+")[1]
        ts = t[shape]
        cublas = ts.get(("gemm", "cublas", 1))
        nccl = ts.get((coll, "nccl", 1))
        seq = ts.get((op, "sequential", 1))
        tile = float(r["time_us"]) * 1e-6
        dec = min([v for (o, d, c), v in ts.items() if o == op and d == "decomposed"] or [math.nan])
        own = ts.get(("gemm", "own", 1))
        own_sig0 = ts.get(("gemm", "own_signal", 0))
        f = final.get((op,) + shape, {})
        cs = cand.get((op,) + shape, [])
        ideal = max(cublas, nccl) if cublas and nccl else math.nan
        captured = (seq - tile) / (seq - ideal) if seq and ideal == ideal and seq > ideal else math.nan
        errors = [abs(float(c["pred_error"])) for c in cs if c["pred_error"]]
        per_wait = {}
        for c in cs:
            w = c["wait"]
            per_wait[w] = min(per_wait.get(w, math.inf), float(c["measured_s"]))
        pred_final = float(f["predicted_s"]) if f else math.nan
        out.append({
            **tags, "op": op, "m": shape[0], "n": shape[1], "k": shape[2],
            "t_cublas_s": cublas, "t_nccl_s": nccl, "t_sequential_s": seq, "t_ideal_s": ideal,
            "t_decomposed_best_s": dec, "t_tilewise_s": tile,
            "t_torch_symm_mem_s": ts.get((op, "torch_symm_mem", 1), math.nan),
            "comm_over_gemm": nccl / cublas if cublas and nccl else math.nan,
            "overlap_captured": captured, "tilewise_over_sequential": tile / seq if seq else math.nan,
            "partition": f.get("partition", ""), "comm_sms": f.get("comm_sms", ""),
            "wait": f.get("wait", ""), "search": f.get("search", ""),
            "predicted_s": pred_final,
            "pred_error_final": (pred_final - tile) / tile if f else math.nan,
            "pred_abs_error_mean_candidates": sum(errors) / len(errors) if errors else math.nan,
            "candidates": len(cs),
            "best_kernel_wait_s": per_wait.get("kernel", math.nan),
            "best_memop_wait_s": per_wait.get("stream_memop", math.nan),
            "t_own_s": own, "t_own_signal_all_sms_s": own_sig0,
            "signal_slowdown": own_sig0 / own - 1 if own and own_sig0 else math.nan,
            "t_unpermute_s": ts.get(("unpermute", "tilewise", 1)),
            "t_rmsnorm_natural_s": ts.get(("residual_rmsnorm", "natural", 1)),
            "t_rmsnorm_fused_s": ts.get(("residual_rmsnorm", "tilewise_fused", 1)),
            "bit_mismatches": f.get("bit_mismatches", ""), "fused_mismatches": f.get("fused_mismatches", ""),
            "wrong": r["wrong"],
        })
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
    print(f"{'op':20} {'shape':18} {'cuBLAS':>7} {'NCCL':>7} {'seq':>7} {'ideal':>7} {'decomp':>7} "
          f"{'tile':>7} {'capt':>6} {'t/seq':>6} {'pred%':>6} {'sig%':>6} {'part':>14} s  wait   bits")
    for o in out:
        print(f"{o['op']:20} {o['m']}x{o['n']}x{o['k']:<7} {ms(o['t_cublas_s'])} {ms(o['t_nccl_s'])} "
              f"{ms(o['t_sequential_s'])} {ms(o['t_ideal_s'])} {ms(o['t_decomposed_best_s'])} "
              f"{ms(o['t_tilewise_s'])} {o['overlap_captured']:6.2f} {o['tilewise_over_sequential']:6.3f} "
              f"{100 * o['pred_error_final']:6.1f} {100 * o['signal_slowdown']:6.2f} {o['partition'][:14]:>14} "
              f"{o['comm_sms']:>2} {o['wait'][:6]:6} {o['bit_mismatches']}")
    for coll in ("allreduce", "reducescatter", "alltoall"):
        sel = [o for o in out if o["op"].endswith(coll) and o["comm_over_gemm"] >= 0.2]
        caps = [o["overlap_captured"] for o in sel]
        if caps:
            geo = math.exp(sum(math.log(c) for c in caps) / len(caps)) if all(c > 0 for c in caps) else math.nan
            print(f"{coll}: shapes with T_comm >= 20% T_GEMM: {len(caps)}, overlap captured geo-mean "
                  f"{geo:.3f}, arithmetic {sum(caps) / len(caps):.3f}, min {min(caps):.3f}")
    worst = max((o["tilewise_over_sequential"] for o in out), default=math.nan)
    print(f"worst tilewise / sequential: {worst:.3f} (bar: <= 1.02)")
    errs = [abs(o["pred_error_final"]) for o in out if o["pred_error_final"] == o["pred_error_final"]]
    if errs:
        print(f"predictor |error| on the chosen configs: mean {100 * sum(errs) / len(errs):.1f}%, "
              f"max {100 * max(errs):.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
