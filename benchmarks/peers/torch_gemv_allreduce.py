#!/usr/bin/env python3
"""PyTorch peers of fused-gemv-bench: decode's row-parallel projection, GEMV + all-reduce.

Designs (the `design` column, op gemv+allreduce):
  torch_sequential      y = x @ W_r^T (torch.matmul), then dist.all_reduce (NCCL), one stream
  torch_symm_mem        the GEMV written into a symmetric-memory buffer, then
                        torch.ops.symm_mem.one_shot_all_reduce (every rank reads every peer's
                        buffer over NVLink and sums), where this PyTorch has it
  torch (op gemv)       the GEMV alone; torch_nccl (op allreduce): the all-reduce alone

Cases as in fused-gemv-bench: tokens x (N x full K), each rank holding K / world; columns
m = tokens, n = N, k = K / world. Timing: warm-up, weights rotated over enough sets to
exceed L2 3x, an untimed 1-element all-reduce before every timed call (the ranks start
together), CUDA events around the call, max over ranks, median/min/max over iterations.
`wrong`: elements off an fp32 sum of the ranks' fp32 GEMVs by more than
4*2^-8*(|ref| + rms), summed over ranks.

  torchrun --nproc-per-node 2 benchmarks/peers/torch_gemv_allreduce.py --output torch.csv
NVLink multicast stays off: NCCL_NVLS_ENABLE=0 and TORCH_SYMM_MEM_DISABLE_MULTICAST=1 are
set here unless the caller set them.
"""
import argparse
import os
import sys

os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")
os.environ.setdefault("NVSHMEM_DISABLE_NVLS", "1")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from gpu_info import driver_version  # noqa: E402

# Llama-3 70B o_proj, down_proj; 405B o_proj, down_proj (N x full K).
SHAPES = [(8192, 8192), (8192, 28672), (16384, 16384), (16384, 53248)]
HEADER = ("gpu,driver,cuda,nccl,world,op,design,dtype,m,n,k,bytes,chunks,time_us,time_min_us,"
          "time_max_us,tflops,algbw_GBps,busbw_GBps,wrong")


def symmetric_buffer(shape, dtype, device, group):
    """A tensor in PyTorch symmetric memory, rendezvoused over `group`, or an exception."""
    import torch.distributed._symmetric_memory as symm
    name = group.group_name
    if hasattr(symm, "empty"):
        buf = symm.empty(shape, dtype=dtype, device=device)
    else:  # older PyTorch: the group must be enabled first
        symm.enable_symm_mem_for_group(name)
        buf = symm._SymmetricMemory.empty_strided_p2p(
            shape, [shape[1], 1], dtype, device, name)
    symm.rendezvous(buf, name)
    return buf


class Bench:
    def __init__(self, args):
        self.args = args
        self.rank = dist.get_rank()
        self.world = dist.get_world_size()
        self.device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", self.rank)))
        torch.cuda.set_device(self.device)
        props = torch.cuda.get_device_properties(self.device)
        self.l2_bytes = getattr(props, "L2_cache_size", 60 << 20)
        nccl = ".".join(str(v) for v in torch.cuda.nccl.version())
        self.tags = [props.name.replace(",", " "), driver_version(), torch.version.cuda, nccl,
                     str(self.world)]
        self.rows = []
        self.group = dist.group.WORLD
        self.align = torch.zeros(1, device=self.device)

    def timed(self, fn):
        args = self.args
        for i in range(args.warmup):
            fn(i)
        torch.cuda.synchronize()
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(args.iterations)]
        stops = [torch.cuda.Event(enable_timing=True) for _ in range(args.iterations)]
        for i in range(args.iterations):
            dist.all_reduce(self.align)
            starts[i].record()
            fn(args.warmup + i)
            stops[i].record()
        torch.cuda.synchronize()
        times = torch.tensor([s.elapsed_time(e) * 1e-3 for s, e in zip(starts, stops)],
                             dtype=torch.float64, device=self.device)
        dist.all_reduce(times, op=dist.ReduceOp.MAX)
        times = sorted(times.tolist())
        n = len(times)
        median = times[n // 2] if n % 2 else 0.5 * (times[n // 2 - 1] + times[n // 2])
        return median, times[0], times[-1]

    def count_wrong(self, got, ref):
        got = got.float()
        rms = ref.pow(2).mean().sqrt()
        tol = 4 * 2.0 ** -8 * (ref.abs() + rms)
        bad = (~torch.isfinite(got)) | ((got - ref).abs() > tol)
        count = torch.tensor([bad.sum().item()], dtype=torch.float64, device=self.device)
        dist.all_reduce(count)
        return int(count.item())

    def emit(self, op, design, m, n, k, nbytes, timing, flops, busbw_factor, wrong):
        median, low, high = timing
        tflops = flops / median / 1e12 if flops else 0.0
        algbw = nbytes / median / 1e9 if nbytes else 0.0
        line = ",".join(self.tags + [op, design, "bf16", str(m), str(n), str(k), str(nbytes),
                                     "1", f"{median * 1e6:.2f}", f"{low * 1e6:.2f}",
                                     f"{high * 1e6:.2f}", f"{tflops:.2f}", f"{algbw:.2f}",
                                     f"{algbw * busbw_factor:.2f}", str(wrong)])
        if self.rank == 0:
            print(line, flush=True)
            self.rows.append(line)

    def case(self, tokens, n, k_full, seed):
        w = self.world
        k = k_full // w
        w_bytes = n * k * 2
        sets = int(min(8, max(1, -(-3 * self.l2_bytes // w_bytes))))
        gen = torch.Generator(device=self.device)
        gen.manual_seed(seed * 1000 + self.rank)
        make = lambda r, c: (torch.rand(r, c, generator=gen, device=self.device) * 2 - 1).to(torch.bfloat16)
        data = [(make(tokens, k), make(n, k)) for _ in range(sets)]
        flops = 2.0 * tokens * n * k
        nbytes = tokens * n * 2
        factor = 2.0 * (w - 1) / w
        # Reference: the fp32 sum of every rank's fp32 GEMV on set 0.
        ref = data[0][0].float() @ data[0][1].float().t()
        dist.all_reduce(ref)

        out = torch.empty(tokens, n, dtype=torch.bfloat16, device=self.device)

        def sequential(i):
            x, wt = data[i % sets]
            torch.matmul(x, wt.t(), out=out)
            dist.all_reduce(out)
            return out

        t = self.timed(sequential)
        self.emit("gemv+allreduce", "torch_sequential", tokens, n, k, nbytes, t, flops, factor,
                  self.count_wrong(sequential(0), ref))
        gemv = lambda i: torch.matmul(data[i % sets][0], data[i % sets][1].t(), out=out)
        self.emit("gemv", "torch", tokens, n, k, 0, self.timed(gemv), flops, 0.0, 0)
        self.emit("allreduce", "torch_nccl", tokens, n, k, nbytes,
                  self.timed(lambda i: dist.all_reduce(out)), 0.0, factor, 0)
        try:
            buf = symmetric_buffer((tokens, n), torch.bfloat16, self.device, self.group)
            name = self.group.group_name

            def symm_one_shot(i):
                x, wt = data[i % sets]
                torch.matmul(x, wt.t(), out=buf)
                return torch.ops.symm_mem.one_shot_all_reduce(buf, "sum", name)

            t = self.timed(symm_one_shot)
            result = symm_one_shot(0)
            torch.cuda.synchronize()
            self.emit("gemv+allreduce", "torch_symm_mem", tokens, n, k, nbytes, t, flops, factor,
                      self.count_wrong(result, ref))
        except Exception as error:  # an unavailable op is reported, not hidden
            if self.rank == 0:
                print(f"torch_gemv_allreduce: torch_symm_mem {tokens}x{n}x{k} failed: "
                      f"{type(error).__name__}: {error}", file=sys.stderr, flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--output", default="")
    parser.add_argument("--iterations", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--tokens", type=int, nargs="+", default=[1, 4, 16, 64])
    args = parser.parse_args()
    if args.iterations < 20:
        parser.error("--iterations must be >= 20 (median of >= 20 runs)")
    dist.init_process_group("nccl", device_id=torch.device(
        "cuda", int(os.environ.get("LOCAL_RANK", 0))))
    bench = Bench(args)
    if bench.rank == 0:
        print(HEADER, flush=True)
        print(f"torch {torch.__version__}", file=sys.stderr, flush=True)
    seed = 0
    for n, k_full in SHAPES:
        for tokens in args.tokens:
            seed += 1
            try:
                bench.case(tokens, n, k_full, seed)
            except Exception as error:
                if bench.rank == 0:
                    print(f"torch_gemv_allreduce: {tokens}x{n}x{k_full} failed: "
                          f"{type(error).__name__}: {error}", file=sys.stderr, flush=True)
            torch.cuda.empty_cache()
    if bench.rank == 0 and args.output:
        tmp = args.output + ".tmp"
        with open(tmp, "w") as f:
            f.write(HEADER + "\n" + "\n".join(bench.rows) + "\n")
        os.replace(tmp, args.output)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
