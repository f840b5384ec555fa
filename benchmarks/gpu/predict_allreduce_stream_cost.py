#!/usr/bin/env python3
"""The 2 x H100 run's copy-engine AllReduce candidates predicted with a per-group stream
cost of 8, 4 and 0 us (kernels/NOTES.md, Session 9: fewer stream operations alone cannot reach
bar 1). Run from the repository root."""
import csv, math, sys
sys.path.insert(0, 'benchmarks/gpu')
from predict_allreduce_tail import curve_from, predict_owner
run, detail = 'benchmarks/results/h100x2/tilewise_v4_run1.csv', 'benchmarks/results/h100x2/tilewise_v4_run1_detail.csv'
copy_s = curve_from(list(csv.DictReader(open(run))))
seen = set()
print("# copy-engine AllReduce predicted by predict_owner (predict_allreduce_tail.py) from", detail)
print("# (GEMM with signals from its t_own_signal_ce_s, copy curve from", run + "), per stream cost a group")
print("shape,groups,gemm_signal_us,pred_us_ops8,pred_us_ops4,pred_us_ops0")
for r in csv.DictReader(open(detail)):
    if r['op'] != 'gemm+allreduce' or r['transport'] != 'copy_engine' or r['wait'] != 'copy_engine':
        continue
    m, n, g = int(r['m']), int(r['n']), int(r['groups'])
    if (m, n, r['k'], g) in seen:
        continue
    seen.add((m, n, r['k'], g))
    gemm = float(r['t_own_signal_ce_s'])
    part = (m // 128) * math.ceil(n / 256) // 2
    b = [part * j // g for j in range(g + 1)]
    print(f"{m}x{n}x{r['k']},{g},{gemm*1e6:.0f}," + ",".join(f"{predict_owner('allreduce', m, n, gemm, b, copy_s, o*1e-6)*1e6:.0f}" for o in (8, 4, 0)))
