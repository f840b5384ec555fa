#!/usr/bin/env python3
"""One MoE transformer layer in plain PyTorch on one GPU: how long its forward and backward take
per microbatch, eager (the host launching every kernel as it goes) against the GPU's own kernel
time (torch.profiler's device durations), to tell host-bound from GPU-bound layers.

The layer follows Megatron-LM's MoE layer with the all-to-all dispatcher, minus the exchange:
RMSNorm, QKV projection (GQA), causal attention (F.scaled_dot_product_attention), output
projection, RMSNorm, router (softmax, top-k), a sort of the token copies by expert (the
permutation), one GEMM per local expert for fc1 (gate and up), SwiGLU, fc2, and the weighted
scatter back (the unpermutation). Routing is balanced, as the benchmarks force it: every local
expert receives tokens x top_k / local_experts rows. Weights and activations in bf16.

Prints CSV: gpu,model,tokens,hidden,heads,kv_heads,head_dim,experts_local,expert_ffn,top_k,
mode,time_us,kernels,kernel_us,wrong
  mode eager: wall time per forward+backward (CUDA events), kernels = launches per iteration,
  kernel_us = summed device time of those kernels (profiler); wrong = non-finite outputs.
  mode eager_sync: the same with the host waiting, once per forward, for the tokens per expert
  (a bincount of the router's top-k choices copied to the host), as Megatron-LM's all-to-all
  dispatcher does to size its exchange; the GPU then idles while the host issues what follows.
  mode graph: the forward and backward replayed as CUDA graphs
  (torch.cuda.make_graphed_callables): the same kernels with no host launches in between,
  the floor the two eager modes are measured against.
"""
import argparse
import sys

import torch
import torch.nn.functional as F

SHAPES = {
    # name: hidden, heads, kv_heads, head_dim, experts per rank (EP 8 of 128), expert ffn, top_k
    "qwen3-30b-a3b-ep8": (2048, 32, 4, 128, 16, 768, 8),
    "gpt-oss-120b-ep8": (2880, 64, 8, 64, 16, 2880, 4),
}


def rms_norm(x, w):
    return x * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-6).to(x.dtype) * w


class Layer(torch.nn.Module):
    def __init__(self, hidden, heads, kv_heads, head_dim, experts, ffn, top_k, experts_total):
        super().__init__()
        self.sync_counts = False
        dev, dt = "cuda", torch.bfloat16
        p = lambda *s: torch.nn.Parameter(torch.randn(*s, device=dev, dtype=dt) * 0.02)
        self.heads, self.kv_heads, self.head_dim, self.top_k = heads, kv_heads, head_dim, top_k
        self.experts, self.experts_total = experts, experts_total
        self.n1, self.n2 = p(hidden), p(hidden)
        self.qkv = p((heads + 2 * kv_heads) * head_dim, hidden)
        self.proj = p(hidden, heads * head_dim)
        self.router = p(experts_total, hidden)
        self.fc1 = torch.nn.ParameterList([p(2 * ffn, hidden) for _ in range(experts)])
        self.fc2 = torch.nn.ParameterList([p(hidden, ffn) for _ in range(experts)])

    def forward(self, x):
        s, h = x.shape
        y = rms_norm(x, self.n1)
        qkv = F.linear(y, self.qkv)
        q, k, v = qkv.split(
            [self.heads * self.head_dim, self.kv_heads * self.head_dim, self.kv_heads * self.head_dim],
            dim=-1)
        q = q.view(1, s, self.heads, self.head_dim).transpose(1, 2)
        k = k.view(1, s, self.kv_heads, self.head_dim).transpose(1, 2)
        v = v.view(1, s, self.kv_heads, self.head_dim).transpose(1, 2)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        x = x + F.linear(a.transpose(1, 2).reshape(s, -1), self.proj)
        y = rms_norm(x, self.n2)
        probs = torch.softmax(F.linear(y, self.router).float(), dim=-1)
        weight, chosen = torch.topk(probs, self.top_k, dim=-1)
        if self.sync_counts:
            # The dispatcher's device-to-host copy of the tokens per expert (a host sync).
            torch.bincount(chosen.flatten(), minlength=self.experts_total).tolist()
        # Balanced routing: copy c of token t goes to local expert (t * top_k + c) mod experts.
        rows = s * self.top_k
        order = torch.arange(rows, device=x.device).view(self.experts, -1).t().reshape(-1)
        tokens = y.repeat_interleave(self.top_k, dim=0)[order]  # permutation
        out = []
        for e, chunk in enumerate(tokens.chunk(self.experts)):
            gate, up = F.linear(chunk, self.fc1[e]).chunk(2, dim=-1)
            out.append(F.linear(F.silu(gate) * up, self.fc2[e]))
        moe = torch.empty_like(tokens)
        moe[order] = torch.cat(out)  # unpermutation
        moe = (moe.view(s, self.top_k, h) * weight.to(moe.dtype).unsqueeze(-1)).sum(1)
        return x + moe


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokens", type=int, default=4096)
    ap.add_argument("--iterations", type=int, default=20)
    ap.add_argument("--shapes", default=",".join(SHAPES))
    ap.add_argument("--modes", default="eager,eager_sync,graph",
                    help="eager, eager_sync, graph (comma-separated)")
    ap.add_argument("--kernels", help="also write each shape's kernels (name, calls, device "
                    "us per iteration) to this CSV")
    args = ap.parse_args()
    gpu = torch.cuda.get_device_name()
    print("gpu,model,tokens,hidden,heads,kv_heads,head_dim,experts_local,expert_ffn,top_k,mode,"
          "time_us,kernels,kernel_us,wrong")
    for name in args.shapes.split(","):
        hidden, heads, kv_heads, head_dim, experts, ffn, top_k = SHAPES[name]
        for mode in args.modes.split(","):
            torch.manual_seed(0)
            layer = Layer(hidden, heads, kv_heads, head_dim, experts, ffn, top_k, 128)
            layer.sync_counts = mode == "eager_sync"
            x = torch.randn(args.tokens, hidden, device="cuda", dtype=torch.bfloat16, requires_grad=True)
            run = layer
            if mode == "graph":
                try:
                    run = torch.cuda.make_graphed_callables(layer, (x,))
                except Exception as e:  # report the capture's failure and go on
                    print(f"# {name} graph capture failed: {e}".replace("\n", " "), file=sys.stderr)
                    continue

            def step():
                out = run(x)
                out.backward(torch.ones_like(out))
                return out

            for _ in range(3):
                out = step()
            torch.cuda.synchronize()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(args.iterations):
                out = step()
            end.record()
            torch.cuda.synchronize()
            wall_us = start.elapsed_time(end) * 1000 / args.iterations
            wrong = int((~torch.isfinite(out.float())).sum().item())
            with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU,
                                                    torch.profiler.ProfilerActivity.CUDA]) as prof:
                for _ in range(5):
                    step()
                torch.cuda.synchronize()
            kernels = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
            kernel_us = sum(getattr(e, "device_time", 0.0) for e in kernels) / 5
            print(f"{gpu},{name},{args.tokens},{hidden},{heads},{kv_heads},{head_dim},{experts},{ffn},"
                  f"{top_k},{mode},{wall_us:.1f},{len(kernels) // 5},{kernel_us:.1f},{wrong}")
            if args.kernels and mode == "eager":
                per = {}
                for e in kernels:
                    calls, us = per.get(e.name, (0, 0.0))
                    per[e.name] = (calls + 1, us + getattr(e, "device_time", 0.0))
                with open(args.kernels, "a") as f:
                    if f.tell() == 0:
                        f.write("gpu,model,kernel,calls_per_iteration,device_us_per_iteration\n")
                    for k, (calls, us) in sorted(per.items(), key=lambda kv: -kv[1][1]):
                        name_q = '"' + k.replace('"', "'") + '"'
                        f.write(f"{gpu},{name},{name_q},{calls / 5:g},{us / 5:.1f}\n")
            sys.stdout.flush()
            del layer, x
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
