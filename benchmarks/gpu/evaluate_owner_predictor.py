#!/usr/bin/env python3
"""How a per-group stream cost changes the copy-engine predictor's error on measured runs.

predict_allreduce_tail.py's replica of kernels/tilewise/owner_predictor.cpp at 2 ranks
(checked against the C++ predictions in the detail file with the cost at 0), fed per candidate with the run's
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
from predict_allreduce_tail import curve_from, predict_owner  # noqa: E402

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
                m, n, g = int(r["m"]), int(r["n"]), int(r["groups"])
                part = (m // 128) * math.ceil(n / 256) // 2
                p = predict_owner(op, m, n, float(r["t_own_signal_ce_s"]),
                                  [part * j // g for j in range(g + 1)], copy_s, ops_us * 1e-6)
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
