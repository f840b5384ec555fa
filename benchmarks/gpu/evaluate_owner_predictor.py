#!/usr/bin/env python3
"""How a per-group stream cost changes the copy-engine predictor's error on measured runs.

A Python replica of kernels/tilewise/owner_predictor.cpp at 2 ranks (checked against the C++
predictions in the detail file with the cost at 0), fed per candidate with the run's
GEMM-with-signals time (t_own_signal_ce_s) and peer-copy curve (peer_copy/copy_engine rows),
predicts every copy-engine candidate (copy-engine phase 2; all three collectives) with a
stream cost of 0, 5, 8, 10, 12 and 15 us a group and prints the mean and max |error| over
all candidates and over the chosen ones ("final" rows) against their measured times.
  evaluate_owner_predictor.py RUN.csv RUN_detail.csv [RUN2.csv RUN2_detail.csv ...]
"""
import csv
import math
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from predict_allreduce_tail import curve_from  # noqa: E402

SMS = 132
TILE_BYTES = 128 * 256 * 2


def predict(op, m, n, gemm_s, groups, copy_s, ops_s):
    tiles = (m // 128) * math.ceil(n / 256)
    wave = gemm_s / math.ceil(tiles / SMS)
    part = tiles // 2
    bounds = [part * j // groups for j in range(groups + 1)]
    done = lambda end: math.ceil(end / SMS) * wave  # noqa: E731
    sent, arrival = 0.0, {}
    for j in range(groups):
        sent = max(done(bounds[j + 1]), sent) + copy_s((bounds[j + 1] - bounds[j]) * TILE_BYTES) + ops_s
        arrival[j] = sent
    finished = done(part)
    previous, phase2, last_a = finished, 0.0, 0.0
    for j in range(groups):
        a = done(part + bounds[j + 1])
        finished = a if op == "alltoall" else max(a, arrival[j], finished + (a - previous))
        previous, last_a = a, a
        phase2 = max(finished, phase2) + copy_s((bounds[j + 1] - bounds[j]) * TILE_BYTES) + ops_s
    if op == "reducescatter":
        return finished
    if op == "alltoall":
        return max(last_a, sent)
    return phase2


def main():
    args = sys.argv[1:]
    if len(args) < 2 or len(args) % 2:
        raise SystemExit(__doc__)
    for run, detail in zip(args[::2], args[1::2]):
        copy_s = curve_from(list(csv.DictReader(open(run))))
        cands = [r for r in csv.DictReader(open(detail))
                 if r["transport"] == "copy_engine" and r["wait"] == "copy_engine"]
        print(f"# {detail}: {len(cands)} copy-engine candidates")
        for ops_us in (0, 5, 8, 10, 12, 15):
            errs, chosen, check = [], [], []
            for r in cands:
                op = r["op"].split("+")[1]
                p = predict(op, int(r["m"]), int(r["n"]), float(r["t_own_signal_ce_s"]),
                            int(r["groups"]), copy_s, ops_us * 1e-6)
                e = abs(p - float(r["measured_s"])) / float(r["measured_s"])
                errs.append(e)
                if r["record"] == "final":
                    chosen.append(e)
                if ops_us == 0:
                    check.append(abs(p - float(r["predicted_s"])) / float(r["predicted_s"]))
            line = (f"stream cost {ops_us:2d} us a group: candidates mean |error| "
                    f"{100 * statistics.mean(errs):4.1f} %, max {100 * max(errs):4.1f} %; chosen mean "
                    f"{100 * statistics.mean(chosen):4.1f} %, max {100 * max(chosen):4.1f} %")
            if check:
                line += f" (replica against the C++ predictions: max {100 * max(check):.2f} %)"
            print(line)


if __name__ == "__main__":
    main()
