#!/usr/bin/env python3
"""PyTorch peer of embedding-bag-bench: torch.nn.functional.embedding_bag, mode "sum".

Same cases and columns as kernels/bench/embedding_bag_bench.cu (design "torch"): a
40M x 128 table (MLPerf DLRM-DCNv2's large tables), per-GPU batches 2112, 8192, 65536,
pooling 1, 3, 12, 27, 100, bf16 and fp16, uniform indices and (bf16) a power law
(row = rows * u^4). bytes = rows gathered + indices (int32 here too) + output; time:
CUDA events around each call, median of 20 after 3 warm-up calls. `wrong`: elements of a
sample of bags off an fp64 sum by more than 4*2^-8*(|ref| + rms).

  python3 benchmarks/peers/torch_embedding_bag.py --output torch.csv [--smoke]
"""
import argparse
import os
import sys

import torch
import torch.nn.functional as F


def datasheet_Bps(name):
    # NVIDIA H100 / H200 Tensor Core GPU datasheets: 3.35 TB/s (H100 SXM), 4.8 TB/s (H200).
    if "H200" in name:
        return 4.8e12
    if "H100" in name and "HBM3" in name:
        return 3.35e12
    return 0.0


def time_ms(call, warmup, iterations):
    for _ in range(warmup):
        call()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    ms = []
    for _ in range(iterations):
        start.record()
        call()
        stop.record()
        stop.synchronize()
        ms.append(start.elapsed_time(stop))
    ms.sort()
    return ms[len(ms) // 2], ms[0]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--output", default="")
    parser.add_argument("--smoke", action="store_true")
    args = parser.parse_args()
    gpu = torch.cuda.get_device_name(0)
    sheet = datasheet_Bps(gpu)
    iterations = 5 if args.smoke else 20
    n = (1 << 28) if args.smoke else (1 << 32)
    a = torch.empty(n, dtype=torch.uint8, device="cuda").fill_(1)
    b = torch.empty_like(a)
    t = time_ms(lambda: b.copy_(a), 3, iterations)
    copy_Bps = 2.0 * n / (t[0] * 1e-3)
    del a, b
    cols = ("gpu,op,design,dtype,index_dist,table_rows,dim,bags,pooling,bytes,time_us,min_time_us,"
            "achieved_Bps,datasheet_Bps,copy_Bps,fraction_datasheet,fraction_copy,wrong")
    lines = [cols]

    def row(op, design, dtype, dist, rows, dim, bags, pooling, nbytes, t, wrong):
        achieved = nbytes / (t[0] * 1e-3)
        lines.append("%s,%s,%s,%s,%s,%d,%d,%d,%d,%.0f,%.3f,%.3f,%.4e,%.4e,%.4e,%.4f,%.4f,%d" % (
            gpu, op, design, dtype, dist, rows, dim, bags, pooling, nbytes, t[0] * 1e3,
            t[1] * 1e3, achieved, sheet, copy_Bps, achieved / sheet if sheet else 0.0,
            achieved / copy_Bps, wrong))
        print(lines[-1], flush=True)

    row("copy", "torch_copy", "bytes", "-", 0, 0, 0, 0, 2.0 * n, t, 0)
    rows = 1000000 if args.smoke else 40000000
    dim = 128
    batches = [8192] if args.smoke else [2112, 8192, 65536]
    poolings = [1, 100] if args.smoke else [1, 3, 12, 27, 100]
    gen = torch.Generator(device="cuda")
    gen.manual_seed(1)
    for dtype, name in ((torch.bfloat16, "bf16"), (torch.float16, "fp16")):
        weight = (torch.rand(rows, dim, device="cuda", generator=gen, dtype=torch.float32)
                  .mul_(2).sub_(1).to(dtype)) if rows * dim < (1 << 31) else None
        if weight is None:
            weight = torch.empty(rows, dim, device="cuda", dtype=dtype)
            for s in range(0, rows, 1 << 22):
                e = min(rows, s + (1 << 22))
                weight[s:e] = torch.rand(e - s, dim, device="cuda", generator=gen).mul_(2).sub_(1).to(dtype)
        for dist in ("uniform", "powerlaw_u4"):
            if dist == "powerlaw_u4" and name != "bf16":
                continue
            for bags in batches:
                for pooling in poolings:
                    if dist == "uniform":
                        idx = torch.randint(0, rows, (bags, pooling), device="cuda", generator=gen,
                                            dtype=torch.int32)
                    else:
                        u = torch.rand(bags, pooling, device="cuda", generator=gen, dtype=torch.float64)
                        idx = (u.pow(4) * rows).to(torch.int32).clamp_(max=rows - 1)
                    out = None

                    def call():
                        nonlocal out
                        out = F.embedding_bag(idx, weight, mode="sum")

                    t = time_ms(call, 3, iterations)
                    sample = idx[:: max(1, bags // 256)].long()
                    gathered = weight[sample].double()
                    ref = gathered.sum(1)
                    rms = gathered.pow(2).sum(1).sqrt()
                    got = out[:: max(1, bags // 256)].double()
                    wrong = int(((got - ref).abs() > 4 * 2.0**-8 * (ref.abs() + rms)).sum())
                    nbytes = bags * pooling * dim * 2 + bags * pooling * 4 + bags * dim * 2
                    row("embedding_bag", "torch", name, dist, rows, dim, bags, pooling, nbytes, t, wrong)
        del weight
        torch.cuda.empty_cache()
    if args.output:
        with open(args.output + ".tmp", "w") as f:
            f.write("\n".join(lines) + "\n")
        os.replace(args.output + ".tmp", args.output)


if __name__ == "__main__":
    sys.exit(main())
