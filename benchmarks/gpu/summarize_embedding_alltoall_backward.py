#!/usr/bin/env python3
"""Summary of an embedding all-to-all backward run (run_embedding_alltoall_backward.sh).

Reads every *_w*.csv in RUN_DIR (embedding-alltoall-bench --passes backward and the
PyTorch peer), writes RUN_DIR/summary.csv and prints a table: per world, local batch and
lookups per sample, the fused time against our sequential design and PyTorch's, the
exchange's share of the backward compute (NCCL's exchange alone over our expansion
alone), and the bar: fused >= 1.2x our sequential where that share is >= 0.2.

  python3 benchmarks/gpu/summarize_embedding_alltoall_backward.py RUN_DIR
"""
import csv
import glob
import math
import os
import sys

COLS = ["alltoall+embedding_bag_backward/fused", "alltoall+embedding_bag_backward/sequential",
        "alltoall+embedding_bag_backward/torch_sequential", "embedding_bag_backward/own",
        "alltoall_backward/nccl", "embedding_bag_backward/torch", "alltoall_backward/torch_nccl",
        "alltoall+embedding_bag_backward/fused_b2b",
        "alltoall+embedding_bag_backward/sequential_b2b"]


def main(run):
    rows, gpus = {}, {}
    for path in sorted(glob.glob(os.path.join(run, "*_w*.csv"))):
        with open(path) as f:
            for r in csv.DictReader(f):
                try:
                    key = (int(r["world"]), int(r["m"]), int(r["k"]))
                    rows.setdefault(key, {})[f'{r["op"]}/{r["design"]}'] = (
                        float(r["time_us"]), int(r["wrong"]))
                    gpus.setdefault(key, set()).add(r["gpu"])
                except (KeyError, ValueError):
                    pass
    nan = float("nan")
    bar = []
    with open(os.path.join(run, "summary.csv"), "w") as out:
        out.write(",".join(["gpu", "world", "local_batch", "lookups_per_sample"] +
                           [c.replace("+", "_").replace("/", "_") + "_us" for c in COLS] +
                           ["a2a_over_backward", "seq_over_fused", "torch_over_fused",
                            "seq_b2b_over_fused_b2b", "wrong_fused", "wrong_sequential",
                            "wrong_torch"]) + "\n")
        print(f'{"w":>2} {"B":>6} {"k":>4} {"fused":>9} {"seq":>9} {"torch":>9} {"expand":>9} '
              f'{"nccl":>9} {"a2a/bw":>7} {"seq/f":>6} {"tch/f":>6} {"b2b":>6} wrong')
        for key in sorted(rows):
            v = rows[key]
            t = [v.get(c, (nan, 0))[0] for c in COLS]
            fused, seq, tch, expand, a2a = t[0], t[1], t[2], t[3], t[4]
            r = [a2a / expand, seq / fused, tch / fused, t[8] / t[7]]
            wrong = [v.get(COLS[i], (0, 0))[1] for i in (0, 1, 2)]
            gpu = "|".join(sorted(gpus[key]))
            out.write(f"{gpu}," + ",".join(str(x) for x in key) + "," +
                      ",".join(f"{x:.2f}" for x in t) + "," + ",".join(f"{x:.3f}" for x in r) +
                      "," + ",".join(str(x) for x in wrong) + "\n")
            print(f"{key[0]:>2} {key[1]:>6} {key[2]:>4} {fused:9.1f} {seq:9.1f} {tch:9.1f} "
                  f"{expand:9.1f} {a2a:9.1f} {r[0]:7.2f} {r[1]:6.2f} {r[2]:6.2f} {r[3]:6.2f} "
                  f"{wrong}")
            if not math.isnan(r[0]) and r[0] >= 0.2:
                bar.append((key, r[1]))
    print("gpus:", sorted(set().union(*gpus.values())) if gpus else "none")
    if bar:
        ok = sum(1 for _, x in bar if x >= 1.2)
        print(f"bar (exchange >= 20% of the backward): {len(bar)} cases; fused >= 1.2x "
              f"sequential: {ok}; min {min(x for _, x in bar):.2f}")


if __name__ == "__main__":
    main(sys.argv[1])
