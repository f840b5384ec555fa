#!/usr/bin/env python3
"""Per-shape figures of this run from tilewise_ce.csv and torch.csv, for every design the
tuner chose (summarize_tilewise.py counts only tilewise_ce, tilewise_ce_ep and
tilewise_ce_tk, so it leaves out the all-reduce shapes where the tuner chose a ring or slab
variant). Same-loop captured = (seq_L - T) / (seq_L - max(GEMM_L, collective_L)); the
geo-mean covers shapes whose NCCL collective takes >= 20 % of the cuBLAS GEMM.
Run in this folder: python3 derive.py > derived.csv"""
import collections, csv, math

rows = list(csv.DictReader(open("tilewise_ce.csv")))
t = collections.defaultdict(lambda: collections.defaultdict(list))
chosen, cublas = {}, {}
for r in rows:
    shape = f"{r['m']}x{r['n']}x{r['k']}"
    if r["op"].startswith("gemm+"):
        t[(r["op"], shape)][r["design"]].append(float(r["time_us"]))
        if r["design"].startswith("tilewise_ce"):
            chosen[(r["op"], shape)] = (r["design"], r["chunks"], r["wrong"])
    elif r["design"] == "nccl":
        t[("gemm+" + r["op"], shape)]["nccl"].append(float(r["time_us"]))
    elif r["op"] == "gemm" and r["design"] == "cublas":
        cublas[shape] = float(r["time_us"])
peers = collections.defaultdict(dict)
for r in csv.DictReader(open("torch.csv")):
    if r["op"].startswith("gemm+"):
        peers[(r["op"], f"{r['m']}x{r['n']}x{r['k']}")][r["design"]] = float(r["time_us"])

print("op,shape,cublas_us,nccl_us,seq_same_loop_us,ideal_same_loop_us,ce_design,ce_chunks,ce_us,"
      "tuned_us,captured_same_loop,ce_over_seq_same_loop,tuned_over_seq_same_loop,decomposed_best_us,"
      "torch_symm_mem_us,torch_chunked_us,torch_sequential_us,wrong,in_geomean")
caps = collections.defaultdict(list)
for (op, shape), d in t.items():
    seq = d["sequential_tw_loop"][0]
    ideal = max(d["op_alone_tw_loop"][0], d["collective_alone_tw_loop"][0])
    design, chunks, wrong = chosen[(op, shape)]
    ce, tuned = d[design][0], d["tilewise_tuned"][0]
    cap = (seq - ce) / (seq - ideal)
    incl = d["nccl"][0] >= 0.2 * cublas[shape]
    if incl:
        caps[op].append(cap)
    p = peers.get((op, shape), {})
    f = lambda v: "" if v is None else f"{v:.2f}"
    print(f"{op},{shape},{cublas[shape]:.2f},{d['nccl'][0]:.2f},{seq:.2f},{ideal:.2f},{design},{chunks},"
          f"{ce:.2f},{tuned:.2f},{cap:.4f},{ce / seq:.4f},{tuned / seq:.4f},{min(d['decomposed']):.2f},"
          f"{f(p.get('torch_symm_mem'))},{f(p.get('torch_chunked'))},{f(p.get('torch_sequential'))},{wrong},{int(incl)}")
for op, c in caps.items():
    print(f"# {op}: {len(c)} shapes, captured same loop geo-mean {math.exp(sum(map(math.log, c)) / len(c)):.3f}, "
          f"min {min(c):.3f}")
