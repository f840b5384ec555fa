#!/usr/bin/env python3
"""Causal self-attention on one GPU through PyTorch's scaled_dot_product_attention, per backend,
head dimension and sequence length: how long the forward and the forward + backward take.

Why: the profiles' attention curves were timed with one backend (SDPA's FlashAttention-2) at
one head dimension (128). Transformer Engine, which the NeMo / Megatron-Bridge runs use, picks
cuDNN's fused attention on Hopper when both are available
(transformer_engine/pytorch/attention/dot_product_attention/utils.py,
get_attention_backend: "Disabling FlashAttention to give FusedAttention preference on Hopper+
for performance reasons"); SDPA's cuDNN backend runs cuDNN's fused attention as well. And a
head dimension other than 128 (GPT-OSS: 64) changes the work per score element: the matrix
products do 4 d FLOPs per element of the score matrix, the softmax one exponential, whatever
d is.

Shapes: tokens per call fixed (--tokens, default 16384 = batch x sequence), heads x head_dim =
--width (default 4096, a 4096-wide layer's attention on one rank), bf16, causal, q/k/v of the
same head dimension, as many key/value heads as query heads.

With --heads-list N1,N2,...: one sequence per call (batch 1) with each head count instead, to
see how a call with few query tiles (b x heads x s / 128 of them, against the GPU's SMs) runs.

Prints CSV: gpu,backend,batch,heads,seq,head_dim,causal,fwd_us,fwdbwd_us,fwd_flops,wrong
  fwd_flops: 2 matrix products of 2 s^2 d FLOPs each per (batch, head), halved for causal
  (the count the simulator uses); fwd_us / fwdbwd_us medians of --reps timings (CUDA events
  around --calls calls back to back, per call) after --warmup; wrong: non-finite outputs or gradients (0 when the call worked).
  A backend that refuses a shape prints no row for it (reported on stderr).
"""
import argparse
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

BACKENDS = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION}


def median_us(fn, warmup, reps, calls):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(calls):
            fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3 / calls)
    times.sort()
    return times[len(times) // 2]


def probe(gpu, name, b, heads, s, d, warmup, reps, calls):
    shape = (b, heads, s, d)
    q, k, v = (torch.randn(shape, device="cuda", dtype=torch.bfloat16, requires_grad=True)
               for _ in range(3))
    grad = torch.randn(shape, device="cuda", dtype=torch.bfloat16)

    def fwd():
        with sdpa_kernel([BACKENDS[name]]):
            return F.scaled_dot_product_attention(q, k, v, is_causal=True)

    def fwd_bwd():
        q.grad = k.grad = v.grad = None
        fwd().backward(grad)

    try:
        out = fwd()
        fwd_bwd()
    except RuntimeError as e:
        print(f"attention_probe: {name} d={d} s={s} heads={heads}: {str(e).splitlines()[0]}",
              file=sys.stderr)
        return
    wrong = int(not torch.isfinite(out).all().item()) + sum(
        int(not torch.isfinite(t.grad).all().item()) for t in (q, k, v))
    with torch.no_grad():
        t_fwd = median_us(fwd, warmup, reps, calls)
    t_fb = median_us(fwd_bwd, warmup, reps, calls)
    flops = 2 * 2 * b * heads * s * s * d / 2
    print(f"{gpu},{name},{b},{heads},{s},{d},1,{t_fwd:.2f},{t_fb:.2f},{flops:.6g},{wrong}",
          flush=True)
    del q, k, v, grad, out
    torch.cuda.empty_cache()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tokens", type=int, default=16384)
    ap.add_argument("--width", type=int, default=4096)
    ap.add_argument("--head-dims", default="64,96,128,192,256")
    ap.add_argument("--seqs", default="1024,2048,4096,8192,16384")
    ap.add_argument("--backends", default="flash,cudnn")
    ap.add_argument("--heads-list", default="",
                    help="instead of --tokens/--width: one sequence per call (batch 1) with each of "
                         "these head counts, to see how few query tiles a call can have")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--calls", type=int, default=1,
                    help="calls back to back between the two events of one timing: with more "
                         "than one the host's per-call work overlaps the GPU's, so a call shorter "
                         "than it still times the GPU")
    args = ap.parse_args()

    gpu = torch.cuda.get_device_name(0)
    print("gpu,backend,batch,heads,seq,head_dim,causal,fwd_us,fwdbwd_us,fwd_flops,wrong")
    for name in args.backends.split(","):
        for d in (int(x) for x in args.head_dims.split(",")):
            for s in (int(x) for x in args.seqs.split(",")):
                if args.heads_list:
                    calls = [(1, int(h)) for h in args.heads_list.split(",")]
                else:
                    calls = [(max(1, args.tokens // s), args.width // d)]
                for b, heads in calls:
                    probe(gpu, name, b, heads, s, d, args.warmup, args.reps, args.calls)


if __name__ == "__main__":
    main()
