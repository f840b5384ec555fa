#!/usr/bin/env python3
"""Speedup of each overlap design over sequential, per projection JSON
(overlapsim simulate --design all --format json), as a Markdown table.

    python3 benchmarks/projections/summarize.py benchmarks/projections/*.json
"""
import json
import sys


def main(paths):
    designs = ["sequential", "decomposed", "tilewise", "fused", "shaped"]
    print("| workload | sequential step | " + " | ".join(designs[1:]) + " |")
    print("| --- | --- | " + " | ".join("---" for _ in designs[1:]) + " |")
    for path in paths:
        with open(path) as f:
            j = json.load(f)
        by = {d["design"]: d for d in j["designs"]}
        seq = by["sequential"]["step_time_s"]
        cells = []
        for d in designs[1:]:
            r = by[d]
            speedup = seq / r["step_time_s"]
            note = "" if r["pairs_overlapped"] else " (no pair applies)"
            cells.append(f"{speedup:.3f}x ({100 * (r['step_time_s'] / seq - 1):+.1f}% step time){note}")
        print(f"| {j['workload']} ({j['gpus']} GPUs) | {seq * 1e3:.3f} ms | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main(sys.argv[1:])
