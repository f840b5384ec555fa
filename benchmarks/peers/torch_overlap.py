#!/usr/bin/env python3
"""PyTorch peers of overlap-bench, on the same shapes and in the same CSV columns.

Designs (the `design` column):
  torch_sequential  matmul, then the NCCL collective (torch.distributed), one stream
  torch_chunked     matmul split into k chunks along M; chunk i's collective issued
                    async right after it (ProcessGroupNCCL's own stream), waited at the end
  torch_symm_mem    PyTorch async tensor parallel: torch.ops.symm_mem.fused_matmul_reduce_scatter
                    (gemm+reducescatter) and fused_all_gather_matmul (allgather+gemm)
  torch             the matmul alone; torch_nccl: the collective alone

Shapes are per rank as in overlap-bench (C[m x n] = A[m x k] @ W[n x k]^T). Chunk c of a
reducescatter/alltoall pair covers rows [c*m/(w*k), ...) of every rank's block, like
kernels/designs/pair_op.hpp. Timing: warm-up, inputs rotated over enough sets to exceed
L2 3x, CUDA events per iteration, max over ranks, median/min/max over iterations.
The GPU's clock state is part of a time (a GEMM runs 18-19 % slower at the power limit that
some 100 ms of back-to-back GEMMs reach than at the boost clock after an idle spell, one
H200): --warmup-ms W runs each design back to back for W ms after its warm-up calls, untimed
(steady state, as overlap-bench's --warmup-ms and its <design>_steady rows); --idle-s S
leaves every GPU idle for S s before each design's warm-up (burst, as its <design>_burst
rows). --designs times only the named designs.
`wrong`: elements off an fp32 reference (sequential) or off the sequential result (others)
by more than 4*2^-8*(|ref| + rms), summed over ranks.

  torchrun --nproc-per-node 2 benchmarks/peers/torch_overlap.py --output torch.csv
NVLink multicast stays off: NCCL_NVLS_ENABLE=0 and TORCH_SYMM_MEM_DISABLE_MULTICAST=1 are
set here unless the caller set them.
"""
import argparse
import math
import os
import sys
import time

os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")
os.environ.setdefault("NVSHMEM_DISABLE_NVLS", "1")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from gpu_info import driver_version  # noqa: E402

ACCEPTANCE = [(4096, 4096, 4096), (8192, 8192, 2048), (8192, 8192, 8192),
              (16384, 8192, 4096), (2048, 8192, 8192), (4096, 12288, 49152)]
MOE = [(8192, 4096, 14336), (32768, 7168, 2048)]
HEADER = ("gpu,driver,cuda,nccl,world,op,design,dtype,m,n,k,bytes,chunks,time_us,time_min_us,"
          "time_max_us,tflops,algbw_GBps,busbw_GBps,wrong")


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
        self.dtype = torch.bfloat16
        self.group = dist.group.WORLD

    def sets_for(self, input_bytes):
        return int(min(8, max(1, -(-3 * self.l2_bytes // max(input_bytes, 1)))))

    def want(self, design):
        return not self.args.designs or design in self.args.designs

    def timed(self, fn, sets):
        """fn(i) runs iteration i on the current stream (joining any side streams)."""
        args = self.args
        if args.idle_s > 0:  # every rank drained and met, then the GPUs idle together
            torch.cuda.synchronize()
            dist.barrier()
            torch.cuda.synchronize()
            time.sleep(args.idle_s)
        for i in range(args.warmup):
            fn(i)
        torch.cuda.synchronize()
        if args.warmup_ms > 0:  # back to back, untimed, for about warmup_ms
            start = torch.cuda.Event(enable_timing=True)
            stop = torch.cuda.Event(enable_timing=True)
            start.record()
            fn(args.warmup)
            stop.record()
            torch.cuda.synchronize()
            # Every rank runs the same number of calls (each holds collectives): the
            # slowest rank's probe sets it.
            one = torch.tensor([start.elapsed_time(stop)], dtype=torch.float64,
                               device=self.device)
            dist.all_reduce(one, op=dist.ReduceOp.MAX)
            one_ms = max(one.item(), 1e-3)
            for i in range(math.ceil(args.warmup_ms / one_ms)):
                fn(args.warmup + 1 + i)
            torch.cuda.synchronize()
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(args.iterations)]
        stops = [torch.cuda.Event(enable_timing=True) for _ in range(args.iterations)]
        for i in range(args.iterations):
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

    def count_wrong(self, got, ref, magnitude=None):
        """magnitude: per element, the sum over ranks of |rank's term| (each rank's bf16
        output is rounded before a reduction sums them); defaults to |ref|."""
        got = got.float()
        ref = ref.float()
        rms = ref.pow(2).mean().sqrt()
        magnitude = ref.abs() if magnitude is None else magnitude
        tol = 4 * 2.0 ** -8 * (magnitude + ref.abs() + rms)
        bad = (~torch.isfinite(got)) | ((got - ref).abs() > tol)
        count = torch.tensor([bad.sum().item()], dtype=torch.float64, device=self.device)
        dist.all_reduce(count)
        return int(count.item())

    def emit(self, op, design, m, n, k, nbytes, chunks, timing, flops, busbw_factor, wrong):
        median, low, high = timing
        tflops = flops / median / 1e12 if flops else 0.0
        algbw = nbytes / median / 1e9 if nbytes else 0.0
        line = ",".join(self.tags + [op, design, "bf16", str(m), str(n), str(k), str(nbytes),
                                     str(chunks), f"{median * 1e6:.2f}", f"{low * 1e6:.2f}",
                                     f"{high * 1e6:.2f}", f"{tflops:.2f}", f"{algbw:.2f}",
                                     f"{algbw * busbw_factor:.2f}", str(wrong)])
        if self.rank == 0:
            print(line, flush=True)
            self.rows.append(line)

    def inputs(self, a_rows, n, k, sets, seed):
        gen = torch.Generator(device=self.device)
        gen.manual_seed(seed * 1000 + self.rank)
        make = lambda r, c: (torch.rand(r, c, generator=gen, device=self.device) * 2 - 1).to(self.dtype)
        return [(make(a_rows, k), make(n, k)) for _ in range(sets)]

    # --- pairs -------------------------------------------------------------------------
    def pair(self, op, m, n, k, seed):
        w = self.world
        shard = op == "allgather+gemm"
        a_rows = m // w if shard else m
        sets = self.sets_for((a_rows * k + n * k) * 2)
        data = self.inputs(a_rows, n, k, sets, seed)
        flops = 2.0 * m * n * k
        coll_bytes = m * k * 2 if shard else m * n * 2
        coll = op.split("+")[1] if not shard else "allgather"
        factor = 2.0 * (w - 1) / w if coll == "allreduce" else (w - 1) / w
        dev = self.device
        c = torch.empty(m, n, dtype=self.dtype, device=dev)
        out_rs = torch.empty(m // w, n, dtype=self.dtype, device=dev)
        out_a2a = torch.empty(m, n, dtype=self.dtype, device=dev)
        full_a = torch.empty(m, k, dtype=self.dtype, device=dev)

        def sequential(i):
            a, b = data[i % sets]
            if coll == "allreduce":
                torch.matmul(a, b.t(), out=c)
                dist.all_reduce(c)
                return c
            if coll == "reducescatter":
                torch.matmul(a, b.t(), out=c)
                dist.reduce_scatter_tensor(out_rs, c)
                return out_rs
            if coll == "alltoall":
                torch.matmul(a, b.t(), out=c)
                dist.all_to_all_single(out_a2a, c)
                return out_a2a
            dist.all_gather_into_tensor(full_a, a)
            torch.matmul(full_a, b.t(), out=c)
            return c

        # fp32 reference of the sequential result on input set 0
        a0, b0 = data[0]
        magnitude = None
        if coll == "allgather":
            gathered = torch.empty(m, k, dtype=self.dtype, device=dev)
            dist.all_gather_into_tensor(gathered, a0)
            ref = gathered.float() @ b0.float().t()
        else:
            ref_c = a0.float() @ b0.float().t()
            if coll == "allreduce":
                magnitude = ref_c.abs()
                dist.all_reduce(magnitude)
                dist.all_reduce(ref_c)
                ref = ref_c
            elif coll == "reducescatter":
                magnitude = torch.empty(m // w, n, dtype=torch.float32, device=dev)
                dist.reduce_scatter_tensor(magnitude, ref_c.abs())
                ref = torch.empty(m // w, n, dtype=torch.float32, device=dev)
                dist.reduce_scatter_tensor(ref, ref_c)
            else:
                ref = torch.empty(m, n, dtype=torch.float32, device=dev)
                dist.all_to_all_single(ref, ref_c)

        if shard:
            full_a.copy_(gathered)  # the matmul-alone timing reads a real gathered A
        torch.matmul(a0, b0.t())  # load kernels before timing
        if self.want("torch"):
            t = self.timed(lambda i: torch.matmul(data[i % sets][0], data[i % sets][1].t(), out=c)
                           if not shard else torch.matmul(full_a, data[i % sets][1].t(), out=c),
                           sets)
            self.emit("gemm", "torch", m, n, k, 0, 1, t, flops, 0.0, 0)
        if self.want("torch_nccl"):
            t = self.timed(lambda i: self.collective_only(coll, c, out_rs, out_a2a, full_a,
                                                          data[i % sets][0]), sets)
            self.emit(coll, "torch_nccl", m, n, k, coll_bytes, 1, t, 0.0, factor, 0)

        t = self.timed(sequential, sets) if self.want("torch_sequential") else None
        seq = sequential(0).clone()
        torch.cuda.synchronize()
        wrong = self.count_wrong(seq, ref, magnitude)
        if t is not None:
            self.emit(op, "torch_sequential", m, n, k, coll_bytes, 1, t, flops, factor, wrong)
        del ref, magnitude

        for chunks in self.args.chunks if self.want("torch_chunked") else []:
            rows = (m // w if coll in ("reducescatter", "alltoall", "allgather") else m) // chunks
            if rows == 0 or rows * chunks * (w if coll != "allreduce" else 1) != m:
                continue
            fn, to_natural = self.chunked_fn(coll, data, sets, chunks, rows, m, n, k, c, out_rs,
                                             out_a2a, full_a)
            t = self.timed(fn, sets)
            result = to_natural(fn(0))
            torch.cuda.synchronize()
            self.emit(op, "torch_chunked", m, n, k, coll_bytes, chunks, t, flops, factor,
                      self.count_wrong(result, seq))

        if coll in ("reducescatter", "allgather") and self.want("torch_symm_mem"):
            self.symm_mem(op, coll, data, sets, m, n, k, coll_bytes, flops, factor, seq)

    def collective_only(self, coll, c, out_rs, out_a2a, full_a, a):
        if coll == "allreduce":
            dist.all_reduce(c)
        elif coll == "reducescatter":
            dist.reduce_scatter_tensor(out_rs, c)
        elif coll == "alltoall":
            dist.all_to_all_single(out_a2a, c)
        else:
            dist.all_gather_into_tensor(full_a, a)

    def chunked_fn(self, coll, data, sets, chunks, rows, m, n, k, c, out_rs, out_a2a, full_a):
        """Returns (run, to_natural): run(i) enqueues iteration i and returns its result;
        to_natural maps that result to the sequential layout (outside the timing)."""
        w = self.world
        if coll in ("reducescatter", "alltoall"):
            staged = torch.empty(chunks, w, rows, n, dtype=self.dtype, device=self.device)
        if coll == "allgather":
            staged_ag = torch.empty(chunks, w, rows, k, dtype=self.dtype, device=self.device)
        if coll == "alltoall":
            received = out_a2a.view(chunks, w, rows, n)  # chunk-major receive

        def run(i):
            a, b = data[i % sets]
            works = []
            if coll == "allreduce":
                for ch in range(chunks):
                    part = c[ch * rows:(ch + 1) * rows]
                    torch.matmul(a[ch * rows:(ch + 1) * rows], b.t(), out=part)
                    works.append(dist.all_reduce(part, async_op=True))
                result = c
            elif coll in ("reducescatter", "alltoall"):
                blocks = a.view(w, m // w, k)
                for ch in range(chunks):
                    torch.matmul(blocks[:, ch * rows:(ch + 1) * rows], b.t(), out=staged[ch])
                    if coll == "reducescatter":
                        works.append(dist.reduce_scatter_tensor(
                            out_rs[ch * rows:(ch + 1) * rows], staged[ch].view(w * rows, n),
                            async_op=True))
                    else:
                        works.append(dist.all_to_all_single(received[ch], staged[ch],
                                                            async_op=True))
                result = out_rs if coll == "reducescatter" else out_a2a
            else:  # allgather chunk by chunk, each chunk's matmul after its gather
                for ch in range(chunks):
                    works.append(dist.all_gather_into_tensor(
                        staged_ag[ch].view(w * rows, k), a[ch * rows:(ch + 1) * rows],
                        async_op=True))
                cv = c.view(w, m // w, n)
                for ch in range(chunks):
                    works[ch].wait()
                    cv[:, ch * rows:(ch + 1) * rows].copy_(torch.matmul(staged_ag[ch], b.t()))
                return c
            for work in works:
                work.wait()
            return result

        def to_natural(result):
            if coll != "alltoall":
                return result
            return result.view(chunks, w, rows, n).permute(1, 0, 2, 3).reshape(m, n)

        return run, to_natural

    def symm_mem(self, op, coll, data, sets, m, n, k, coll_bytes, flops, factor, seq):
        try:
            import torch.distributed._symmetric_memory as symm
            name = self.group.group_name
            if hasattr(symm, "enable_symm_mem_for_group"):
                symm.enable_symm_mem_for_group(name)
            if coll == "reducescatter":
                fn = lambda i: torch.ops.symm_mem.fused_matmul_reduce_scatter(
                    data[i % sets][0], data[i % sets][1].t(), "sum", scatter_dim=0, group_name=name)
            else:
                fn = lambda i: torch.ops.symm_mem.fused_all_gather_matmul(
                    data[i % sets][0], [data[i % sets][1].t()], gather_dim=0, group_name=name)[1][0]
            t = self.timed(fn, sets)
            result = fn(0)
            torch.cuda.synchronize()
            self.emit(op, "torch_symm_mem", m, n, k, coll_bytes, 1, t, flops, factor,
                      self.count_wrong(result, seq))
        except Exception as error:  # an unavailable op is reported, not hidden
            if self.rank == 0:
                print(f"torch_overlap: {op} torch_symm_mem {m}x{n}x{k} failed: "
                      f"{type(error).__name__}: {error}", file=sys.stderr, flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--output", default="")
    parser.add_argument("--iterations", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--chunks", type=int, nargs="+", default=[2, 4])
    parser.add_argument("--warmup-ms", type=float, default=0.0,
                        help="each design back to back this long after its warm-up, untimed "
                             "(steady state: the GPU at its power limit)")
    parser.add_argument("--idle-s", type=float, default=0.0,
                        help="every GPU idle this long before each design's warm-up (burst: "
                             "the boost clock)")
    parser.add_argument("--designs", nargs="+", default=None,
                        choices=["torch", "torch_nccl", "torch_sequential", "torch_chunked",
                                 "torch_symm_mem"],
                        help="time only these designs (default: all)")
    parser.add_argument("--quick", action="store_true", help="two shapes only")
    parser.add_argument("--shapes", nargs="+", default=None,
                        help="MxNxK shapes instead of the acceptance set (every --ops pair; "
                             "without --ops the all-reduce and reduce-scatter pairs)")
    parser.add_argument("--ops", nargs="+", default=None,
                        help="only these pairs (e.g. gemm+reducescatter gemm+allreduce)")
    args = parser.parse_args()
    if args.iterations < 20:
        parser.error("--iterations must be >= 20 (median of >= 20 runs)")
    dist.init_process_group("nccl")
    bench = Bench(args)
    if bench.rank == 0:
        print(HEADER, flush=True)
    shapes = ACCEPTANCE[:2] if args.quick else ACCEPTANCE
    plan = [("gemm+allreduce", s) for s in shapes] + [("gemm+reducescatter", s) for s in shapes]
    plan += [("allgather+gemm", s) for s in ([(8192, 8192, 8192), (16384, 8192, 4096)])]
    plan += [("gemm+alltoall", s) for s in MOE]
    if args.shapes:
        own = [tuple(int(x) for x in s.split("x")) for s in args.shapes]
        # Every --ops pair on them (allgather+gemm too: m is then the gathered rows).
        plan = [(op, s) for op in (args.ops or ("gemm+allreduce", "gemm+reducescatter"))
                for s in own]
    if args.ops:
        plan = [(op, s) for op, s in plan if op in args.ops]
    for seed, (op, (m, n, k)) in enumerate(plan, start=1):
        try:
            bench.pair(op, m, n, k, seed)
        except Exception as error:
            if bench.rank == 0:
                print(f"torch_overlap: {op} {m}x{n}x{k} failed: {type(error).__name__}: {error}",
                      file=sys.stderr, flush=True)
            # Shape errors hit every rank alike, so the ranks stay in step; go on.
        torch.cuda.empty_cache()
    if bench.rank == 0 and args.output:
        tmp = args.output + ".tmp"
        with open(tmp, "w") as f:
            f.write(HEADER + "\n" + "\n".join(bench.rows) + "\n")
        os.replace(tmp, args.output)  # atomic
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
