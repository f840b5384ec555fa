#!/usr/bin/env python3
"""How much a fused attention kernel slows while NCCL moves data beside it, the counterpart
of overlap-bench's GEMM interference rows and interference-memory-probe's elementwise rows.

One process, 2 GPUs: torch.cuda.nccl.all_reduce over both GPUs' buffers runs back to back on
each GPU's highest-priority stream, and a burst of
torch.nn.functional.scaled_dot_product_attention calls (bf16, causal, flash backend) runs on
GPU 0's default-priority stream, each timed by CUDA events; the same burst alone alternates
with it round by round. CSV on stdout:
gpu,driver,cuda,nccl,victim,batch,heads,seq,head_dim,coll_bytes,alone_us,beside_us,ratio,
samples
"""
import statistics
import sys

import torch
import torch.cuda.nccl as nccl
import torch.nn.functional as F
from torch_gpu_tag import gpu_tag

ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 6
BURST = 30
COLL_BYTES = 128 << 20
# (batch, heads, seq, head_dim): kernels from a few us to a few ms.
SHAPES = [(1, 8, 1024, 128), (1, 16, 2048, 128), (1, 32, 4096, 128), (2, 32, 4096, 128),
          (1, 64, 8192, 128)]


def main():
    if torch.cuda.device_count() < 2:
        print("attention_beside_nccl: needs 2 GPUs", file=sys.stderr)
        sys.exit(2)
    devs = [0, 1]
    lo, hi = torch.cuda.Stream.priority_range()
    comm = [torch.cuda.Stream(device=d, priority=hi) for d in devs]
    compute = torch.cuda.Stream(device=0, priority=lo)
    bufs = [torch.zeros(COLL_BYTES // 4, dtype=torch.float32, device=d) for d in devs]
    tag = gpu_tag()

    def collective():
        nccl.all_reduce(bufs, streams=comm)

    print("gpu,driver,cuda,nccl,victim,batch,heads,seq,head_dim,coll_bytes,alone_us,beside_us,"
          "ratio,samples")
    for b, h, s, d in SHAPES:
        q, k, v = (torch.randn(b, h, s, d, dtype=torch.bfloat16, device=0) for _ in range(3))
        ev = [torch.cuda.Event(enable_timing=True) for _ in range(BURST + 1)]

        def victim():
            with torch.nn.attention.sdpa_kernel(torch.nn.attention.SDPBackend.FLASH_ATTENTION):
                F.scaled_dot_product_attention(q, k, v, is_causal=True)

        with torch.cuda.stream(compute):
            for _ in range(3):
                victim()
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record(compute)
            for _ in range(BURST):
                victim()
            e1.record(compute)
        e1.synchronize()
        burst_ms = e0.elapsed_time(e1)
        collective()
        c0, c1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        c0.record(comm[0])
        collective()
        c1.record(comm[0])
        c1.synchronize()
        coll_ms = c0.elapsed_time(c1)
        colls = max(2, int(2.5 * burst_ms / max(coll_ms, 1e-3)) + 2)
        alone, beside = [], []
        for r in range(ROUNDS):
            for variant in range(2):
                is_beside = (variant + r) % 2 == 0
                if is_beside:
                    collective()
                    lead = torch.cuda.Event()
                    lead.record(comm[0])
                    for _ in range(colls - 1):
                        collective()
                    compute.wait_event(lead)
                with torch.cuda.stream(compute):
                    ev[0].record(compute)
                    for i in range(BURST):
                        victim()
                        ev[i + 1].record(compute)
                for dv in devs:
                    torch.cuda.synchronize(dv)
                times = [1e3 * ev[i].elapsed_time(ev[i + 1]) for i in range(BURST)]
                (beside if is_beside else alone).extend(times)
        a, bs = statistics.median(alone), statistics.median(beside)
        print(f"{tag},sdpa_flash_causal_bf16,{b},{h},{s},{d},{COLL_BYTES},{a:.2f},{bs:.2f},"
              f"{bs / a:.3f},{len(alone)}", flush=True)


if __name__ == "__main__":
    main()
