#!/usr/bin/env python3
"""Summary of run_ag_gemm_gap.sh: per shape, torch.matmul and overlap-bench's GEMMs alone by
method and library, the SM clock over each, and the GEMM kernels each process launched.

  python3 benchmarks/gpu/summarize_ag_gemm_gap.py DIR   (DIR: the run's gap/ folder)

Reads DIR/torch_methods.csv, overlap_bench.csv, phases.csv, smi.csv (or smi.csv.gz),
ncu_ours_<lib>.csv and libraries.txt; prints tables and the comparisons that separate the
library (same method, either library in the same binary) from the method (same library,
another timing).
"""
import csv
import os
import statistics
import sys


def read_csv(path):
    if not os.path.exists(path) or os.path.getsize(path) == 0:
        return []
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def shape_of(row):
    return f"{row['m']}x{row['n']}x{row['k']}"


def smi_samples(path):
    """(epoch seconds, SM MHz, W) of nvidia-smi's CSV (timestamp, clocks.sm, ..., power);
    `path`.gz where only that is there (the committed copy)."""
    import datetime
    import gzip
    import io
    rows = read_csv(path)
    if not rows and os.path.exists(path + ".gz"):
        with gzip.open(path + ".gz", "rt", newline="") as f:
            rows = list(csv.DictReader(io.StringIO(f.read())))
    samples = []
    for row in rows:
        try:
            keys = list(row)
            stamp = datetime.datetime.strptime(row[keys[0]].strip(), "%Y/%m/%d %H:%M:%S.%f")
            clock = float(row[keys[1]])
            power = float(row[keys[3]])
        except (ValueError, IndexError, TypeError):
            continue
        samples.append((stamp.replace(tzinfo=datetime.timezone.utc).timestamp(), clock, power))
    return samples


def loaded_clock(samples, start, end, offset):
    """Median SM clock of the samples in [start, end] drawing over 200 W, and their count."""
    inside = [c for t, c, p in samples if start <= t + offset <= end and p > 200]
    return (statistics.median(inside), len(inside)) if inside else (float("nan"), 0)


def ncu_kernels(path):
    names = {}
    for row in read_csv_skipping(path):
        name = row.get("Kernel Name", "")
        if not name or name.startswith("nccl"):
            continue
        key = (name, row.get("Grid Size", ""), row.get("Block Size", ""))
        names[key] = names.get(key, 0) + 1
    return names


def read_csv_skipping(path):
    """ncu --csv output after its own '==PROF==' lines."""
    if not os.path.exists(path):
        return []
    with open(path, newline="") as f:
        lines = [line for line in f if line.startswith('"')]
    return list(csv.DictReader(lines))


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    d = sys.argv[1]
    torch_rows = read_csv(os.path.join(d, "torch_methods.csv"))
    ob_rows = read_csv(os.path.join(d, "overlap_bench.csv"))
    phases = read_csv(os.path.join(d, "phases.csv"))
    samples = smi_samples(os.path.join(d, "smi.csv"))
    # nvidia-smi stamps local time without a zone; the phases are epoch seconds. The device's
    # zone is UTC; OFFSET_S corrects another.
    offset = float(os.environ.get("OFFSET_S", "0"))

    gpu = torch_rows[0]["gpu"] if torch_rows else (ob_rows[0]["gpu"] if ob_rows else "?")
    print(f"GPU: {gpu}")
    libs = os.path.join(d, "libraries.txt")
    if os.path.exists(libs):
        print(open(libs).read().rstrip())
    print()

    times = {}  # (source, shape) -> median us
    clocks = {}
    kernels = {}
    for r in torch_rows:
        key = (f"torch_{r['backend']}_{r['method']}", shape_of(r))
        times[key] = float(r["time_us"])
        clocks[key] = r["sm_clock_mhz"]
        kernels.setdefault(("torch_" + r["backend"], shape_of(r)), r["kernels"])
    for r in ob_rows:
        key = (f"ours_{r['design']}_{r['lib']}_{r['method']}", shape_of(r))
        times[key] = float(r["time_us"])
    for p in phases:  # overlap-bench processes: lib, method, designs, shapes (';' lists)
        if p["lib"] not in ("system", "torch"):
            continue
        designs, shapes_run = p["designs"].split(";"), p["shapes"].split(";")
        if len(designs) != 1 or len(shapes_run) != 1:
            continue  # several GEMMs in one process: no per-GEMM window
        clock, n = loaded_clock(samples, float(p["start_s"]), float(p["end_s"]), offset)
        clocks[(f"ours_{designs[0]}_{p['lib']}_{p['method']}", shapes_run[0])] = (
            f"{clock:.0f}({n})" if n else "-")

    shapes = []
    for _, s in times:
        if s not in shapes:
            shapes.append(s)
    columns = [
        ("torch cuBLAS pt", "torch_cublas_pt"), ("torch cuBLAS ours", "torch_cublas_ours"),
        ("torch cuBLAS sust", "torch_cublas_sustained"),
        ("torch cuBLAS gap450", "torch_cublas_gap450"),
        ("torch Lt pt", "torch_cublaslt_pt"), ("torch Lt sust", "torch_cublaslt_sustained"),
        ("ours cuBLAS pt", "ours_cublas_system_pt"),
        ("ours cuBLAS ours", "ours_cublas_system_ours"),
        ("ours cuBLAS sust", "ours_cublas_system_sustained"),
        ("ours torch-lib pt", "ours_cublas_torch_pt"),
        ("ours torch-lib ours", "ours_cublas_torch_ours"),
        ("ours torch-lib sust", "ours_cublas_torch_sustained"),
        ("own pt", "ours_own_system_pt"), ("own ours", "ours_own_system_ours"),
        ("own sust", "ours_own_system_sustained"),
    ]
    print("GEMM alone, median us (SM MHz: torch rows NVML mean over the timed part; ours the "
          "median nvidia-smi sample over 200 W in the process, count in brackets)")
    print("| M×N×K | " + " | ".join(c for c, _ in columns) + " |")
    print("| --- " * (len(columns) + 1) + "|")
    for s in shapes:
        cells = []
        for _, key in columns:
            t = times.get((key, s))
            c = clocks.get((key, s), "")
            cells.append(f"{t:.1f} @{c}" if t is not None else "-")
        print(f"| {s} | " + " | ".join(cells) + " |")
    print()

    print("Comparisons (ratio > 1: the first is slower)")
    sys_, lib_, tor = "ours_cublas_system_", "ours_cublas_torch_", "torch_cublas_"
    pairs = [
        ("library: ours system / ours torch-lib, pt", sys_ + "pt", lib_ + "pt"),
        ("library: ours system / ours torch-lib, ours", sys_ + "ours", lib_ + "ours"),
        ("library: ours system / ours torch-lib, sustained", sys_ + "sustained",
         lib_ + "sustained"),
        ("binary: ours cuBLAS / torch cuBLAS, pt", sys_ + "pt", tor + "pt"),
        ("binary: ours cuBLAS / torch cuBLAS, ours", sys_ + "ours", tor + "ours"),
        ("binary: ours cuBLAS / torch cuBLAS, sustained", sys_ + "sustained", tor + "sustained"),
        ("method: torch sustained / torch pt", tor + "sustained", tor + "pt"),
        ("method: torch gap450 / torch pt", tor + "gap450", tor + "pt"),
        ("method: ours sustained / ours pt", sys_ + "sustained", sys_ + "pt"),
        ("own GEMM / ours cuBLAS, sustained", "ours_own_system_sustained", sys_ + "sustained"),
        ("own GEMM / torch cuBLAS, pt", "ours_own_system_pt", tor + "pt"),
    ]
    for label, a, b in pairs:
        cells = []
        for s in shapes:
            ta, tb = times.get((a, s)), times.get((b, s))
            cells.append(f"{s} {ta / tb:.3f}" if ta and tb else f"{s} -")
        print(f"- {label}: " + ", ".join(cells))
    print()

    print("GEMM kernels")
    for (source, s), names in sorted(kernels.items()):
        print(f"- {source} {s}: {names}")
    for lib in ("system", "torch"):
        found = ncu_kernels(os.path.join(d, f"ncu_ours_{lib}.csv"))
        for (name, grid, block), count in found.items():
            if any(word in name.lower() for word in ("fill", "poison", "check", "compare")):
                continue
            print(f"- overlap-bench ({lib} cuBLAS) x{count}: {name} grid {grid} block {block}")


if __name__ == "__main__":
    main()
