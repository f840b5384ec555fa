#!/usr/bin/env python3
"""Per run of run_gemm_power.sh: the GEMM's sustained time next to the SM clock, power and
throttle reasons nvidia-smi sampled over the second half of that run (the steady,
power-limited part). Usage: summarize_gemm_power.py DIR [TIMES_CSV [BASELINE]] (DIR with
phases.csv and smi.csv; TIMES_CSV default gemm_sustained.csv, BASELINE default cublas);
prints a table, one row per shape and design, then every design's time and clock over the
baseline's on the same shape."""
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


def main(folder, times_csv="gemm_sustained.csv", baseline="cublas"):
    samples = smi_samples(f"{folder}/smi.csv")
    times = {}
    with open(f"{folder}/{times_csv}") as f:
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
    print(f"shape,design,time_over_{baseline},clock_over_{baseline}")
    for (shape, design), t in times.items():
        if design == baseline or (shape, baseline) not in times or (shape, design) not in clock:
            continue
        ratio_c = clock[(shape, design)] / clock.get((shape, baseline), float("nan"))
        print(f"{shape},{design},{t / times[(shape, baseline)]:.3f},{ratio_c:.3f}")

if __name__ == "__main__":
    main(*(sys.argv[1:4] if len(sys.argv) > 1 else ["."]))
