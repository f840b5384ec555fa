# Per-CTA trace analysis (fused-gemv-bench --trace): per design/case, medians over the traced
# calls of: CTA start ramp (last CTA start - first, us), GEMV end percentiles from the first
# CTA start (p50, p90, max of each CTA's last unit pushed), for fused the wait for the peer
# (median over CTAs of arrived - pushed) and the reduction (end - arrived, max), and the
# difference between the two ranks' first CTA starts (rank 1 - rank 0; the GPUs' global timers
# are not known to agree, so only its spread across calls means something).
import collections, csv, statistics as st, sys
for prefix in sys.argv[1:]:
    calls = collections.defaultdict(dict)
    for r in (0, 1):
        for row in csv.reader(open(f"{prefix}.rank{r}.csv")):
            key = (row[0], int(row[1]), int(row[2]), int(row[3]), int(row[4]))
            calls[key].setdefault(r, []).append([int(x) for x in row[6:10]])
    out = collections.defaultdict(list)
    for key, ranks in calls.items():
        per = []
        for r, rows in sorted(ranks.items()):
            t0 = min(x[0] for x in rows)
            starts = sorted(x[0] - t0 for x in rows)
            ends = sorted(x[1] - t0 for x in rows)
            q = lambda v, f: v[min(len(v) - 1, int(f * len(v)))]
            wait = st.median(x[2] - x[1] for x in rows) if key[0] == "fused" else 0
            red = max(x[3] - x[2] for x in rows) if key[0] == "fused" else 0
            per.append((starts[-1], q(ends, .5), q(ends, .9), ends[-1], wait, red, t0))
        skew = per[1][6] - per[0][6]
        out[key[:4]].append([max(p[i] for p in per) for i in range(6)] + [skew])
    print(f"{prefix}: design tok n k | start_ramp end_p50 end_p90 end_max peer_wait_med reduce_max | rank1-rank0 start: median, spread(p90-p10)")
    for key in sorted(out):
        v = out[key]
        m = [st.median(x[i] for x in v) / 1e3 for i in range(6)]
        sk = sorted(x[6] / 1e3 for x in v)
        print(f"  {key[0]:5} {key[1]:3} {key[2]:6} {key[3]:6} | " + " ".join(f"{x:6.2f}" for x in m)
              + f" | {st.median(sk):8.2f} {sk[int(.9 * len(sk)) - 1] - sk[int(.1 * len(sk))]:6.2f}")
