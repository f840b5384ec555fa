#!/usr/bin/env python3
"""The per-chunk vendor family at n ranks against PyTorch's symmetric-memory pairs: one row a
(pair, shape) from overlap-bench's CSV (AllGather+GEMM: kernels/bench/allgather_tilewise_runner.hpp;
GEMM+ReduceScatter: tilewise_runner.hpp with --tilewise-clock-states 1) and the PyTorch
peers' CSVs in the two clock states (torch_overlap.py --warmup-ms 1000 --iterations 30:
steady; --idle-s 0.5 --iterations 20: burst), then the bar lines.

Per shape: the tuner's choice ("tuner chose" lines of the bench's stderr) and its time in the
final interleaved loop (tilewise_tuned) beside sequential_tw_loop (cuBLAS and NCCL, one
stream) in the same loop; the chosen design in each clock state (AllGather+GEMM: the best
candidate's <design>_steady / _burst; ReduceScatter: the chosen family's, or sequential's
where the tuner chose it) against torch_symm_mem (fused_all_gather_matmul /
fused_matmul_reduce_scatter) in the same state; the vendor family's and the own-GEMM
family's best beside it where both were timed. Bar shapes: the collective alone takes at
least 20 % of the GEMM alone (same loop).

  summarize_chunk_vendor.py bench.csv [bench.csv ...] --stderr stderr.txt [...]
      --torch-steady torch_steady.csv --torch-burst torch_burst.csv --output summary.csv
  summarize_chunk_vendor.py --smi smi.csv.gz --steps steps.csv
      (run_chunk_vendor.sh SMI=1: GPU 0's busy samples, clock, power and utilisation, in each
      "torch probe" step, seconds after the step's start: the probe times PyTorch's GEMM
      alone first, then its pair, each after 1 s back to back, so the clock each ran at shows)
"""
import argparse
import re
import sys
from collections import defaultdict

from pair_rows import fastest_us, read_rows, write_rows

OPS = ("allgather+gemm", "gemm+reducescatter")


def fmt(x, digits=1):
    return "–" if x is None else f"{x:.{digits}f}"


def probe_clocks(smi_path, steps_path):
    import datetime
    import gzip
    steps = []
    for line in list(open(steps_path))[1:]:
        at, name = line.rstrip("\n").split(",", 1)
        steps.append((float(at), name))
    opener = gzip.open if smi_path.endswith(".gz") else open
    samples = []
    for line in opener(smi_path, "rt"):
        parts = [p.strip() for p in line.split(",")]
        try:
            t = datetime.datetime.strptime(parts[0], "%Y/%m/%d %H:%M:%S.%f").replace(
                tzinfo=datetime.timezone.utc).timestamp()
            samples.append((t, int(parts[1]), float(parts[2]), float(parts[3]), float(parts[4])))
        except (ValueError, IndexError):
            continue  # the header
    for (start, name), (end, _) in zip(steps, steps[1:]):
        if "probe" not in name:
            continue
        print(name)
        for t, gpu, clock, power, util in samples:
            if start <= t < end and gpu == 0 and util >= 30:
                print(f"  +{t - start:6.2f} s  SM {clock:5.0f} MHz  {power:4.0f} W  util {util:3.0f} %")
    return 0


def main():
    if "--smi" in sys.argv:
        ap = argparse.ArgumentParser()
        ap.add_argument("--smi", required=True)
        ap.add_argument("--steps", required=True)
        args = ap.parse_args()
        return probe_clocks(args.smi, args.steps)
    ap = argparse.ArgumentParser()
    ap.add_argument("bench_csv", nargs="+")
    ap.add_argument("--stderr", nargs="*", default=[])
    ap.add_argument("--torch-steady", nargs="*", default=[])
    ap.add_argument("--torch-burst", nargs="*", default=[])
    ap.add_argument("--output", required=True)
    args = ap.parse_args()
    by = defaultdict(list)
    for path in args.bench_csv:
        for r in read_rows(path, lambda r: r["op"] in OPS):
            by[(r["op"], int(r["world"]), int(r["m"]), int(r["n"]), int(r["k"]))].append(r)
    for state, paths in (("steady", args.torch_steady), ("burst", args.torch_burst)):
        for path in paths:
            # The peers' GEMM alone (op "gemm", design torch) goes with either pair's shape.
            for r in read_rows(path, lambda r: r["op"] in OPS + ("gemm",)):
                for op in (OPS if r["op"] == "gemm" else (r["op"],)):
                    key = (op, int(r["world"]), int(r["m"]), int(r["n"]), int(r["k"]))
                    by[key].append(dict(r, design=f"{r['design']}_{state}"))
    chose, bits = {}, {}
    for path in args.stderr:
        for line in open(path, errors="replace"):
            m = re.search(r"tilewise (?:allgather\+gemm |gemm\+reducescatter )?(\d+)x(\d+)x(\d+): "
                          r"tuner chose (\S+)", line)
            if m:
                op = "allgather+gemm" if "allgather" in line else "gemm+reducescatter"
                chose[(op,) + tuple(int(x) for x in m.groups()[:3])] = m.group(4)
            m = re.search(r"ag_bits (\d+)x(\d+)x(\d+) \S+ chunks \d+: mismatches (\d+)", line)
            if m:
                bits[("allgather+gemm",) + tuple(int(x) for x in m.groups()[:3])] = int(m.group(4))
    out = []
    for key in sorted(by):
        rs = by[key]
        op, world, m, n, k = key
        t = lambda d: fastest_us(rs, d)
        seq, op_, co = t("sequential_tw_loop"), t("op_alone_tw_loop"), t("collective_alone_tw_loop")
        if not (seq and op_ and co):
            continue
        choice = chose.get((op, m, n, k), "")
        tuned = next((r for r in rs if r["design"] == "tilewise_tuned"), None)
        row = dict(op=op, world=world, m=m, n=n, k=k, gpu=rs[0]["gpu"],
                   comm_share=round(co / op_, 3), choice=choice,
                   choice_chunks=tuned["chunks"] if tuned else "",
                   tuned_us=float(tuned["time_us"]) if tuned else None, sequential_us=seq,
                   op_alone_us=op_, collective_alone_us=co)
        row["tuned_over_seq"] = round(row["tuned_us"] / seq, 4) if row["tuned_us"] else None
        vendor = "tilewise_ag_vendor" if op == "allgather+gemm" else "tilewise_rs_vendor"
        if op == "allgather+gemm":  # the chosen vendor variant's name (streams, start)
            names = [r["design"] for r in rs
                     if re.fullmatch(r"tilewise_ag_vendor(_2s)?(_noalign)?", r["design"])]
            vendor = names[0] if names else vendor
        row["vendor_us"] = t(vendor)
        if op == "allgather+gemm":
            own = [r for r in rs if re.fullmatch(r"tilewise_ag(_par)?(_k\d)?(_noalign)?",
                                                 r["design"])]
        else:
            own = [r for r in rs if re.fullmatch(r"tilewise_ce\w*", r["design"])
                   and not r["design"].endswith(("_steady", "_burst", "_loop"))]
        row["own_family"] = own[0]["design"] if own else ""
        row["own_family_us"] = float(own[0]["time_us"]) if own else None
        row["wrong"] = sum(int(r["wrong"] or 0) for r in rs
                           if r["design"] in (vendor, "tilewise_tuned") or r in own)
        row["bit_mismatches"] = bits.get((op, m, n, k), "")
        for state in ("steady", "burst"):
            mine = None
            if op == "allgather+gemm":
                xs = [r for r in rs if re.fullmatch(
                    rf"tilewise_ag(_par|_vendor(_2s)?)?(_k\d)?(_noalign)?_{state}", r["design"])]
                mine = float(xs[0]["time_us"]) if xs else None
            elif choice:
                mine = t(f"{choice}_{state}")
            row[f"ours_{state}_us"] = mine
            row[f"vendor_{state}_us"] = t(f"{vendor}_{state}")
            row[f"own_family_{state}_us"] = (t(f"{row['own_family']}_{state}")
                                             if row["own_family"] else None)
            row[f"sequential_{state}_us"] = t(f"sequential_{state}")
            row[f"op_alone_{state}_us"] = t(f"op_alone_{state}")
            row[f"torch_{state}_us"] = t(f"torch_symm_mem_{state}")
            row[f"torch_gemm_{state}_us"] = t(f"torch_{state}")
            theirs = row[f"torch_{state}_us"]
            row[f"ours_over_torch_{state}"] = round(mine / theirs, 4) if mine and theirs else None
        for state in ("steady", "burst"):
            mine, theirs = row[f"op_alone_{state}_us"], row[f"torch_gemm_{state}_us"]
            row[f"gemm_over_torch_gemm_{state}"] = round(mine / theirs, 4) if mine and theirs else None
        out.append(row)
    if not out:
        print("no shape with the final loop's rows", file=sys.stderr)
        return 1
    write_rows(args.output, out)
    print("op world MxNxK comm/gemm choice tuned seq x_seq | steady ours torch x | "
          "burst ours torch x | vendor / own family (interleaved)")
    for r in out:
        print(f"{r['op']} {r['world']} {r['m']}x{r['n']}x{r['k']} {r['comm_share']:.2f} "
              f"{r['choice']} {fmt(r['tuned_us'])} {fmt(r['sequential_us'])} "
              f"{fmt(r['tuned_over_seq'], 3)} | {fmt(r['ours_steady_us'])} "
              f"{fmt(r['torch_steady_us'])} {fmt(r['ours_over_torch_steady'], 3)} | "
              f"{fmt(r['ours_burst_us'])} {fmt(r['torch_burst_us'])} "
              f"{fmt(r['ours_over_torch_burst'], 3)} | {fmt(r['vendor_us'])} / "
              f"{fmt(r['own_family_us'])} {r['own_family']}")
    for op in OPS:
        rs = [r for r in out if r["op"] == op and r["comm_share"] >= 0.2]
        if not rs:
            continue
        print(f"--- {op}: {len(rs)} shapes with the collective >= 20 % of the GEMM")
        for state in ("steady", "burst"):
            both = [r for r in rs if r[f"ours_over_torch_{state}"]]
            slow = [f"{r['m']}x{r['n']}x{r['k']} {100 * (r[f'ours_over_torch_{state}'] - 1):+.1f} %"
                    for r in both if r[f"ours_over_torch_{state}"] >= 1]
            print(f"faster than torch symm-mem, {state}: "
                  f"{len(both) - len(slow)} of {len(both)}; slower: {', '.join(slow) or 'none'}")
        worst = max((r["tuned_over_seq"] or 0) for r in out if r["op"] == op)
        print(f"tuned / sequential (interleaved) worst {worst:.4f} (<= 1.01)")
        print(f"vendor chosen on {sum(1 for r in rs if 'vendor' in r['choice'])} of {len(rs)}; "
              f"wrong {sum(r['wrong'] for r in rs)}; bit mismatches "
              f"{sum(r['bit_mismatches'] for r in rs if r['bit_mismatches'] != '') or 0}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
