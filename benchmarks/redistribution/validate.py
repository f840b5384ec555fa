#!/usr/bin/env python3
"""The simulator's time of every measured redistribution plan beside the measurement.

Reads the CSV redistribution-bench wrote (kernels/redistribution/redistribution_bench.cpp:
one row per plan with step "all", one per step), asks `overlapsim redistribute --cluster C
--format json` for each pair's predicted plan and step times, and prints per pair and plan
the measured and predicted time and the error (predicted - measured) / measured, then the
median |error| over the synthesised plans (the bar: 10 %), over the naive plans and over
both. Per step as well, with the predicted local copies' share. Exit 1 when a measured
result was wrong (its `wrong` column is not 0).

  benchmarks/redistribution/validate.py MEASURED.csv --cluster CLUSTER.yaml
      [--bin build/app/overlapsim] [--csv OUT.csv]
"""
import argparse
import csv
import json
import statistics
import subprocess
import sys


def predict(binary, cluster, r):
    out = subprocess.run(
        [binary, "redistribute", "--mesh", r["mesh"], "--shape", r["shape"], "--dtype", r["dtype"],
         "--from", r["from"], "--to", r["to"], "--cluster", cluster, "--format", "json"],
        capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"overlapsim redistribute failed for {r['pair']}: {out.stderr.strip()}")
    return {p["name"]: p for p in json.loads(out.stdout)["plans"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("measured")
    ap.add_argument("--cluster", required=True)
    ap.add_argument("--bin", default="build/app/overlapsim")
    ap.add_argument("--csv", help="write the per-plan and per-step comparison here")
    a = ap.parse_args()

    rows = list(csv.DictReader(open(a.measured)))
    pairs = []
    for r in rows:
        if r["pair"] not in pairs:
            pairs.append(r["pair"])
    out_rows, errors, wrong = [], {"synthesised": [], "naive": []}, 0
    print(f"{'pair':<20} {'plan':<12} {'steps':<30} {'measured us':>11} {'predicted us':>12} "
          f"{'error':>7}")
    step_lines = []
    for pair in pairs:
        mine = [r for r in rows if r["pair"] == pair]
        plans = predict(a.bin, a.cluster, mine[0])
        for plan in ("synthesised", "naive"):
            total = [r for r in mine if r["plan"] == plan and r["step"] == "all"]
            if not total:
                continue
            t = total[0]
            wrong += int(t["wrong"])
            p = plans[plan]
            measured = float(t["time_us"])
            predicted = 1e6 * p["time_s"]
            err = (predicted - measured) / measured
            errors[plan].append(err)
            print(f"{pair:<20} {plan:<12} {t['steps']:<30} {measured:11.1f} {predicted:12.1f} "
                  f"{100 * err:6.1f}%")
            out_rows.append({"ranks": t["ranks"], "gpu": t["gpu"], "pair": pair, "plan": plan,
                             "step": "all", "kind": t["steps"], "measured_us": f"{measured:.2f}",
                             "predicted_us": f"{predicted:.2f}", "predicted_copy_us": "",
                             "error": f"{err:.4f}", "wrong": t["wrong"]})
            for r in mine:
                if r["plan"] != plan or r["step"] == "all":
                    continue
                k = int(r["step"]) - 1
                ps = p["steps"][k]
                m, q = float(r["time_us"]), 1e6 * ps["time_s"]
                c = 1e6 * ps.get("copy_s", 0.0)
                step_lines.append(f"{pair:<20} {plan:<12} {r['step']:>2} {r['kind']:<15} {m:11.1f} "
                                  f"{q:12.1f} {c:10.1f} {100 * (q - m) / m:6.1f}%")
                out_rows.append({"ranks": r["ranks"], "gpu": r["gpu"], "pair": pair, "plan": plan,
                                 "step": r["step"], "kind": r["kind"], "measured_us": f"{m:.2f}",
                                 "predicted_us": f"{q:.2f}", "predicted_copy_us": f"{c:.2f}",
                                 "error": f"{(q - m) / m:.4f}", "wrong": r["wrong"]})
    print()
    print(f"{'pair':<20} {'plan':<12} {'#':>2} {'step':<15} {'measured us':>11} {'predicted us':>12} "
          f"{'copies us':>10} {'error':>7}")
    print("\n".join(step_lines))
    print()
    both = errors["synthesised"] + errors["naive"]
    for name, e in (("synthesised", errors["synthesised"]), ("naive", errors["naive"]),
                    ("both", both)):
        if e:
            print(f"median |error| {name}: {100 * statistics.median(abs(x) for x in e):.1f}% over "
                  f"{len(e)} plans (max {100 * max(abs(x) for x in e):.1f}%)")
    print(f"wrong elements (summed over plans and ranks): {wrong}")
    if a.csv:
        tmp = a.csv + ".tmp"
        with open(tmp, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(out_rows[0].keys()))
            w.writeheader()
            w.writerows(out_rows)
        import os
        os.replace(tmp, a.csv)
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
