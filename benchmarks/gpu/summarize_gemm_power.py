#!/usr/bin/env python3
"""Per run of run_gemm_power.sh: the GEMM's sustained time next to the SM clock, power and
throttle reasons nvidia-smi sampled over the second half of that run (the steady,
power-limited part). Usage: summarize_gemm_power.py DIR (with gemm_sustained.csv,
phases.csv, smi.csv); prints a table, one row per shape and design, then own/cuBLAS."""
import csv
import datetime
import statistics
import sys


def smi_samples(path):
    out = []
    with open(path) as f:
        rows = csv.reader(f)
        next(rows)
        for r in rows:
            try:
                t = datetime.datetime.strptime(r[0].strip(), "%Y/%m/%d %H:%M:%S.%f")
            except ValueError:
                continue
            t = t.replace(tzinfo=datetime.timezone.utc).timestamp()
            out.append((t, float(r[1]), float(r[3]), r[5].strip()))
    return out


def main(folder):
    samples = smi_samples(f"{folder}/smi.csv")
    times = {}
    with open(f"{folder}/gemm_sustained.csv") as f:
        for r in csv.DictReader(f):
            times[(f"{r['m']}x{r['n']}x{r['k']}", r["design"])] = float(r["time_us"])
    print("shape,design,time_us,sm_clock_MHz,power_W,samples,throttle_reasons")
    clock = {}
    with open(f"{folder}/phases.csv") as f:
        for p in csv.DictReader(f):
            start, end = float(p["start_s"]), float(p["end_s"])
            window = [s for s in samples if start + 0.5 * (end - start) <= s[0] <= end]
            if not window:
                print(f"{p['shape']},{p['design']},,,,0,")
                continue
            mhz = statistics.median(s[1] for s in window)
            watts = statistics.median(s[2] for s in window)
            reasons = "|".join(sorted({s[3] for s in window}))
            clock[(p["shape"], p["design"])] = mhz
            t = times.get((p["shape"], p["design"]), float("nan"))
            print(f"{p['shape']},{p['design']},{t:.2f},{mhz:.0f},{watts:.0f},{len(window)},{reasons}")
    print()
    print("shape,own_over_cublas_time,own_over_cublas_clock")
    for shape in dict.fromkeys(k[0] for k in times):
        if (shape, "own") in times and (shape, "cublas") in times:
            ratio_t = times[(shape, "own")] / times[(shape, "cublas")]
            ratio_c = clock.get((shape, "own"), float("nan")) / clock.get((shape, "cublas"), float("nan"))
            print(f"{shape},{ratio_t:.3f},{ratio_c:.3f}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".")
