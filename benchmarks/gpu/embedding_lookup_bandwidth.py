#!/usr/bin/env python3
"""The whole DLRM-DCNv2 embedding lookup of one rank against HBM bandwidth.

embedding-alltoall-bench times each rank's lookups of its tables for the global batch
(op `embedding_bag`: `own`, our embedding-bag kernel once per table; `fused_local`, all the
rank's tables in one launch) and keeps the slowest rank's median. This script rebuilds the
bench's table placement (kernels/fused/embedding_alltoall.cpp shard_tables: tables by
pooling, largest first, each to the least loaded rank), takes the rank with the most
lookups, and divides its bytes by that time: a lower bound of that rank's own rate, since
its time is at most the slowest rank's.

bytes = rows gathered (bags x pooling x dim x 2) + indices (bags x pooling x 4)
        + pooled output (bags x tables x dim x 2), as embedding-bag-bench counts them.
`hbm_fraction` only counts rows of tables larger than the L2 cache (50 MiB on H100 and
H200): a small table's rows are served from L2 after their first touch.

usage: embedding_lookup_bandwidth.py OURS_W4.CSV [OURS_W2.CSV ...] [--output FILE]
"""
import argparse
import csv
import io
import os
import sys
import tempfile

# The bench's DCNv2 tables (kernels/bench/embedding_alltoall_bench.cpp, kDcnRows and
# kDcnPooling: the MLPerf Criteo 1TB multi-hot tables, rows capped at 40M).
ROWS = [40000000, 39060, 17295, 7424, 20265, 3, 7122, 1543, 63,
        40000000, 3067956, 405282, 10, 2209, 11938, 155, 4, 976,
        14, 40000000, 40000000, 40000000, 590152, 12973, 108, 36]
POOLING = [3, 2, 1, 2, 6, 1, 1, 1, 1, 7, 3, 8, 1, 6, 9, 5, 1, 1, 1, 12, 100, 27, 10, 3, 1, 1]
DIM = 128
ELEMENT_BYTES = 2  # bf16
INDEX_BYTES = 4    # int32 indices
L2_BYTES = 50 * 2**20
# Datasheet HBM bandwidth: NVIDIA H100 Tensor Core GPU datasheet (H100 SXM5 80 GB,
# 3.35 TB/s); NVIDIA H200 Tensor Core GPU datasheet (4.8 TB/s).
DATASHEET_BPS = {"H100": 3.35e12, "H200": 4.8e12}
# MLPerf Training DLRM-DCNv2: global batch 65,536 samples (the reference's default).
MLPERF_GLOBAL_BATCH = 65536


class InputError(Exception):
    pass


NEEDED = ("gpu", "world", "op", "design", "m", "k", "time_us", "wrong")


def shard(pooling, world):
    order = sorted(range(len(pooling)), key=lambda t: -pooling[t])  # stable, as std::stable_sort
    load = [0] * world
    owner = [0] * len(pooling)
    for t in order:
        r = load.index(min(load))
        owner[t] = r
        load[r] += pooling[t]
    return owner, load


def datasheet(gpu):
    for name, bps in DATASHEET_BPS.items():
        if name in gpu:
            return bps
    return 0.0


def rows_for(path):
    out = []
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        missing = [c for c in NEEDED if c not in (reader.fieldnames or [])]
        if missing:
            raise InputError(f"{path}: column {missing[0]}: missing (expected overlap-bench CSV)")
        for line, row in enumerate(reader, start=2):
            if row["op"] != "embedding_bag":
                continue
            try:
                world, lookups, local = int(row["world"]), int(row["k"]), int(row["m"])
                t_s = float(row["time_us"]) * 1e-6
            except ValueError:
                raise InputError(f"{path}:{line}: world/k/m/time_us: not a number")
            scale, rest = divmod(lookups, sum(POOLING))
            if rest or scale < 1 or world < 1 or local < 1 or not t_s > 0:
                raise InputError(f"{path}:{line}: k={lookups}: expected a positive multiple of "
                                 f"{sum(POOLING)} lookups, world, m and time_us > 0")
            pooling = [p * scale for p in POOLING]
            owner, load = shard(pooling, world)
            rank = load.index(max(load))
            tables = [t for t in range(len(pooling)) if owner[t] == rank]
            bags = local * world  # each rank pools its tables for the global batch
            gathered = sum(bags * pooling[t] * DIM * ELEMENT_BYTES for t in tables)
            from_hbm = sum(bags * pooling[t] * DIM * ELEMENT_BYTES for t in tables
                           if ROWS[t] * DIM * ELEMENT_BYTES > L2_BYTES)
            indices = sum(bags * pooling[t] * INDEX_BYTES for t in tables)
            output = bags * len(tables) * DIM * ELEMENT_BYTES
            total = gathered + indices + output
            hbm = from_hbm + indices + output
            peak = datasheet(row["gpu"])
            out.append({
                "gpu": row["gpu"], "world": world, "design": row["design"],
                "pooling_scale": scale, "local_batch": int(row["m"]), "global_batch": bags,
                "rank": rank, "rank_tables": len(tables), "rank_lookups_per_sample": load[rank],
                "bytes": total, "hbm_bytes": hbm, "time_us": row["time_us"],
                "achieved_TBps": f"{total / t_s / 1e12:.3f}",
                "hbm_TBps": f"{hbm / t_s / 1e12:.3f}",
                "of_datasheet": f"{hbm / t_s / peak:.3f}" if peak else "",
                "mlperf_batch": "yes" if bags == MLPERF_GLOBAL_BATCH else "",
                "wrong": row["wrong"],
            })
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv", nargs="+")
    ap.add_argument("--output")
    a = ap.parse_args()
    rows = []
    for path in a.csv:
        if not os.path.isfile(path):
            print(f"embedding_lookup_bandwidth.py: {path}: no such file", file=sys.stderr)
            return 2
        try:
            rows += rows_for(path)
        except InputError as e:
            print(f"embedding_lookup_bandwidth.py: {e}", file=sys.stderr)
            return 2
    if not rows:
        print("embedding_lookup_bandwidth.py: no embedding_bag rows in the inputs", file=sys.stderr)
        return 2
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(rows[0].keys()), lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    if not a.output:
        sys.stdout.write(buf.getvalue())
        return 0
    # Atomic: a temporary file beside the output, renamed over it.
    d = os.path.dirname(os.path.abspath(a.output))
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".lookup_bw.")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(buf.getvalue())
        os.replace(tmp, a.output)
    except BaseException:
        os.unlink(tmp)
        raise
    return 0


if __name__ == "__main__":
    sys.exit(main())
