#!/usr/bin/env python3
"""PyTorch peer of embedding-alltoall-bench: DLRM's model-parallel embedding forward.

Every rank holds some of the 26 DLRM-DCNv2 tables (dim 128, the MLPerf multi-hot sizes
times --pooling-scales, rows capped at --max-rows; the same table-wise sharding as
kernels/fused/embedding_alltoall.cpp's shard_tables: tables by pooling from the most,
each to the least loaded rank), pools its tables' bags for the global batch with
torch.nn.functional.embedding_bag (mode "sum", bf16) and sends each rank its local
batch's rows with dist.all_to_all_single (NCCL), one stream:
  embedding+alltoall torch_sequential   lookups, the rows put in destination order, all-to-all
  embedding_bag torch                   the lookups alone
  alltoall torch_nccl                   the all-to-all alone
Columns as overlap-bench (m = local batch, n = dim, k = lookups per sample over all tables,
bytes = rows a rank receives). Timing: an untimed 1-element all-reduce before every timed
call, CUDA events, max over ranks, median/min/max over iterations. `wrong`: elements of the
first 64 bags' pooled rows off an fp32 sum by more than 4*2^-8*(|ref| + rms), summed over
ranks.

  torchrun --nproc-per-node 4 benchmarks/peers/torch_embedding_alltoall.py --output torch.csv
"""
import argparse
import os
import sys

os.environ.setdefault("NCCL_NVLS_ENABLE", "0")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from gpu_info import driver_version  # noqa: E402
import torch.nn.functional as F  # noqa: E402

# MLPerf Training DLRM-DCNv2 (mlcommons/training recommendation_v2/torchrec_dlrm:
# --num_embeddings_per_feature, --multi_hot_sizes).
ROWS = [40000000, 39060, 17295, 7424, 20265, 3, 7122, 1543, 63, 40000000, 3067956, 405282, 10,
        2209, 11938, 155, 4, 976, 14, 40000000, 40000000, 40000000, 590152, 12973, 108, 36]
POOLING = [3, 2, 1, 2, 6, 1, 1, 1, 1, 7, 3, 8, 1, 6, 9, 5, 1, 1, 1, 12, 100, 27, 10, 3, 1, 1]
DIM = 128
HEADER = ("gpu,driver,cuda,nccl,world,op,design,dtype,m,n,k,bytes,chunks,time_us,time_min_us,"
          "time_max_us,tflops,algbw_GBps,busbw_GBps,wrong")


def shard_tables(pooling, world):
    order = sorted(range(len(pooling)), key=lambda t: -pooling[t])  # stable
    load = [0] * world
    owner = [0] * len(pooling)
    for t in order:
        r = min(range(world), key=lambda i: (load[i], i))
        owner[t] = r
        load[r] += pooling[t]
    return owner


class Bench:
    def __init__(self, args):
        self.args = args
        self.rank = dist.get_rank()
        self.world = dist.get_world_size()
        self.device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", self.rank)))
        torch.cuda.set_device(self.device)
        props = torch.cuda.get_device_properties(self.device)
        nccl = ".".join(str(v) for v in torch.cuda.nccl.version())
        self.tags = [props.name.replace(",", " "), driver_version(), torch.version.cuda, nccl,
                     str(self.world)]
        self.rows = []
        self.align = torch.zeros(1, device=self.device)
        # Tables do not depend on the batch or the pooling: this rank's, once.
        owner = shard_tables(POOLING, self.world)
        self.slots = [t for t in range(len(ROWS)) if owner[t] == self.rank]
        gen = torch.Generator(device=self.device)
        gen.manual_seed(1000 + self.rank)
        self.tables = [torch.empty(min(ROWS[t], args.max_rows), DIM, dtype=torch.bfloat16,
                                   device=self.device).uniform_(-1, 1, generator=gen)
                       for t in self.slots]

    def timed(self, fn):
        args = self.args
        for _ in range(args.warmup):
            fn()
        torch.cuda.synchronize()
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(args.iterations)]
        stops = [torch.cuda.Event(enable_timing=True) for _ in range(args.iterations)]
        for i in range(args.iterations):
            dist.all_reduce(self.align)
            starts[i].record()
            fn()
            stops[i].record()
        torch.cuda.synchronize()
        times = torch.tensor([s.elapsed_time(e) * 1e-3 for s, e in zip(starts, stops)],
                             dtype=torch.float64, device=self.device)
        dist.all_reduce(times, op=dist.ReduceOp.MAX)
        times = sorted(times.tolist())
        n = len(times)
        median = times[n // 2] if n % 2 else 0.5 * (times[n // 2 - 1] + times[n // 2])
        return median, times[0], times[-1]

    def emit(self, op, design, m, k, nbytes, timing, busbw_factor, wrong):
        median, low, high = timing
        algbw = nbytes / median / 1e9 if nbytes else 0.0
        line = ",".join(self.tags + [op, design, "bf16", str(m), str(DIM), str(k), str(nbytes),
                                     "1", f"{median * 1e6:.2f}", f"{low * 1e6:.2f}",
                                     f"{high * 1e6:.2f}", "0.00", f"{algbw:.2f}",
                                     f"{algbw * busbw_factor:.2f}", str(wrong)])
        if self.rank == 0:
            print(line, flush=True)
            self.rows.append(line)

    def case(self, batch, scale):
        w = self.world
        g = w * batch
        pooling = [p * scale for p in POOLING]
        owner = shard_tables(POOLING, w)
        slots_of = [sum(1 for t in range(len(ROWS)) if owner[t] == r) for r in range(w)]
        gen = torch.Generator(device=self.device)
        gen.manual_seed(7 + self.rank + 100 * batch + 10000 * scale)
        indices = [torch.randint(0, table.shape[0], (g, pooling[t]), device=self.device,
                                 generator=gen, dtype=torch.int64)
                   for t, table in zip(self.slots, self.tables)]
        slots = len(self.slots)
        send = torch.empty(w, slots, batch, DIM, dtype=torch.bfloat16, device=self.device)
        recv = torch.empty(sum(slots_of) * batch, DIM, dtype=torch.bfloat16, device=self.device)
        in_splits = [slots * batch] * w
        out_splits = [slots_of[r] * batch for r in range(w)]

        def lookup():
            return [F.embedding_bag(idx, table, mode="sum") for idx, table in
                    zip(indices, self.tables)]

        def exchange():
            dist.all_to_all_single(recv, send.view(-1, DIM), out_splits, in_splits)

        def sequential():
            pooled = torch.stack(lookup(), 0)  # [slots, g, dim]
            send.copy_(pooled.view(slots, w, batch, DIM).transpose(0, 1))
            exchange()

        # Correctness: the first 64 bags of every owned table against an fp32 sum.
        bad = 0
        for idx, table, got in zip(indices, self.tables, lookup()):
            ref = table[idx[:64]].float().sum(1)
            rms = ref.pow(2).mean().sqrt()
            tol = 4 * 2.0 ** -8 * (ref.abs() + rms)
            g64 = got[:64].float()
            bad += int(((~torch.isfinite(g64)) | ((g64 - ref).abs() > tol)).sum().item())
        count = torch.tensor([float(bad)], dtype=torch.float64, device=self.device)
        dist.all_reduce(count)
        wrong = int(count.item())
        k = sum(pooling)
        nbytes = len(ROWS) * batch * DIM * 2
        factor = (w - 1) / w
        self.emit("embedding+alltoall", "torch_sequential", batch, k, nbytes, self.timed(sequential),
                  factor, wrong)
        self.emit("embedding_bag", "torch", batch, k, 0, self.timed(lookup), 0.0, wrong)
        self.emit("alltoall", "torch_nccl", batch, k, nbytes, self.timed(exchange), factor, 0)


def run_cases(bench, args, name):
    """Every (pooling scale, batch) case of `bench` (a case that fails is reported by `name`
    and skipped), the rows printed and written to args.output, then the process group closed."""
    if bench.rank == 0:
        print(HEADER, flush=True)
        print(f"torch {torch.__version__}", file=sys.stderr, flush=True)
    for scale in args.pooling_scales:
        for batch in args.batches:
            try:
                bench.case(batch, scale)
            except Exception as error:
                if bench.rank == 0:
                    print(f"{name}: batch {batch} scale {scale} failed: "
                          f"{type(error).__name__}: {error}", file=sys.stderr, flush=True)
            torch.cuda.empty_cache()
    if bench.rank == 0 and args.output:
        tmp = args.output + ".tmp"
        with open(tmp, "w") as f:
            f.write(HEADER + "\n" + "\n".join(bench.rows) + "\n")
        os.replace(tmp, args.output)
    dist.destroy_process_group()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--output", default="")
    parser.add_argument("--iterations", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--batches", type=int, nargs="+", default=[256, 1024, 2112, 8192, 32768])
    parser.add_argument("--pooling-scales", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--max-rows", type=int, default=40000000)
    args = parser.parse_args()
    dist.init_process_group("nccl", device_id=torch.device(
        "cuda", int(os.environ.get("LOCAL_RANK", 0))))
    run_cases(Bench(args), args, "torch_embedding_alltoall")


if __name__ == "__main__":
    main()
