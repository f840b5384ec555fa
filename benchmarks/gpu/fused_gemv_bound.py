#!/usr/bin/env python3
"""Which fused GEMV + all-reduce bars any kernel can reach, case by case.

A rank must read its weight shard once: N x K / TP bf16 values. At the datasheet HBM
bandwidth of the GPU in the row that read is the floor of any fused kernel's time (the
exchange and the launch only add to it). The speed-up bars ask for fused <= PyTorch
sequential / 2 and fused <= (cuBLAS + NCCL) / 1.25, so where the floor is above those
targets no kernel reaches the bar on that case. The symm-mem bar (fused <= symm-mem one-shot)
is listed the same way. Two more floors, reachable in practice rather than by the datasheet:
the same bytes at the device-to-device copy bandwidth measured on the machine (--copy-tbps,
bytes read plus written over time), and cuBLAS's GEMV alone from the same run (a fused
kernel with cuBLAS's GEMV and a free exchange). And a floor for a kernel timed the way the
bench times it (CUDA events around one launch): the copy floor plus the event-timed span of
a 1-element kernel (--launch-us: the launch and completion every timed kernel pays, which
the per-CTA traces show outside every GEMV's span too); the device script's FLOORS=1 step
measures both (floors.txt).

Reads the device script's summary.csv (benchmarks/gpu/run_fused_gemv_allreduce.sh), writes
one row per case with the floor, the targets and whether each is reachable, and prints the
cases at <= 16 tokens:

  python3 benchmarks/gpu/fused_gemv_bound.py RUN/summary.csv --output RUN/bound.csv
"""
import argparse
import csv
import sys

# Datasheet HBM bandwidth, TB/s (NVIDIA's H100 SXM 80 GB and H200 SXM 141 GB datasheets).
DATASHEET_TBPS = {"H100": 3.35, "H200": 4.8}


def datasheet(gpu: str) -> float:
    for name, tbps in DATASHEET_TBPS.items():
        if name in gpu:
            return tbps
    raise SystemExit(f"no datasheet bandwidth for GPU '{gpu}'")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("summary")
    parser.add_argument("--output")
    parser.add_argument("--copy-tbps", type=float, default=0.0,
                        help="measured device-to-device copy bandwidth, TB/s (0: skip)")
    parser.add_argument("--launch-us", type=float, default=0.0,
                        help="event-timed span of a 1-element kernel, us (with --copy-tbps)")
    args = parser.parse_args()
    rows = list(csv.DictReader(open(args.summary)))
    head = ["tp", "tokens", "n", "k_full", "gpu", "w_mib_per_rank", "floor_us", "fused_us",
            "torch_seq_half_us", "seq_over_1_25_us", "symm_mem_us", "reach_2x_torch",
            "reach_1_25x_seq", "reach_symm", "fused_over_floor", "copy_floor_us",
            "copy_reach_2x_torch", "copy_reach_1_25x_seq", "cublas_gemv_us",
            "cublas_reach_2x_torch", "cublas_reach_1_25x_seq", "cublas_reach_symm",
            "timed_floor_us", "timed_reach_2x_torch", "timed_reach_1_25x_seq"]
    out = []
    for r in rows:
        tp, n, k_full = int(r["tp"]), int(r["n"]), int(r["k_full"])
        w_bytes = n * (k_full // tp) * 2
        floor = w_bytes / (datasheet(r["gpu"]) * 1e12) * 1e6
        fused = float(r["fused_us"])
        torch_half = float(r["torch_sequential_us"]) / 2
        seq_target = float(r["sequential_us"]) / 1.25
        symm = float(r["torch_symm_mem_us"])
        copy = w_bytes / (args.copy_tbps * 1e12) * 1e6 if args.copy_tbps > 0 else float("nan")
        cublas = float(r["cublas_us"])
        timed = copy + args.launch_us if args.launch_us > 0 else float("nan")
        out.append([tp, int(r["tokens"]), n, k_full, r["gpu"], f"{w_bytes / 2**20:.1f}",
                    f"{floor:.1f}", f"{fused:.1f}", f"{torch_half:.1f}", f"{seq_target:.1f}",
                    f"{symm:.1f}", int(floor <= torch_half), int(floor <= seq_target),
                    int(floor <= symm), f"{fused / floor:.2f}", f"{copy:.1f}",
                    int(copy <= torch_half), int(copy <= seq_target), f"{cublas:.1f}",
                    int(cublas <= torch_half), int(cublas <= seq_target), int(cublas <= symm),
                    f"{timed:.1f}", int(timed <= torch_half), int(timed <= seq_target)])
    if args.output:
        with open(args.output, "w", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(head)
            writer.writerows(out)
    print(f"{'tp':>2} {'tok':>3} {'n':>6} {'k':>6} {'floor':>7} {'copy':>7} {'cublas':>7} "
          f"{'timed':>7} {'fused':>7} {'tseq/2':>7} {'seq/1.25':>8} {'symm':>7}  datasheet "
          f"2x/1.25x/symm, copy 2x/1.25x, cublas 2x/1.25x/symm, timed 2x/1.25x")
    for o in out:
        if o[1] <= 16:
            print(f"{o[0]:>2} {o[1]:>3} {o[2]:>6} {o[3]:>6} {o[6]:>7} {o[15]:>7} {o[18]:>7} "
                  f"{o[22]:>7} {o[7]:>7} {o[8]:>7} {o[9]:>8} {o[10]:>7}  {o[11]}/{o[12]}/{o[13]}, "
                  f"{o[16]}/{o[17]}, {o[19]}/{o[20]}/{o[21]}, {o[23]}/{o[24]}")
    for tp in sorted({o[0] for o in out}):
        cases = [o for o in out if o[0] == tp and o[1] <= 16]
        print(f"TP={tp} tokens<=16: {len(cases)} cases; reachable by the HBM floor: "
              f"2x PyTorch sequential {sum(o[11] for o in cases)}, "
              f"1.25x cuBLAS+NCCL {sum(o[12] for o in cases)}, symm-mem {sum(o[13] for o in cases)}; "
              f"by the copy floor: {sum(o[16] for o in cases)}, {sum(o[17] for o in cases)}; "
              f"by cuBLAS's GEMV: {sum(o[19] for o in cases)}, {sum(o[20] for o in cases)}, "
              f"{sum(o[21] for o in cases)}; by the timed floor: {sum(o[23] for o in cases)}, "
              f"{sum(o[24] for o in cases)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
