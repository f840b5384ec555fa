#!/usr/bin/env python3
"""Sends, receives and all-to-alls behind back-to-back kernels, the torch.distributed
counterpart of collective_behind_kernels.py (torch.cuda.nccl has neither): does an NCCL
send/receive pair or all-to-all wait for a running GEMM kernel's end, and does it run
slower beside an elementwise add that streams HBM?

Two processes, one GPU each (torch.multiprocessing, NCCL backend). Per kernel kind (a cuBLAS
matmul 8192^3 bf16, an add over 256 Mi bf16 elements) and exchange (rank 0 sends to rank 1
and rank 1 to rank 0 at once, batch_isend_irecv; all_to_all_single), each of 8, 32 and 128
MiB a rank: eight exchanges back to back, alone and issued once both ranks' default streams
run a burst of the kernel; each timed by CUDA events on a timing stream that waits for the
exchange; five rounds; medians over ranks' maximum. CSV on stdout:
gpu,driver,cuda,nccl,kernel,kernel_us,exchange,bytes,alone_us,behind_us,behind_over_alone,
rule_us,behind_over_rule,samples
"""
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
SIZES = [8 << 20, 32 << 20, 128 << 20]


def worker(rank, world, out_q):
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", rank=rank, world_size=world,
                            init_method="tcp://127.0.0.1:29517")
    compute = torch.cuda.Stream(priority=0)
    timing = torch.cuda.Stream(priority=-1)
    a = torch.randn(8192, 8192, dtype=torch.bfloat16, device="cuda")
    b = torch.randn(8192, 8192, dtype=torch.bfloat16, device="cuda")
    x = torch.randn(256 << 20, dtype=torch.bfloat16, device="cuda")
    y = torch.randn(256 << 20, dtype=torch.bfloat16, device="cuda")
    z = torch.empty_like(x)
    kernels = {"matmul_8192x8192x8192_bf16": lambda: torch.matmul(a, b),
               "add_256Mi_bf16": lambda: torch.add(x, y, out=z)}
    peer = 1 - rank
    rows = []
    for kind, launch in kernels.items():
        for exchange in ("sendrecv", "alltoall"):
            for size in SIZES:
                send = torch.ones(size // 4, dtype=torch.float32, device="cuda")
                recv = torch.empty_like(send)

                def call():
                    if exchange == "sendrecv":
                        ops = [dist.P2POp(dist.isend, send, peer), dist.P2POp(dist.irecv, recv, peer)]
                        return dist.batch_isend_irecv(ops)
                    return [dist.all_to_all_single(recv, send, async_op=True)]

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
                            burst = CALLS * 2 + 4 if kind.startswith("matmul") else 60
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
                            kbeside.extend(1e3 * kev[i].elapsed_time(kev[i + 1])
                                           for i in range(len(kev) - 1))
                rows.append((kind, exchange, size, statistics.median(alone),
                             statistics.median(behind), statistics.median(kbeside),
                             1e3 * kernel_ms, len(behind)))
    out_q.put((rank, rows))
    dist.destroy_process_group()


def main():
    if torch.cuda.device_count() < 2:
        print("p2p_behind_kernels: needs 2 GPUs", file=sys.stderr)
        sys.exit(2)
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    procs = [ctx.Process(target=worker, args=(r, 2, q)) for r in range(2)]
    for p in procs:
        p.start()
    results = dict(q.get() for _ in procs)
    for p in procs:
        p.join()
    tag = gpu_tag()
    print("gpu,driver,cuda,nccl,kernel,kernel_us,exchange,bytes,alone_us,behind_us,"
          "behind_over_alone,rule_us,behind_over_rule,samples")
    for r0, r1 in zip(results[0], results[1]):
        kind, exchange, size = r0[0], r0[1], r0[2]
        t = max(r0[3], r1[3])
        tb = max(r0[4], r1[4])
        p = max(r0[5], r1[5])
        rule = math.ceil(t / p) * p
        print(f"{tag},{kind},{p:.1f},{exchange},"
              f"{size},{t:.1f},{tb:.1f},{tb / t:.2f},{rule:.1f},{tb / rule:.2f},{r0[7]}", flush=True)


if __name__ == "__main__":
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    main()
