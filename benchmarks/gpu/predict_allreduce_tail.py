#!/usr/bin/env python3
"""The copy-engine all-reduce's tail, predicted from a 2-GPU tile-wise run (kernels/NOTES.md,
"The all-reduce tail and phase 2 by the epilogue").

A Python replica of kernels/tilewise/owner_predictor.cpp at 2 ranks (items done at the end
of their wave, one copy stream, the measured peer-copy curve interpolated as the C++
CommCurve does), fed with the run's GEMM-with-signals time (t_own_signal_ce_s) per all-reduce
shape with T_comm >= 20 % T_GEMM. For each shape it prints the best of 2, 4, 8, 16 equal
groups a part, a few tapered group splits, and phase 2 by the epilogue (the own part's end
plus the curve's zero-byte cost), then the same-loop captured overlap with the epilogue
figure scaled by the run's measured / predicted copy-engine time ("anchored").
Then what the GEMM alone allows: the captured overlap if the pair took only a GEMM, with
the plain own GEMM's time from the run's GEMM-alone rows (t_own_s of the detail file, the
loop cuBLAS alone is timed in) and with the GEMM-with-signals time of the all-GEMM signal
loop (t_own_signal_ce_s, a hotter loop: its plain own GEMM runs up to 15 % slower there).
Last, phase 2 by the epilogue predicted from the pair's GEMM at the final loop's clock:
measured where the summary has t_own_signal_ce_same_loop_s (runs after session 6), else
estimated as t_own_s x (cuBLAS in the loop / cuBLAS alone) x (signal loop's
t_own_signal_ce_s / t_own_interleaved_s); where that estimate is not below the measured
pair (large shapes, whose variants each run long enough to get a clock of their own), the
anchored figure stands in (kernels/NOTES.md, "Sustained against duty-cycled GEMMs").
With MIRROR_SUMMARY (owner-epilogue-bench's h2_vs_fp32_summary.csv), that GEMM's signal
cost is replaced by the measured cost of the reducing, mirroring owner GEMM over the plain
one (median of the passes' mirror_h2_over_own), which phase 2 by the epilogue runs.
  predict_allreduce_tail.py RUN.csv RUN_summary.csv [RUN_detail.csv [MIRROR_SUMMARY]]
  predict_allreduce_tail.py RUN.csv RUN_summary.csv [RUN_detail.csv]
"""
import bisect
import csv
import math
import sys

SMS = 132
TILE_BYTES = 128 * 256 * 2
TAPERS = {"1/2,1/4,1/8,1/16,1/16": [.5, .25, .125, .0625, .0625], "0.4,0.3,0.2,0.1": [.4, .3, .2, .1],
          "0.75,0.125,0.125": [.75, .125, .125], "0.5,0.3,0.15,0.05": [.5, .3, .15, .05]}


def curve_from(rows):
    pts = sorted((float(r["bytes"]), float(r["time_us"]) * 1e-6) for r in rows
                 if r["op"] == "peer_copy" and r["design"] == "copy_engine")
    xs = [p[0] for p in pts]

    def time_s(b):
        hi = min(max(bisect.bisect_left(xs, b), 1), len(pts) - 1)
        lo = hi - 1
        slope = (pts[hi][1] - pts[lo][1]) / (pts[hi][0] - pts[lo][0])
        t = pts[lo][1] + slope * (b - pts[lo][0])
        return max(t, pts[0][1] * 0.5 if b < pts[0][0] else 0.0)
    return time_s


def predict_owner(op, m, n, gemm_s, bounds, copy_s, ops_s=0.0, epilogue=False):
    """owner_predictor.cpp's predict_owner_time_s at 2 ranks: `bounds` the part's group
    boundaries in tiles, `ops_s` its per-group stream cost, `epilogue` phase 2 by the
    epilogue (all-reduce)."""
    tiles = (m // 128) * math.ceil(n / 256)
    wave = gemm_s / math.ceil(tiles / SMS)
    part = tiles // 2
    done = lambda end: math.ceil(end / SMS) * wave  # noqa: E731
    groups = len(bounds) - 1
    sent, arrival = 0.0, {}
    for j in range(groups):  # the peer's part (position 0)
        sent = max(done(bounds[j + 1]), sent) + copy_s((bounds[j + 1] - bounds[j]) * TILE_BYTES) + ops_s
        arrival[j] = sent
    finished = done(part)
    previous, phase2, last_a = finished, 0.0, 0.0
    for j in range(groups):  # the own part (position 1), reduced unless all-to-all
        a = done(part + bounds[j + 1])
        finished = a if op == "alltoall" else max(a, arrival[j], finished + (a - previous))
        previous, last_a = a, a
        phase2 = max(finished, phase2) + copy_s((bounds[j + 1] - bounds[j]) * TILE_BYTES) + ops_s
    if op == "reducescatter":
        return finished
    if op == "alltoall":
        return max(last_a, sent)
    return max(finished, sent) + copy_s(0) + ops_s if epilogue else phase2


def predict(m, n, gemm_s, bounds, copy_s, epilogue):
    return predict_owner("allreduce", m, n, gemm_s, bounds, copy_s, epilogue=epilogue)


def main():
    rows = list(csv.DictReader(open(sys.argv[1])))
    copy_s = curve_from(rows)
    own_alone = {}
    if len(sys.argv) > 3:
        for r in csv.DictReader(open(sys.argv[3])):
            if r["record"] == "final" and r["op"] == "gemm+allreduce":
                own_alone[(r["m"], r["n"], r["k"])] = float(r["t_own_s"])
    mirror_cost = {}
    if len(sys.argv) > 4:
        per_shape = {}
        for r in csv.DictReader(open(sys.argv[4])):
            per_shape.setdefault((r["m"], r["n"], r["k"]), []).append(float(r["mirror_h2_over_own"]))
        mirror_cost = {key: sorted(v)[len(v) // 2] for key, v in per_shape.items()}
    caps, caps_ep, caps_alone, caps_hot, caps_loop = [], [], [], [], []
    for r in csv.DictReader(open(sys.argv[2])):
        if r["op"] != "gemm+allreduce" or float(r["comm_over_gemm"]) < 0.2:
            continue
        m, n, k = int(r["m"]), int(r["n"]), int(r["k"])
        gemm = float(r["t_own_signal_ce_s"])
        part = (m // 128) * math.ceil(n / 256) // 2
        equal = {g: predict(m, n, gemm, [part * j // g for j in range(g + 1)], copy_s, False) for g in (2, 4, 8, 16)}
        tapered = {}
        for name, fr in TAPERS.items():
            b = [0]
            for f in fr:
                b.append(round(part * (b[-1] / part + f)))
            b[-1] = part
            tapered[name] = predict(m, n, gemm, b, copy_s, False)
        ep = min(predict(m, n, gemm, [part * j // g for j in range(g + 1)], copy_s, True) for g in (2, 4, 8, 16))
        best_g = min(equal, key=equal.get)
        measured = float(r["t_tilewise_ce_s"])
        anchored = ep * measured / equal[best_g]
        seq, ideal = float(r["t_sequential_same_loop_s"]), float(r["t_ideal_same_loop_s"])
        cap = lambda t: (seq - t) / (seq - ideal)
        caps.append(cap(measured))
        caps_ep.append(cap(anchored))
        caps_hot.append(cap(gemm))
        alone = own_alone.get((r["m"], r["n"], r["k"]))
        if alone is not None:
            caps_alone.append(cap(alone))
        loop_gemm, how = math.nan, ""
        if r.get("t_own_signal_ce_same_loop_s", "") not in ("", "nan"):
            loop_gemm, how = float(r["t_own_signal_ce_same_loop_s"]), "measured"
        elif alone is not None:
            loop_gemm = (alone * float(r["t_op_same_loop_s"]) / float(r["t_cublas_s"]) *
                         gemm / float(r["t_own_interleaved_s"]))
            how = "estimated"
        loop_text = ""
        if loop_gemm == loop_gemm:
            if loop_gemm < measured:
                ep_gemm, cost_text = loop_gemm, ""
                key = (r["m"], r["n"], r["k"])
                if how == "estimated" and key in mirror_cost:
                    ep_gemm = loop_gemm / (gemm / float(r["t_own_interleaved_s"])) * mirror_cost[key]
                    cost_text = f" (its GEMM x{mirror_cost[key]:.3f} for the reduction and mirror stores: {ep_gemm * 1e6:.0f} us)"
                ep_loop = min(predict(m, n, ep_gemm, [part * j // g for j in range(g + 1)], copy_s, True)
                              for g in (2, 4, 8, 16))
                caps_loop.append(cap(ep_loop))
                loop_text = (f"; final-loop GEMM {loop_gemm * 1e6:.0f} us ({how}), tail {(measured - loop_gemm) * 1e6:.0f} us, "
                             f"epilogue phase 2 on it{cost_text} {ep_loop * 1e6:.0f} us, captured {cap(ep_loop):.3f}")
            else:
                caps_loop.append(cap(anchored))
                loop_text = (f"; final-loop GEMM {loop_gemm * 1e6:.0f} us ({how}) not below the measured pair: "
                             f"anchored figure used")
        print(f"{m}x{n}x{k}: GEMM with signals {gemm * 1e6:.0f} us, measured tilewise_ce {measured * 1e6:.0f}; "
              f"equal groups " + " ".join(f"{g}:{t * 1e6:.0f}" for g, t in equal.items()) +
              "; tapered " + " ".join(f"[{nm}]:{t * 1e6:.0f}" for nm, t in tapered.items()) +
              f"; epilogue phase 2 {ep * 1e6:.0f} (anchored {anchored * 1e6:.0f}); "
              f"captured same loop {cap(measured):.3f} -> {cap(anchored):.3f}; "
              f"a GEMM alone would give: signal loop {cap(gemm):.3f}" +
              (f", plain own GEMM alone ({alone * 1e6:.0f} us) {cap(alone):.3f}" if alone is not None else "") +
              loop_text)
    gm = lambda v: math.exp(sum(map(math.log, v)) / len(v))
    print(f"geo-mean captured (same loop): measured {gm(caps):.3f}, with phase 2 by the epilogue "
          f"(anchored prediction) {gm(caps_ep):.3f}")
    print(f"geo-mean captured (same loop) if the pair took only a GEMM: the signal loop's {gm(caps_hot):.3f}" +
          (f", the plain own GEMM's alone {gm(caps_alone):.3f}" if len(caps_alone) == len(caps_hot) else ""))
    if len(caps_loop) == len(caps):
        print(f"geo-mean captured (same loop) with phase 2 by the epilogue on the final loop's GEMM: {gm(caps_loop):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
