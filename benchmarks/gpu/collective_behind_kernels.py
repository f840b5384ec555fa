#!/usr/bin/env python3
"""Does an NCCL collective launched behind back-to-back kernels of a kind wait for each
kernel's end? The simulator assumes so for GEMMs (a vendor GEMM kernel holds every SM until
it ends: ExecOptions::comm_waits_for_gemm_kernel) and not for memory-bound or attention
kernels. This times it for three kinds, PyTorch's: a cuBLAS matmul (the control),
scaled_dot_product_attention on the flash backend (causal, bf16) and an elementwise add,
each at a short and a long size, beside all-reduces and all-gathers of 8, 32 and 128 MiB
(an all-gather's size is its output; it moves data without reducing it, as an all-to-all
does).

One process, 2 GPUs. Per kind and collective size, rounds alternate two variants: the
collectives alone (back to back on each GPU's highest-priority stream), and the same
collectives issued once both GPUs' default-priority streams run a burst of the kernel (the
first kernel started; the burst outlasts the collectives). Each collective is timed by CUDA
events on GPU 0's comm stream; medians over rounds, skipping each variant's first call. The
kernel's own time beside the collectives (P; the median over the burst) gives the rule's time per collective,
ceil(T / P) x P. CSV on stdout:
gpu,driver,cuda,nccl,kernel,kernel_alone_us,kernel_beside_us,collective,coll_bytes,
coll_alone_us,coll_behind_us,behind_over_alone,rule_us,behind_over_rule,samples
"""
import math
import statistics
import sys

import torch
import torch.cuda.nccl as nccl
import torch.nn.functional as F
from torch_gpu_tag import gpu_tag

ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 5
COLLS = 8
SIZES = [8 << 20, 32 << 20, 128 << 20]
COLLECTIVES = ["allreduce", "allgather"]


def kernels(dev):
    """name -> a function launching one kernel of that kind on GPU dev: two sizes of each
    kind, a short and a long kernel."""
    out = {}
    for n in (4096, 8192):
        a = torch.randn(n, n, dtype=torch.bfloat16, device=dev)
        b = torch.randn(n, n, dtype=torch.bfloat16, device=dev)
        out[f"matmul_{n}x{n}x{n}_bf16"] = lambda a=a, b=b: torch.matmul(a, b)
    for seq in (2048, 8192):
        q, k, v = (torch.randn(1, 32, seq, 128, dtype=torch.bfloat16, device=dev)
                   for _ in range(3))

        def attention(q=q, k=k, v=v):
            with torch.nn.attention.sdpa_kernel(torch.nn.attention.SDPBackend.FLASH_ATTENTION):
                F.scaled_dot_product_attention(q, k, v, is_causal=True)

        out[f"sdpa_flash_causal_1x32x{seq}x128_bf16"] = attention
    for mi in (32, 256):
        x = torch.randn(mi << 20, dtype=torch.bfloat16, device=dev)
        y = torch.randn(mi << 20, dtype=torch.bfloat16, device=dev)
        z = torch.empty_like(x)
        out[f"add_{mi}Mi_bf16"] = lambda x=x, y=y, z=z: torch.add(x, y, out=z)
    return out


def main():
    if torch.cuda.device_count() < 2:
        print("collective_behind_kernels: needs 2 GPUs", file=sys.stderr)
        sys.exit(2)
    devs = [0, 1]
    lo, hi = torch.cuda.Stream.priority_range()
    comm = [torch.cuda.Stream(device=d, priority=hi) for d in devs]
    compute = [torch.cuda.Stream(device=d, priority=lo) for d in devs]
    tag = gpu_tag()
    launch = [kernels(d) for d in devs]
    print("gpu,driver,cuda,nccl,kernel,kernel_alone_us,kernel_beside_us,collective,coll_bytes,"
          "coll_alone_us,coll_behind_us,behind_over_alone,rule_us,behind_over_rule,samples")
    for kind, coll_name, size in [(k, c, b) for k in launch[0] for c in COLLECTIVES for b in SIZES]:
        if coll_name == "allreduce":
            bufs = [torch.zeros(size // 4, dtype=torch.float32, device=d) for d in devs]

            def collective(bufs=bufs):
                nccl.all_reduce(bufs, streams=comm)
        else:
            ins = [torch.zeros(size // 4 // len(devs), dtype=torch.float32, device=d) for d in devs]
            outs = [torch.zeros(size // 4, dtype=torch.float32, device=d) for d in devs]

            def collective(ins=ins, outs=outs):
                nccl.all_gather(ins, outs, streams=comm)

        # Warm both, then size the burst from the kernel's time alone.
        for d in devs:
            with torch.cuda.device(d), torch.cuda.stream(compute[d]):
                for _ in range(3):
                    launch[d][kind]()
        collective()
        for d in devs:
            torch.cuda.synchronize(d)
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        with torch.cuda.stream(compute[0]):
            e0.record()
            launch[0][kind]()
            e1.record()
        e1.synchronize()
        kernel_ms = e0.elapsed_time(e1)
        with torch.cuda.stream(comm[0]):
            e0.record()
        collective()
        with torch.cuda.stream(comm[0]):
            e1.record()
        e1.synchronize()
        coll_ms = e0.elapsed_time(e1)
        # Enough kernels to outlast the collectives, even at twice their time alone or
        # one kernel each.
        burst = max(COLLS, math.ceil(2 * (COLLS + 1) * coll_ms / kernel_ms)) + 4
        coll_alone, coll_behind, k_alone, k_beside = [], [], [], []
        for r in range(ROUNDS):
            for variant in range(2):
                behind = (variant + r) % 2 == 1
                cev = [torch.cuda.Event(enable_timing=True) for _ in range(COLLS + 1)]
                kev = []
                if behind:
                    starts = []
                    for d in devs:
                        with torch.cuda.device(d), torch.cuda.stream(compute[d]):
                            launch[d][kind]()
                            started = torch.cuda.Event()
                            started.record()
                            starts.append(started)
                            if d == 0:
                                kev = [torch.cuda.Event(enable_timing=True)
                                       for _ in range(burst)]
                                kev[0].record()
                            for i in range(1, burst):
                                launch[d][kind]()
                                if d == 0:
                                    kev[i].record()
                    for d in devs:
                        comm[d].wait_event(starts[d])
                collective()  # untimed: absorbs the GPUs' skew
                with torch.cuda.stream(comm[0]):
                    cev[0].record()
                for i in range(COLLS):
                    collective()
                    with torch.cuda.stream(comm[0]):
                        cev[i + 1].record()
                for d in devs:
                    torch.cuda.synchronize(d)
                times = [1e3 * cev[i].elapsed_time(cev[i + 1]) for i in range(COLLS)]
                (coll_behind if behind else coll_alone).extend(times)
                if behind:
                    k_beside.extend(1e3 * kev[i].elapsed_time(kev[i + 1])
                                    for i in range(len(kev) - 1))
        t = statistics.median(coll_alone)
        tb = statistics.median(coll_behind)
        p = statistics.median(k_beside)
        rule = math.ceil(t / p) * p
        print(f"{tag},{kind},{1e3 * kernel_ms:.1f},{p:.1f},{coll_name},{size},{t:.1f},{tb:.1f},{tb / t:.2f},"
              f"{rule:.1f},{tb / rule:.2f},{len(coll_behind)}", flush=True)


if __name__ == "__main__":
    main()
