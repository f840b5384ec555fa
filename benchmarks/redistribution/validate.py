#!/usr/bin/env python3
"""The simulator's time of every measured redistribution plan beside the measurement.

Reads the CSV redistribution-bench wrote (kernels/redistribution/redistribution_bench.cpp:
one row per plan with step "all", one per step), asks `overlapsim redistribute --cluster C
--format json` for each pair's predicted plan and step times, and prints per pair and plan
the measured and predicted time and the error (predicted - measured) / measured, then the
median |error| over the synthesised plans (the bar: 10 %), over the naive plans and over
both. Per step as well, with the predicted local copies' share. Exit 1 when a measured
result was wrong (its `wrong` column is not 0).

With --dtensor (dtensor_peer.py's CSV of the same call), the speed-ups on the same pairs:
naive / synthesised and DTensor / synthesised per pair, their geometric mean and maximum
(pairs DTensor could not express, failed, or got wrong are listed and left out of its mean).

  benchmarks/redistribution/validate.py MEASURED.csv --cluster CLUSTER.yaml
      [--bin build/app/overlapsim] [--csv OUT.csv] [--dtensor DTENSOR.csv
      [--speedup-csv OUT.csv]]
"""
import argparse
import csv
import json
import math
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
    ap.add_argument("--dtensor", help="dtensor_peer.py's CSV of the same pairs")
    ap.add_argument("--speedup-csv", help="write the per-pair speed-ups here")
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
    if a.dtensor:
        speedups(rows, list(csv.DictReader(open(a.dtensor))), a.speedup_csv)
    return 1 if wrong else 0


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def speedups(rows, dtensor_rows, out_csv):
    """Per pair: synthesised, naive and DTensor times and the two speed-ups."""
    plan = {(r["pair"], r["plan"]): r for r in rows if r["step"] == "all"}
    dt = {r["pair"]: r for r in dtensor_rows}
    out, over_naive, over_dtensor, left_out = [], [], [], []
    print()
    print(f"{'pair':<20} {'synthesised':<16} {'synth us':>9} {'naive us':>9} {'dtensor us':>10} "
          f"{'naive/synth':>11} {'dtensor/synth':>13}  DTensor's collectives")
    for (pair, name), s in plan.items():
        if name != "synthesised":
            continue
        ts = float(s["time_us"])
        n = plan.get((pair, "naive"))
        tn = float(n["time_us"]) if n else float("nan")
        d = dt.get(pair, {})
        ok = d.get("status") == "ok" and d.get("wrong") == "0"
        td = float(d["time_us"]) if ok else float("nan")
        if n:
            over_naive.append(tn / ts)
        if ok:
            over_dtensor.append(td / ts)
        else:
            left_out.append(f"{pair}: {d.get('status', 'no DTensor row')}"
                            + (f", wrong {d['wrong']}" if d.get("wrong") not in (None, "", "0")
                               else ""))
        print(f"{pair:<20} {s['steps']:<16} {ts:9.1f} {tn:9.1f} {td:10.1f} {tn / ts:10.2f}x "
              f"{td / ts:12.2f}x  {d.get('steps', '')}")
        out.append({"ranks": s["ranks"], "gpu": s["gpu"], "pair": pair, "synthesised": s["steps"],
                    "synthesised_us": f"{ts:.2f}", "naive_us": f"{tn:.2f}",
                    "dtensor_us": f"{td:.2f}" if ok else "", "naive_over_synth": f"{tn / ts:.3f}",
                    "dtensor_over_synth": f"{td / ts:.3f}" if ok else "",
                    "dtensor_steps": d.get("steps", ""), "dtensor_status": d.get("status", ""),
                    "wrong": f"{s['wrong']}/{n['wrong'] if n else ''}/{d.get('wrong', '')}"})
    if over_naive:
        print(f"synthesised over naive: geometric mean {geomean(over_naive):.2f}x, max "
              f"{max(over_naive):.2f}x, min {min(over_naive):.2f}x over {len(over_naive)} pairs")
    if over_dtensor:
        print(f"synthesised over DTensor: geometric mean {geomean(over_dtensor):.2f}x, max "
              f"{max(over_dtensor):.2f}x, min {min(over_dtensor):.2f}x over {len(over_dtensor)} "
              "pairs")
    for line in left_out:
        print(f"left out of the DTensor mean: {line}")
    if out_csv and out:
        tmp = out_csv + ".tmp"
        with open(tmp, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(out[0].keys()))
            w.writeheader()
            w.writerows(out)
        import os
        os.replace(tmp, out_csv)


if __name__ == "__main__":
    sys.exit(main())
