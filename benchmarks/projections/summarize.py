#!/usr/bin/env python3
"""Speedup of each overlap design over sequential, per projection JSON
(overlapsim simulate --design all --format json), as a Markdown table. A JSON of one design
(e.g. --design tilewise --tilewise-transport copy_engine) is compared with the sequential
step of the --design all file of the same workload among the arguments.

    python3 benchmarks/projections/summarize.py benchmarks/projections/*.json
"""
import json
import sys


def main(paths):
    designs = ["sequential", "decomposed", "tilewise", "fused", "shaped", "best"]
    runs = []
    for path in paths:
        with open(path) as f:
            runs.append((path, json.load(f)))
    sequential = {}
    for _, j in runs:
        for d in j["designs"]:
            if d["design"] == "sequential":
                sequential[j["workload"]] = d["step_time_s"]
    print("| workload | sequential step | " + " | ".join(designs[1:]) + " |")
    print("| --- | --- | " + " | ".join("---" for _ in designs[1:]) + " |")
    for path, j in runs:
        by = {d["design"]: d for d in j["designs"]}
        seq = sequential.get(j["workload"])
        if seq is None:
            continue
        cells = []
        for d in designs[1:]:
            r = by.get(d)
            if r is None:
                cells.append("")
                continue
            speedup = seq / r["step_time_s"]
            if d == "best":
                note = f" ({r.get('best_basis', '')})" if r.get("best_basis") else ""
            else:
                note = "" if r.get("pairs_overlapped") else " (no pair applies)"
            cells.append(f"{speedup:.3f}x ({100 * (r['step_time_s'] / seq - 1):+.1f}% step time){note}")
        label = j["workload"] if "sequential" in by else f"{j['workload']} ({path.split('/')[-1]})"
        print(f"| {label} ({j['gpus']} GPUs) | {seq * 1e3:.3f} ms | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main(sys.argv[1:])
