#!/usr/bin/env python3
"""Runs every layout pair of pairs.csv through `overlapsim redistribute` on a cluster and
writes one CSV row per pair (synthesised against naive: time, bytes moved, peak memory per
device), then prints the geometric-mean and maximum speed-up.

  benchmarks/redistribution/run.py --bin build/app/overlapsim \
      [--cluster workloads/clusters/h200-128node-ndr.yaml] [--out benchmarks/redistribution/results.csv]

Run from the repository root. Deterministic: the same binary gives the same CSV.
"""
import argparse
import csv
import json
import math
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
COLUMNS = [
    "name", "family", "mesh", "shape", "dtype", "from", "to",
    "synth_steps", "naive_steps",
    "synth_time_s", "naive_time_s", "speedup",
    "synth_bytes_moved", "naive_bytes_moved",
    "synth_peak_bytes_per_device", "naive_peak_bytes_per_device",
    "bound_bytes_per_device",
]


def run_pair(binary, cluster, row):
    cmd = [binary, "redistribute", "--mesh", row["mesh"], "--shape", row["shape"],
           "--dtype", row["dtype"], "--from", row["from"], "--to", row["to"],
           "--cluster", cluster, "--format", "json"]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{row['name']}: exit {done.returncode}: {done.stderr.strip()}")
    return json.loads(done.stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", default="build/app/overlapsim")
    ap.add_argument("--cluster", default="workloads/clusters/h200-128node-ndr.yaml")
    ap.add_argument("--pairs", default=os.path.join(HERE, "pairs.csv"))
    ap.add_argument("--out", default=os.path.join(HERE, "results.csv"))
    args = ap.parse_args()

    with open(args.pairs, newline="") as f:
        pairs = list(csv.DictReader(f))
    rows = []
    for p in pairs:
        j = run_pair(args.bin, args.cluster, p)
        s, n = j["plans"][0], j["plans"][1]
        kinds = lambda plan: "+".join(st["kind"] for st in plan["steps"]) or "none"
        speedup = n["time_s"] / s["time_s"] if s["time_s"] > 0 else 1.0
        rows.append({
            "name": p["name"], "family": p["family"], "mesh": p["mesh"], "shape": p["shape"],
            "dtype": p["dtype"], "from": p["from"], "to": p["to"],
            "synth_steps": kinds(s), "naive_steps": kinds(n),
            "synth_time_s": f"{s['time_s']:.6e}", "naive_time_s": f"{n['time_s']:.6e}",
            "speedup": f"{speedup:.4f}",
            "synth_bytes_moved": s["bytes_moved"], "naive_bytes_moved": n["bytes_moved"],
            "synth_peak_bytes_per_device": s["peak_bytes_per_device"],
            "naive_peak_bytes_per_device": n["peak_bytes_per_device"],
            "bound_bytes_per_device": max(j["from_bytes_per_device"], j["to_bytes_per_device"]),
        })
        print(f"{p['name']:<48} {speedup:7.2f}x  {rows[-1]['synth_steps']}", flush=True)

    # Atomic: a temporary file in the same folder, renamed over the target.
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(args.out)), suffix=".tmp")
    with os.fdopen(fd, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    os.replace(tmp, args.out)

    speedups = [float(r["speedup"]) for r in rows]
    mem = [int(r["naive_peak_bytes_per_device"]) / int(r["synth_peak_bytes_per_device"])
           for r in rows]
    geo = math.exp(sum(math.log(x) for x in speedups) / len(speedups))
    print(f"{len(rows)} pairs: speed-up geometric mean {geo:.3f}x, max {max(speedups):.2f}x, "
          f"min {min(speedups):.2f}x; naive/synthesised peak memory geometric mean "
          f"{math.exp(sum(math.log(x) for x in mem) / len(mem)):.2f}x, max {max(mem):.2f}x")


if __name__ == "__main__":
    main()
