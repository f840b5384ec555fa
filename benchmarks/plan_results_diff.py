#!/usr/bin/env python3
"""How far two `overlapsim plan` results.json files of the same plan differ, point by point
(or two `overlapsim validate-steps --format json` reports, run by run).

Usage: plan_results_diff.py A.json B.json [CSV]

For every configuration both simulated and every design of it: the step time in each, the
relative difference of the step, and the largest difference of a breakdown part (compute,
exposed communication, bubble) or band edge, relative to the step; `wrong` is 1 where either
is above 1e-6 (not the same step). Prints CSV (tag columns
first) and a one-line summary on stderr; with CSV, writes it there (temp file + rename).
Exit 2 with a one-line error when a file cannot be read or the plans differ in their points.
"""
import csv
import io
import json
import os
import sys

PARTS = ("compute_s", "exposed_comm_s", "bubble_s", "band_low_s", "band_high_s")
SAME = 1e-6


def load(path):
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        if "points" in data:
            return {p["key"]: p for p in data["points"] if p.get("runs")}
        # validate-steps: one run of one design per reference run.
        return {r["name"]: {"runs": [{"design": r["design"],
                                      "step_time_s": r["predicted_step_time_s"],
                                      "band_low_s": r["band_low_s"],
                                      "band_high_s": r["band_high_s"]}]}
                for r in data["runs"]}
    except (OSError, ValueError, KeyError, TypeError) as e:
        print(f"plan_results_diff: {path}: cannot read points[].key/runs or runs[] ({e})",
              file=sys.stderr)
        sys.exit(2)


def rel(x, y, scale):
    return abs(x - y) / scale if scale > 0 else abs(x - y)


def main(argv):
    if len(argv) not in (3, 4):
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    a, b = load(argv[1]), load(argv[2])
    if set(a) != set(b):
        print(f"plan_results_diff: {argv[2]}: points differ from {argv[1]} "
              f"({len(set(a) ^ set(b))} configurations in one only)", file=sys.stderr)
        return 2
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(["key", "design", "step_a_s", "step_b_s", "step_rel", "part_rel", "wrong"])
    worst_step = worst_part = 0.0
    rows = 0
    for key in sorted(a):
        runs_b = {r["design"]: r for r in b[key]["runs"]}
        for ra in a[key]["runs"]:
            rb = runs_b.get(ra["design"])
            if rb is None:
                print(f"plan_results_diff: {argv[2]}: {key} has no design {ra['design']}",
                      file=sys.stderr)
                return 2
            step = ra["step_time_s"]
            step_rel = rel(step, rb["step_time_s"], step)
            part_rel = max(rel(ra.get(k, 0.0), rb.get(k, 0.0), step) for k in PARTS)
            worst_step, worst_part = max(worst_step, step_rel), max(worst_part, part_rel)
            w.writerow([key, ra["design"], f"{step:.9g}", f"{rb['step_time_s']:.9g}",
                        f"{step_rel:.3e}", f"{part_rel:.3e}",
                        int(step_rel > SAME or part_rel > SAME)])
            rows += 1
    if len(argv) == 4:
        tmp = argv[3] + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(out.getvalue())
        os.replace(tmp, argv[3])
    else:
        sys.stdout.write(out.getvalue())
    print(f"plan_results_diff: {rows} runs, step within {worst_step:.3e}, "
          f"parts within {worst_part:.3e} of the step", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
