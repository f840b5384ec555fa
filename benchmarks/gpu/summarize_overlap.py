#!/usr/bin/env python3
"""Per-pair summary of overlap-bench (and torch peer) CSVs: T_op, T_coll, their sum,
T_ideal = max(T_op, T_coll), sequential, the best decomposed k, the torch designs, and
"overlap captured" = (T_seq - T_design) / (T_seq - T_ideal) (papers.md section 5).

  summarize_overlap.py kernels_i.csv [torch.csv ...] [--output summary.csv]
Prints a table; --output writes the summary CSV (atomically).
"""
import argparse
import csv
import os
from collections import defaultdict

COMPUTE_IMPL = {"gemm": "cublas", "gemv": "cublas", "embedding": "own"}


def load(paths):
    rows = []
    for path in paths:
        with open(path) as f:
            rows += [r for r in csv.DictReader(f) if r.get("time_us")]
    return rows


def key(r):
    return (r["dtype"], int(r["m"]), int(r["n"]), int(r["k"]))


def captured(seq, design, ideal):
    if seq is None or design is None or ideal is None or seq - ideal <= 0:
        return ""
    return f"{(seq - design) / (seq - ideal):.2f}"


def fmt(v):
    return "" if v is None else f"{v:.1f}"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("csvs", nargs="+")
    parser.add_argument("--output", default="")
    args = parser.parse_args()
    rows = load(args.csvs)
    by = defaultdict(list)
    for r in rows:
        by[(r["op"], r["design"]) + key(r)].append(r)

    def best(op, design, k):
        cands = by.get((op, design) + k, [])
        if not cands:
            return None, None
        r = min(cands, key=lambda r: float(r["time_us"]))
        return float(r["time_us"]), int(r["chunks"])

    pairs = sorted({(r["op"],) + key(r) for r in rows if "+" in r["op"]})
    header = ["op", "dtype", "m", "n", "k", "op_us", "coll_us", "sum_us", "ideal_us",
              "sequential_us", "seq_over_sum", "decomposed_us", "decomposed_chunks",
              "decomposed_speedup", "decomposed_captured", "torch_sequential_us",
              "torch_chunked_us", "torch_chunked_chunks", "torch_chunked_captured",
              "torch_symm_mem_us", "torch_symm_mem_captured", "wrong_total"]
    out = []
    for op, *k in pairs:
        k = tuple(k)
        first, second = op.split("+")
        compute, coll = (second, first) if first == "allgather" else (first, second)
        t_op, _ = best(compute, COMPUTE_IMPL.get(compute, "cublas"), k)
        t_coll, _ = best(coll, "nccl", k)
        t_seq, _ = best(op, "sequential", k)
        t_dec, k_dec = best(op, "decomposed", k)
        t_tseq, _ = best(op, "torch_sequential", k)
        t_tch, k_tch = best(op, "torch_chunked", k)
        t_sym, _ = best(op, "torch_symm_mem", k)
        ideal = max(t_op, t_coll) if t_op and t_coll else None
        total = t_op + t_coll if t_op and t_coll else None
        wrong = sum(int(r["wrong"]) for r in rows if (r["op"],) + key(r) == (op,) + k)
        out.append([op, *map(str, k), fmt(t_op), fmt(t_coll), fmt(total), fmt(ideal),
                    fmt(t_seq), f"{t_seq / total:.3f}" if t_seq and total else "",
                    fmt(t_dec), "" if k_dec is None else str(k_dec),
                    f"{t_seq / t_dec:.3f}" if t_seq and t_dec else "",
                    captured(t_seq, t_dec, ideal), fmt(t_tseq), fmt(t_tch),
                    "" if k_tch is None else str(k_tch), captured(t_tseq, t_tch, ideal),
                    fmt(t_sym), captured(t_tseq, t_sym, ideal), str(wrong)])
    widths = [max(len(h), *(len(r[i]) for r in out)) if out else len(h)
              for i, h in enumerate(header)]
    print("  ".join(h.rjust(w) for h, w in zip(header, widths)))
    for r in out:
        print("  ".join(v.rjust(w) for v, w in zip(r, widths)))
    # Own GEMM against cuBLAS, where both were measured.
    for r in rows:
        if r["op"] == "gemm" and r["design"] == "own":
            ref, _ = best("gemm", "cublas", key(r))
            if ref:
                print(f"own/cublas gemm {r['m']}x{r['n']}x{r['k']}: "
                      f"{ref / float(r['time_us']):.3f} (own {r['tflops']} TFLOP/s)")
    if args.output:
        tmp = args.output + ".tmp"
        with open(tmp, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(header)
            w.writerows(out)
        os.replace(tmp, args.output)


if __name__ == "__main__":
    main()
