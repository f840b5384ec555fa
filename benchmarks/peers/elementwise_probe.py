#!/usr/bin/env python3
"""Elementwise (streaming) kernels on one GPU: what the profiles' memory curve times.

The simulator charges every memory-bound op that is not a GEMV or an embedding gather
(norms, activations, residual adds, casts, the MoE permutation's passes) at
bytes / (memory_bandwidth_Bps x efficiency.memory(bytes)) + launch_overhead_s. This probe
times PyTorch's own streaming kernels over that range of sizes, so the curve can be checked
against the kernels it stands for:

  copy   y.copy_(x)                 bytes moved 2 S
  add    torch.add(x, y, out=z)     3 S
  scale  x.mul_(1.0001)             2 S
  cast   z32.copy_(x)  (bf16->fp32) 3 S   (S read, 2 S written)

S is the bf16 operand size. Two variants: `hot`, the same tensors call after call (what
a chain of kernels over one activation sees: operands under the 60 MB L2 stay in it), and
`cold`, cycling through enough distinct tensor sets that every call reads HBM. Each time is
the median of 7 CUDA-event-timed batches of back-to-back calls (a batch >= ~2 ms) after a
warm-up. Writes CSV:

  gpu,op,variant,dtype,operand_bytes,bytes_moved,calls_per_batch,time_s,achieved_Bps

Usage: python3 elementwise_probe.py OUT.csv
"""
import csv
import statistics
import sys

import torch

L2_CLEAR_BYTES = 256 << 20  # cold variant: at least this much distinct data per cycle


def timed(fn_list, calls):
    """Median seconds per call over 7 batches of `calls` calls, cycling through fn_list."""
    for i in range(min(len(fn_list) * 2, 16)):
        fn_list[i % len(fn_list)]()
    torch.cuda.synchronize()
    times = []
    for _ in range(7):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        for i in range(calls):
            fn_list[i % len(fn_list)]()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e-3 / calls)
    return statistics.median(times)


def cases(n, sets):
    bf = torch.bfloat16
    xs = [torch.randn(n, device="cuda", dtype=bf) for _ in range(sets)]
    ys = [torch.randn(n, device="cuda", dtype=bf) for _ in range(sets)]
    zs = [torch.empty(n, device="cuda", dtype=bf) for _ in range(sets)]
    z32 = [torch.empty(n, device="cuda", dtype=torch.float32) for _ in range(sets)]
    r = range(sets)
    return {
        "copy": ([lambda i=i: zs[i].copy_(xs[i]) for i in r], 2),
        "add": ([lambda i=i: torch.add(xs[i], ys[i], out=zs[i]) for i in r], 3),
        "scale": ([lambda i=i: xs[i].mul_(1.0001) for i in r], 2),
        "cast": ([lambda i=i: z32[i].copy_(xs[i]) for i in r], 3),
    }


def main(out_path):
    gpu = torch.cuda.get_device_name()
    rows = []
    for log2 in range(20, 32):  # 1 MiB .. 2 GiB per bf16 operand
        operand = 1 << log2
        n = operand // 2
        for variant in ("hot", "cold"):
            # cold: distinct sets whose operands together exceed L2_CLEAR_BYTES
            sets = 1 if variant == "hot" else max(1, -(-L2_CLEAR_BYTES // (3 * operand)))
            if variant == "cold" and 3 * operand * sets > (12 << 30):
                continue
            for op, (fns, passes) in cases(n, sets).items():
                moved = passes * operand
                calls = max(len(fns), min(4000, int(2e-3 * 4e12 / moved) + 1))
                t = timed(fns, calls)
                rows.append([gpu, op, variant, "bf16", operand, moved, calls, t, moved / t])
            torch.cuda.empty_cache()
    with open(out_path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["gpu", "op", "variant", "dtype", "operand_bytes", "bytes_moved",
                    "calls_per_batch", "time_s", "achieved_Bps"])
        w.writerows(rows)


if __name__ == "__main__":
    main(sys.argv[1])
