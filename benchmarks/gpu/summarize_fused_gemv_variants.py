#!/usr/bin/env python3
"""The fused GEMV + AllReduce bench's variants, per round: tokens and shape, the committed
fused kernel and each variant against the three bars at tokens <= 16 (>= 2 x PyTorch
sequential, >= 1.25 x cuBLAS + NCCL, at or ahead of PyTorch symm-mem one-shot), and each
variant against the committed kernel in the same loop. Reads fused_tp2_r<R>.csv and
torch_tp2_r<R>.csv (PyTorch of the same round) in the folder given; writes summary.csv
there and prints a table. With trace_tp2.rank*.csv present, also the GEMV's uneven end per
design (trace.txt).

  python3 benchmarks/gpu/summarize_fused_gemv_variants.py RUN_DIR --designs fused,VARIANT,...
"""
import collections
import csv
import glob
import os
import statistics as st
import sys

if len(sys.argv) != 4 or sys.argv[2] != "--designs":
    sys.exit("usage: summarize_fused_gemv_variants.py RUN_DIR --designs fused,VARIANT,...")
run = sys.argv[1]
SHAPES = {(8192, 8192): "70B o_proj", (8192, 28672): "70B down_proj",
          (16384, 16384): "405B o_proj", (16384, 53248): "405B down_proj"}
FUSED = sys.argv[3].split(",")
if FUSED[0] != "fused":
    sys.exit("summarize_fused_gemv_variants.py: --designs: expected the committed kernel, fused, first")
WIDTH = max(17, max(len(d) for d in FUSED))


def load(path):
    rows = {}
    for r in csv.DictReader(open(path)):
        key = (int(r["m"]), int(r["n"]), int(r["k"]) * int(r["world"]))
        rows.setdefault(key, {})[r["design"]] = r
    return rows


out = open(os.path.join(run, "summary.csv"), "w")
out.write("round,tokens,n,k_full,projection,design,k_splits,time_us,cublas_nccl_us,torch_seq_us,"
          "torch_symm_us,x_torch_seq,x_cublas_nccl,x_symm,vs_fused,wrong,gpu\n")
passes = collections.defaultdict(lambda: [0, 0, 0, 0])
rounds = sorted(int(p.rsplit("_r", 1)[1][:-4]) for p in glob.glob(os.path.join(run, "fused_tp2_r*.csv")))
for rnd in rounds:
    ours = load(os.path.join(run, f"fused_tp2_r{rnd}.csv"))
    tp = os.path.join(run, f"torch_tp2_r{rnd}.csv")
    if not os.path.exists(tp):
        tp = os.path.join(run, "torch_tp2_r1.csv")
    theirs = load(tp) if os.path.exists(tp) else {}
    print(f"round {rnd}: tokens projection | design split us | x_torch_seq x_cublas_nccl x_symm | vs fused")
    for key in sorted(ours, key=lambda k: (k[0], list(SHAPES).index(k[1:]) if k[1:] in SHAPES else 9)):
        v, t = ours[key], theirs.get(key, {})
        seq = float(v["sequential"]["time_us"])
        tseq = float(t["torch_sequential"]["time_us"]) if "torch_sequential" in t else float("nan")
        tsym = float(t["torch_symm_mem"]["time_us"]) if "torch_symm_mem" in t else float("nan")
        base = float(v["fused"]["time_us"])
        for d in FUSED:
            if d not in v:
                continue
            f = float(v[d]["time_us"])
            ratios = (tseq / f, seq / f, tsym / f)
            name = SHAPES.get(key[1:], f"{key[1]}x{key[2]}")
            out.write(",".join(str(x) for x in [rnd, key[0], key[1], key[2], name, d, v[d]["chunks"],
                                                f"{f:.2f}", f"{seq:.2f}", f"{tseq:.2f}", f"{tsym:.2f}"]
                               + [f"{r:.3f}" for r in ratios] + [f"{f / base:.4f}", v[d]["wrong"], v[d]["gpu"]]) + "\n")
            print(f"  {key[0]:3} {name:15} | {d:{WIDTH}} {v[d]['chunks']:>2} {f:7.1f} | "
                  f"{ratios[0]:5.2f} {ratios[1]:5.2f} {ratios[2]:5.2f} | {f / base:6.3f}  wrong {v[d]['wrong']}")
            if key[0] <= 16:
                p = passes[(rnd, d)]
                p[0] += ratios[0] >= 2.0
                p[1] += ratios[1] >= 1.25
                p[2] += ratios[2] >= 1.0
                p[3] += 1
out.close()
for (rnd, d), p in sorted(passes.items()):
    print(f"round {rnd} {d:{WIDTH}}: of {p[3]} cases at <= 16 tokens: >= 2 x PyTorch seq {p[0]}, "
          f">= 1.25 x cuBLAS+NCCL {p[1]}, >= symm-mem {p[2]}")

# Per-CTA traces: per design and case, medians over the calls of the GEMV's end on the later
# rank: p50 and last CTA's last unit pushed after the first CTA's start, the spread between
# them (the uneven end), and the event-timed call.
first = os.path.join(run, "trace_tp2.rank0.csv")
if os.path.exists(first):
    calls = collections.defaultdict(lambda: collections.defaultdict(list))
    for r in range(2):
        for row in csv.reader(open(first.replace(".rank0.", f".rank{r}."))):
            calls[(row[0], int(row[1]), int(row[2]), int(row[3]), int(row[4]))][r].append(
                [int(x) for x in row[6:11]])
    per = collections.defaultdict(list)
    for key, ranks in calls.items():
        p50 = last = 0.0
        for rows in ranks.values():
            start = min(x[0] for x in rows)
            ends = sorted(x[1] - start for x in rows)
            p50, last = max(p50, st.median(ends)), max(last, ends[-1])
        event = max(rows[0][4] for rows in ranks.values())
        per[key[:4]].append((event / 1e3, p50 / 1e3, last / 1e3))
    with open(os.path.join(run, "trace.txt"), "w") as f:
        line = "design tokens n k_shard | event_us gemv_p50_us gemv_last_us uneven_end_us (medians over calls)"
        print(line)
        f.write(line + "\n")
        for key in sorted(per, key=lambda k: (k[1], k[2], k[3], k[0])):
            e, p, l = (st.median(x[i] for x in per[key]) for i in range(3))
            line = f"  {key[0]:17} {key[1]:3} {key[2]:6} {key[3]:6} | {e:7.1f} {p:7.1f} {l:7.1f} {l - p:5.2f}"
            print(line)
            f.write(line + "\n")
