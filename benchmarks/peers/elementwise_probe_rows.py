#!/usr/bin/env python3
"""The elementwise probe's streaming rows as measurement rows `overlapsim validate` reads.

Reads elementwise_probe.py's CSVs (one or more runs) and the run's machine.txt (the
driver on its first line, after the GPU name; PyTorch's version, whose +cuXYZ names the
CUDA runtime, on the second) and writes overlap-bench's columns, one row per probe row:
op `elementwise`, design the kernel (copy, add, scale), dtype bf16, m the elements of an
operand, bytes the bytes moved, time_us the median per call (the probe keeps no min and
max: both are the median), nccl `-` (no collective), wrong 0. The `cast` rows are left
out: PyTorch's dtype-converting copy, which no op of the generated steps uses, runs at half
a copy's rate (README.md beside the runs).

Usage: python3 elementwise_probe_rows.py MACHINE_TXT OUT.csv RUN.csv [RUN.csv ...]
"""
import csv
import re
import sys


def main(machine_txt, out_path, runs):
    lines = open(machine_txt).read().splitlines()
    driver = lines[0].split(",")[1].strip()
    cuda_tag = re.search(r"\+cu(\d+)(\d)$", lines[1].strip())
    cuda = f"{cuda_tag.group(1)}.{cuda_tag.group(2)}" if cuda_tag else "-"
    cols = ["gpu", "driver", "cuda", "nccl", "world", "op", "design", "dtype", "m", "n", "k",
            "bytes", "chunks", "time_us", "time_min_us", "time_max_us", "wrong"]
    with open(out_path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(cols)
        for run in runs:
            for r in csv.DictReader(open(run)):
                if r["op"] == "cast":
                    continue
                t_us = f"{float(r['time_s']) * 1e6:.3f}"
                w.writerow([r["gpu"], driver, cuda, "-", 1, "elementwise", r["op"], r["dtype"],
                            int(r["operand_bytes"]) // 2, 1, 1, r["bytes_moved"], 1, t_us, t_us,
                            t_us, 0])


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3:])
