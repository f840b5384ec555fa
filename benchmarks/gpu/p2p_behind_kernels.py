#!/usr/bin/env python3
"""NCCL exchanges behind back-to-back kernels through torch.distributed, on the process
group's own stream at default or high priority: does an exchange wait for a running
kernel's end, and does it run slower beside an elementwise add that streams HBM? The
torch.distributed counterpart of collective_behind_kernels.py (torch.cuda.nccl has no
send, receive or all-to-all, and its collectives run on the caller's stream).

Two processes, one GPU each (torch.multiprocessing, NCCL backend). Per kernel kind
(--kernels: a cuBLAS matmul 8192^3 bf16, an add over 256 Mi bf16 elements, causal flash
attention 1x32x8192x128 bf16), exchange (--exchanges: rank 0 sends to rank 1 and rank 1 to
rank 0 at once, batch_isend_irecv; all_to_all_single; all_reduce; all_gather_into_tensor,
the size its output; reduce_scatter_tensor, the size its input), size a rank (--sizes-mib)
and stream priority of the process group (--priorities: "default" is the default group,
whose stream has the compute stream's priority, as ProcessGroupNCCL makes it unless its
is_high_priority_stream option is set; "high" a group made with that option): eight
exchanges back to back, alone and issued once both ranks' compute streams run a burst of
the kernel; each timed by CUDA events on a timing stream that waits for the exchange; five
rounds; medians over ranks' maximum. The defaults are the first run's set. CSV on stdout:
gpu,driver,cuda,nccl,priority,kernel,kernel_us,exchange,bytes,alone_us,behind_us,
behind_over_alone,rule_us,behind_over_rule,samples
"""
import argparse
import math
import os
import statistics
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch_gpu_tag import gpu_tag

ROUNDS = 5
CALLS = 8
BURST_S = 0.04  # a burst outlasts the eight exchanges behind it even at the rule's worst
KERNELS = ("matmul", "add", "attention")
EXCHANGES = ("sendrecv", "alltoall", "allreduce", "allgather", "reducescatter")
PRIORITIES = ("default", "high")


def make_kernels(names):
    out = {}
    if "matmul" in names:
        a = torch.randn(8192, 8192, dtype=torch.bfloat16, device="cuda")
        b = torch.randn(8192, 8192, dtype=torch.bfloat16, device="cuda")
        out["matmul_8192x8192x8192_bf16"] = lambda: torch.matmul(a, b)
    if "add" in names:
        x = torch.randn(256 << 20, dtype=torch.bfloat16, device="cuda")
        y = torch.randn(256 << 20, dtype=torch.bfloat16, device="cuda")
        z = torch.empty_like(x)
        out["add_256Mi_bf16"] = lambda: torch.add(x, y, out=z)
    if "attention" in names:
        q, k, v = (torch.randn(1, 32, 8192, 128, dtype=torch.bfloat16, device="cuda")
                   for _ in range(3))

        def attention():
            with torch.nn.attention.sdpa_kernel(torch.nn.attention.SDPBackend.FLASH_ATTENTION):
                torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        out["sdpa_flash_causal_1x32x8192x128_bf16"] = attention
    return out


def make_call(exchange, size, peer, group):
    send = torch.ones(size // 4, dtype=torch.float32, device="cuda")
    if exchange == "allgather":
        send = torch.ones(size // 8, dtype=torch.float32, device="cuda")
        recv = torch.empty(size // 4, dtype=torch.float32, device="cuda")
    elif exchange == "reducescatter":
        recv = torch.empty(size // 8, dtype=torch.float32, device="cuda")
    else:
        recv = torch.empty_like(send)

    def call():
        if exchange == "sendrecv":
            ops = [dist.P2POp(dist.isend, send, peer, group=group),
                   dist.P2POp(dist.irecv, recv, peer, group=group)]
            return dist.batch_isend_irecv(ops)
        if exchange == "alltoall":
            return [dist.all_to_all_single(recv, send, async_op=True, group=group)]
        if exchange == "allreduce":
            return [dist.all_reduce(send, async_op=True, group=group)]
        if exchange == "allgather":
            return [dist.all_gather_into_tensor(recv, send, async_op=True, group=group)]
        return [dist.reduce_scatter_tensor(recv, send, async_op=True, group=group)]
    return call


def time_point(launch, call, compute, timing):
    """(alone µs, behind µs, kernel beside µs, kernel alone µs, samples) of one rank."""
    with torch.cuda.stream(compute):
        for _ in range(3):
            launch()
    for w in call():
        w.wait()
    torch.cuda.synchronize()
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    with torch.cuda.stream(compute):
        e0.record()
        launch()
        e1.record()
    e1.synchronize()
    kernel_ms = e0.elapsed_time(e1)
    alone, behind, kbeside = [], [], []
    for r in range(ROUNDS):
        for variant in range(2):
            is_behind = (variant + r) % 2 == 1
            dist.barrier()
            torch.cuda.synchronize()
            kev = []
            if is_behind:
                burst = max(CALLS * 2 + 4, math.ceil(BURST_S / (kernel_ms / 1e3)))
                with torch.cuda.stream(compute):
                    launch()
                    started = torch.cuda.Event()
                    started.record()
                    kev = [torch.cuda.Event(enable_timing=True) for _ in range(burst)]
                    kev[0].record()
                    for i in range(1, burst):
                        launch()
                        kev[i].record()
                timing.wait_event(started)
            ev = [torch.cuda.Event(enable_timing=True) for _ in range(CALLS + 1)]
            with torch.cuda.stream(timing):
                for w in call():  # untimed: absorbs the ranks' skew
                    w.wait()
                ev[0].record()
                for i in range(CALLS):
                    for w in call():
                        w.wait()
                    ev[i + 1].record()
            torch.cuda.synchronize()
            t = [1e3 * ev[i].elapsed_time(ev[i + 1]) for i in range(CALLS)]
            (behind if is_behind else alone).extend(t)
            if is_behind:
                kbeside.extend(1e3 * kev[i].elapsed_time(kev[i + 1]) for i in range(len(kev) - 1))
    return (statistics.median(alone), statistics.median(behind), statistics.median(kbeside),
            1e3 * kernel_ms, len(behind))


def worker(rank, world, args, out_q):
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", rank=rank, world_size=world,
                            init_method="tcp://127.0.0.1:29517")
    groups = {"default": None}
    if "high" in args.priorities:
        options = dist.ProcessGroupNCCL.Options()
        options.is_high_priority_stream = True
        groups["high"] = dist.new_group(ranks=list(range(world)), backend="nccl",
                                        pg_options=options)
    compute = torch.cuda.Stream(priority=0)
    timing = torch.cuda.Stream(priority=-1)
    rows = []
    for kind, launch in make_kernels(args.kernels).items():
        for exchange in args.exchanges:
            for size in args.sizes:
                for priority in args.priorities:
                    call = make_call(exchange, size, 1 - rank, groups[priority])
                    rows.append((kind, exchange, size, priority)
                                + time_point(launch, call, compute, timing))
    out_q.put((rank, rows))
    dist.destroy_process_group()


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])

    def choices(allowed):
        def parse(text):
            items = text.split(",")
            for item in items:
                if item not in allowed:
                    raise argparse.ArgumentTypeError(
                        f"{item!r}: expected a comma-separated list of {', '.join(allowed)}")
            return items
        return parse

    def sizes(text):
        try:
            out = [int(v) << 20 for v in text.split(",")]
        except ValueError:
            out = []
        if not out or min(out) <= 0:
            raise argparse.ArgumentTypeError(f"{text!r}: expected positive MiB, comma-separated")
        return out

    parser.add_argument("--kernels", type=choices(KERNELS), default=["matmul", "add"])
    parser.add_argument("--exchanges", type=choices(EXCHANGES), default=["sendrecv", "alltoall"])
    parser.add_argument("--sizes-mib", dest="sizes", type=sizes, default=sizes("8,32,128"))
    parser.add_argument("--priorities", type=choices(PRIORITIES), default=["default"])
    return parser.parse_args()


def main():
    args = parse_args()
    if torch.cuda.device_count() < 2:
        print("p2p_behind_kernels: needs 2 GPUs", file=sys.stderr)
        sys.exit(2)
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    procs = [ctx.Process(target=worker, args=(r, 2, args, q)) for r in range(2)]
    for p in procs:
        p.start()
    results = dict(q.get() for _ in procs)
    for p in procs:
        p.join()
    tag = gpu_tag()
    print("gpu,driver,cuda,nccl,priority,kernel,kernel_us,exchange,bytes,alone_us,behind_us,"
          "behind_over_alone,rule_us,behind_over_rule,samples")
    for r0, r1 in zip(results[0], results[1]):
        kind, exchange, size, priority = r0[:4]
        t = max(r0[4], r1[4])
        tb = max(r0[5], r1[5])
        p = max(r0[6], r1[6])
        rule = math.ceil(t / p) * p
        print(f"{tag},{priority},{kind},{p:.1f},{exchange},{size},{t:.1f},{tb:.1f},"
              f"{tb / t:.2f},{rule:.1f},{tb / rule:.2f},{r0[8]}", flush=True)


if __name__ == "__main__":
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    main()
