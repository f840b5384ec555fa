#!/usr/bin/env python3
"""AllGather+GEMM at n ranks: one row per shape from overlap-bench's CSV (suite
tilewise_ag4.yaml; kernels/bench/allgather_tilewise_runner.hpp) and the PyTorch peers' CSV
(torch_overlap.py --ops allgather+gemm), then the acceptance lines.

Per shape, from the tile-wise runner's final interleaved loop (one clock state):
sequential_tw_loop (NCCL all-gather then cuBLAS), op_alone_tw_loop (cuBLAS),
collective_alone_tw_loop (NCCL all-gather), sequential_own_tw_loop (NCCL then the own GEMM),
own_alone_tw_loop, decomposed_tw_loop per chunk count, the fastest candidate (tilewise_ag:
one push stream in rotated order; tilewise_ag_par: a stream a peer; tilewise_ag_vendor: cuBLASLt
a block and a chunk on the rotated pushes; chunks = chunks a block)
and the tuner's choice (tilewise_tuned: that candidate, or sequential, chunks 0, when the
candidate was not more than 1 % faster in the search loop). Captured = (T_seq - T) /
(T_seq - T_ideal), T_ideal = max(op alone, collective alone). Geometric means over the shapes
whose all-gather alone takes at least 20 % of the GEMM alone. PyTorch: torch_symm_mem
(fused_all_gather_matmul) and torch_sequential from its own run, compared by time and by the
ratio to its own sequential, against the chosen candidate timed in a loop of its own
(<design>_own_loop) and its ratio to the pair runner's sequential (also its own loop). Bit-identity from the bench's stderr ("ag_bits" lines).

Clock states (a GEMM's time follows the GPU's clock: boost after an idle spell, 18-19 % lower
throughput at the power limit that back-to-back GEMMs reach): --torch-steady and --torch-burst
are the peers timed by torch_overlap.py --warmup-ms 1000 --iterations 30 (steady) and
--idle-s 0.5 --iterations 20 (burst); they are compared with overlap-bench's <design>_steady
and <design>_burst rows (the chosen candidate in the same state), and the GEMMs alone
(op_alone_steady / _burst against torch) show whether the two GEMMs differ at all.

  summarize_ag4.py bench.csv [--torch torch.csv] [--torch-steady torch_steady.csv]
      [--torch-burst torch_burst.csv] [--stderr stderr.txt] --output summary.csv
"""
import argparse
import os
import re
import sys
from collections import defaultdict

from pair_rows import fastest_us, geo, read_rows, write_rows


def read(path):
    return read_rows(path, lambda r: r["op"] == "allgather+gemm")


def fmt(x, digits=3):
    return "–" if x is None else f"{x:.{digits}f}"


def misses(rows, ours, theirs):
    """'MxNxK +x.x %' for each row where `ours` is not below `theirs`; 'none' if none."""
    slow = [f"{r['m']}x{r['n']}x{r['k']} {100 * (r[ours] / r[theirs] - 1):+.1f} %"
            for r in rows if r[ours] >= r[theirs]]
    return ", ".join(slow) if slow else "none"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("bench_csv")
    ap.add_argument("--torch", default="")
    ap.add_argument("--torch-steady", default="")
    ap.add_argument("--torch-burst", default="")
    ap.add_argument("--stderr", default="")
    ap.add_argument("--output", required=True)
    args = ap.parse_args()
    rows = read(args.bench_csv)
    if not rows:
        print("no allgather+gemm rows in", args.bench_csv, file=sys.stderr)
        return 1
    bits, predicted = {}, {}
    if args.stderr and os.path.exists(args.stderr):
        for line in open(args.stderr, errors="replace"):
            m = re.search(r"ag_bits (\d+)x(\d+)x(\d+) \S+ chunks \d+: mismatches (\d+)", line)
            if m:
                bits[tuple(int(x) for x in m.groups()[:3])] = int(m.group(4))
            m = re.search(r"ag_predicted (\d+)x(\d+)x(\d+) \S+ chunks \d+: predicted ([\d.]+) us, "
                          r"measured ([\d.]+) us", line)
            if m:
                predicted[tuple(int(x) for x in m.groups()[:3])] = (float(m.group(4)),
                                                                    float(m.group(5)))
    by = defaultdict(list)
    for r in rows + read(args.torch):
        by[(int(r["world"]), int(r["m"]), int(r["n"]), int(r["k"]))].append(r)
    # The peers in fixed clock states: (state, design) -> rows of a shape.
    states = defaultdict(list)
    for state, path in (("steady", args.torch_steady), ("burst", args.torch_burst)):
        for r in read_rows(path):
            key = (int(r["world"]), int(r["m"]), int(r["n"]), int(r["k"]))
            states[key].append(dict(r, design=f"{r['design']}_{state}"))
    out = []
    for key in sorted(by):
        rs = by[key]

        def t(design, prefix=False):
            return fastest_us(rs, design, prefix)

        def row_of(*designs):
            return next((r for r in rs if r["design"] in designs), None)

        seq, op_, co = t("sequential_tw_loop"), t("op_alone_tw_loop"), t("collective_alone_tw_loop")
        if not (seq and op_ and co):
            continue
        ideal = max(op_, co)
        # The chosen tile-wise design: tilewise_ag or _par, "_k<n>" with a split last wave.
        tw = next((r for r in rs if re.fullmatch(r"tilewise_ag(_par|_vendor)?(_k\d)?", r["design"])), None)
        tuned = row_of("tilewise_tuned")
        tw_us = float(tw["time_us"]) if tw else None
        tuned_us = float(tuned["time_us"]) if tuned else None
        cap = lambda x: round((seq - x) / (seq - ideal), 4) if x and seq > ideal else None
        dec_loop = t("decomposed_tw_loop")
        tsymm, tseq = t("torch_symm_mem"), t("torch_sequential")
        ol = [r for r in rs if r["design"].endswith("_own_loop")]
        own_loop = float(ol[0]["time_us"]) if ol else None
        pair_seq = t("sequential")
        peers = states.get(key, [])
        clock = {}
        for state in ("steady", "burst"):
            mine = [r for r in rs
                    if re.fullmatch(rf"tilewise_ag(_par|_vendor)?(_k\d)?_{state}", r["design"])]
            clock[f"tw_{state}_us"] = float(mine[0]["time_us"]) if mine else None
            clock[f"op_alone_{state}_us"] = t(f"op_alone_{state}")
            clock[f"torch_gemm_{state}_us"] = fastest_us(peers, f"torch_{state}")
            clock[f"torch_sequential_{state}_us"] = fastest_us(peers, f"torch_sequential_{state}")
            clock[f"torch_symm_mem_{state}_us"] = fastest_us(peers, f"torch_symm_mem_{state}")
        out.append(dict(
            world=key[0], m=key[1], n=key[2], k=key[3], gpu=rs[0]["gpu"],
            sequential_us=seq, op_alone_us=op_, collective_alone_us=co, ideal_us=ideal,
            comm_share=round(co / op_, 3), sequential_own_us=t("sequential_own_tw_loop"),
            own_alone_us=t("own_alone_tw_loop"),
            tw_design=tw["design"] if tw else "", tw_chunks=tw["chunks"] if tw else "",
            tw_us=tw_us, tw_wrong=tw["wrong"] if tw else "",
            tw_captured=cap(tw_us), tw_over_seq=round(tw_us / seq, 4) if tw_us else None,
            tuned_chunks=tuned["chunks"] if tuned else "", tuned_us=tuned_us,
            tuned_captured=cap(tuned_us),
            tuned_over_seq=round(tuned_us / seq, 4) if tuned_us else None,
            decomposed_loop_us=dec_loop, decomposed_pair_us=t("decomposed"),
            gather_only_us=t("gather_only_tw_loop"),
            tw_own_loop_us=own_loop, sequential_own_loop_us=pair_seq,
            tw_own_loop_over_seq=round(own_loop / pair_seq, 4) if own_loop and pair_seq else None,
            torch_sequential_us=tseq, torch_symm_mem_us=tsymm,
            torch_symm_over_seq=round(tsymm / tseq, 4) if tsymm and tseq else None,
            bit_mismatches=bits.get(key[1:], ""),
            predicted_us=predicted[key[1:]][0] if key[1:] in predicted else None,
            predictor_error=round(predicted[key[1:]][0] / predicted[key[1:]][1] - 1, 4)
            if key[1:] in predicted else None, **clock))
    if not out:
        print("no shape with the final loop's rows", file=sys.stderr)
        return 1
    write_rows(args.output, out)

    print("world m n k comm/gemm seq ideal tilewise(chunks) captured x_seq tuned x_seq "
          "decomposed(loop) own-loop(x seq) torch_symm(x its seq) bits")
    for r in out:
        print(f"{r['world']} {r['m']}x{r['n']}x{r['k']} {r['comm_share']:.2f} "
              f"{r['sequential_us']:.1f} {r['ideal_us']:.1f} {r['tw_design']} "
              f"{fmt(r['tw_us'], 1)}({r['tw_chunks']}) {fmt(r['tw_captured'])} "
              f"{fmt(r['tw_over_seq'])} {fmt(r['tuned_us'], 1)} {fmt(r['tuned_over_seq'])} "
              f"{fmt(r['decomposed_loop_us'], 1)} {fmt(r['tw_own_loop_us'], 1)}"
              f"({fmt(r['tw_own_loop_over_seq'])}) {fmt(r['torch_symm_mem_us'], 1)}"
              f"({fmt(r['torch_symm_over_seq'])}) {r['bit_mismatches']}")
    for world in sorted({r["world"] for r in out}):
        rs = [r for r in out if r["world"] == world]
        big = [r for r in rs if r["comm_share"] >= 0.2]
        print(f"--- {world} ranks: {len(rs)} shapes, {len(big)} with all-gather >= 20 % of GEMM")
        print(f"bar 1 captured geo-mean: tile-wise {fmt(geo([r['tw_captured'] for r in big]))}, "
              f"tuned {fmt(geo([r['tuned_captured'] for r in big]))} (>= 0.75); "
              f"any captured <= 0: {[r['m'] for r in big if (r['tw_captured'] or 0) <= 0]}")
        worst = max((r["tuned_over_seq"] or 0) for r in rs)
        print(f"bar 1 tuned / sequential worst {worst:.4f} (<= 1.01): "
              f"{sum(1 for r in rs if (r['tuned_over_seq'] or 9) <= 1.01)} of {len(rs)}")
        dec = [r for r in big if r["tw_us"] and r["decomposed_loop_us"]]
        print(f"bar 2 faster than decomposed (same loop): "
              f"{sum(1 for r in dec if r['tw_us'] < r['decomposed_loop_us'])} of {len(dec)}")
        # PyTorch times each variant in a loop of its own: compare with the candidate's own
        # loop (and its ratio to the pair runner's sequential, also timed alone).
        sym = [r for r in big if r["tw_own_loop_us"] and r["torch_symm_mem_us"]]
        print(f"bar 2 faster than torch symm-mem by time (own loops): "
              f"{sum(1 for r in sym if r['tw_own_loop_us'] < r['torch_symm_mem_us'])} of {len(sym)}; "
              f"by ratio to each one's sequential: "
              f"{sum(1 for r in sym if r['torch_symm_over_seq'] and r['tw_own_loop_over_seq'] < r['torch_symm_over_seq'])} of {len(sym)}")
        # The interleaved final loop against the peers' own timing (runs 2-4's headline).
        fin = [r for r in big if r["tw_us"] and r["torch_symm_mem_us"]]
        print(f"bar 2 faster than torch symm-mem by time (our interleaved loop, the peers' "
              f"own timing): {sum(1 for r in fin if r['tw_us'] < r['torch_symm_mem_us'])} of "
              f"{len(fin)}; slower: " + misses(fin, "tw_us", "torch_symm_mem_us"))
        for state, how in (("steady", "both 1 s back to back untimed, then 30 timed"),
                           ("burst", "both after 0.5 s of idle GPU, 5 + 20 calls")):
            both = [r for r in big if r[f"tw_{state}_us"] and r[f"torch_symm_mem_{state}_us"]]
            wins = sum(1 for r in both if r[f"tw_{state}_us"] < r[f"torch_symm_mem_{state}_us"])
            print(f"bar 2 faster than torch symm-mem by time, {state} ({how}): {wins} of "
                  f"{len(both)}; slower: "
                  + misses(both, f"tw_{state}_us", f"torch_symm_mem_{state}_us"))
            gem = [r for r in rs if r[f"op_alone_{state}_us"] and r[f"torch_gemm_{state}_us"]]
            if gem:
                ratios = [r[f"op_alone_{state}_us"] / r[f"torch_gemm_{state}_us"] for r in gem]
                print(f"  GEMM alone, {state}: our cuBLAS / torch.matmul {min(ratios):.3f}-"
                      f"{max(ratios):.3f} over {len(gem)} shapes")
        errs = sorted(abs(r["predictor_error"]) for r in rs if r["predictor_error"] is not None)
        if errs:
            mid = len(errs) // 2
            med = errs[mid] if len(errs) % 2 else (errs[mid - 1] + errs[mid]) / 2
            print(f"predictor (GEMM alone + transport alone -> pair): median |error| {med:.4f}, "
                  f"max {errs[-1]:.4f} over {len(errs)} shapes")
        b = [r["bit_mismatches"] for r in rs if r["bit_mismatches"] != ""]
        print(f"bar 3 bit mismatches against NCCL all-gather + own GEMM: {sum(b) if b else '–'} "
              f"over {len(b)} shapes; wrong (reference, sequential): "
              f"{sum(int(r['tw_wrong'] or 0) for r in rs)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
