"""What the pair summaries (summarize_ring4.py, summarize_ag4.py) read the same way:
overlap-bench's and the PyTorch peers' CSV rows, the fastest time of a design among a
shape's rows, geometric means, and writing the summary CSV."""
import csv
import math
import os


def read_rows(path, keep=lambda row: True):
    """The rows of a nccl-tests-style CSV that name a GPU and an op and pass `keep`; none
    when the file is missing."""
    if not path or not os.path.exists(path):
        return []
    with open(path, newline="") as f:
        return [r for r in csv.DictReader(f) if r.get("gpu") and r.get("op") and keep(r)]


def fastest_us(rows, design, prefix=False):
    """The lowest time_us of the rows of `design` (every design starting with it where
    `prefix`); None where there is none."""
    times = [float(r["time_us"]) for r in rows
             if (r["design"].startswith(design) if prefix else r["design"] == design)]
    return min(times) if times else None


def geo(values):
    values = [v for v in values if v is not None and v > 0]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def write_rows(path, rows):
    """`rows` (dicts) as a CSV at `path`, written atomically; the columns in the order they
    first appear, so rows may carry different keys."""
    cols = []
    for r in rows:
        cols += [c for c in r if c not in cols]
    tmp = path + ".tmp"
    with open(tmp, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols)
        w.writeheader()
        w.writerows(rows)
    os.replace(tmp, path)
