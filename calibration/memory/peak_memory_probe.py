#!/usr/bin/env python3
"""Peak device memory of real training steps, to validate workloads/memory_model.cpp.

A Llama-style decoder (RMSNorm, SwiGLU, grouped-query attention, RoPE, untied output
layer) trained the way the memory model assumes Megatron-LM trains it:
  - bf16 weights; an fp32 main gradient per parameter (a post-accumulate hook adds each
    bf16 gradient into it and drops the bf16 one, as Megatron's main_grad buffer does);
    fp32 master weights with AdamW's m and v (torch.optim.AdamW(fused=True) over the fp32
    masters), copied back into the bf16 weights after the step: 18 bytes per parameter,
    Megatron-LM's "bf16 param, fp32 grads" row without the distributed optimizer;
  - flash attention through torch.nn.functional.scaled_dot_product_attention (the flash
    backend forced, GQA with enable_gqa; falls back to repeating K and V, recorded in the
    attention column);
  - RMSNorm and SwiGLU as autograd functions that keep what fused kernels keep (the norm's
    input and fp32 1/rms; the SwiGLU's gate and up outputs), separate Q, K, V projections
    so that no view keeps a fused QKV output alive, and a cross entropy that keeps only
    the fp32 softmax (as Megatron's vocab-parallel cross entropy);
  - recompute none, or full: torch.utils.checkpoint around every layer (non-reentrant).
One warm-up step creates the Adam states; the peak statistics are then reset and one more
full step (forward, backward, optimizer step) is measured. Every configuration runs in a
fresh process (so the allocator's reserved pool starts empty); configurations are spread
over the visible GPUs, one process per GPU at a time.

CSV (tag columns first, one row per configuration):
  gpu,torch,hidden,layers,heads,kv_heads,head_dim,ffn_hidden,vocab,seq_len,micro_batch,
  recompute,attention,params,static_bytes,max_allocated_bytes,max_reserved_bytes,
  device_used_bytes,device_total_bytes,step_s,loss,wrong
static_bytes: allocated before the measured step (weights, main grads, masters, Adam
states); device_used_bytes: total - free after the step (the CUDA context and libraries
included); wrong: 1 when the loss is not finite or did not change between the steps.

Usage: python3 peak_memory_probe.py OUT.csv            (all configurations, all GPUs)
       python3 peak_memory_probe.py --one JSON          (one configuration; prints a row)
"""
import csv
import json
import math
import os
import subprocess
import sys
import time

VOCAB = 32000  # Llama 2's vocabulary
CHILD_TIMEOUT_S = 120

# (hidden, layers, seq_len, micro_batch, recompute); heads = hidden / 128, kv_heads =
# heads / 4, ffn_hidden as Llama 2 7B's 11008 for 4096 (2.6875 h), 5632 for 2048.
CONFIGS = [
    (2048, 8, 2048, 1, "none"), (2048, 8, 2048, 4, "none"), (2048, 8, 4096, 1, "none"),
    (2048, 8, 4096, 2, "none"), (2048, 8, 4096, 4, "none"), (2048, 8, 4096, 4, "full"),
    (2048, 8, 2048, 4, "full"),
    (2048, 16, 2048, 2, "none"), (2048, 16, 4096, 2, "none"), (2048, 16, 4096, 4, "full"),
    (2048, 16, 4096, 1, "full"),
    (4096, 4, 2048, 1, "none"), (4096, 4, 2048, 4, "none"), (4096, 4, 4096, 2, "none"),
    (4096, 4, 4096, 4, "none"), (4096, 4, 4096, 4, "full"),
    (4096, 8, 2048, 2, "none"), (4096, 8, 4096, 1, "none"), (4096, 8, 4096, 2, "none"),
    (4096, 8, 4096, 2, "full"),
    (4096, 16, 2048, 1, "none"), (4096, 16, 4096, 1, "none"), (4096, 16, 4096, 1, "full"),
    (4096, 16, 2048, 4, "full"),
]

FIELDS = ["gpu", "torch", "hidden", "layers", "heads", "kv_heads", "head_dim", "ffn_hidden",
          "vocab", "seq_len", "micro_batch", "recompute", "attention", "params",
          "static_bytes", "max_allocated_bytes", "max_reserved_bytes", "device_used_bytes",
          "device_total_bytes", "step_s", "loss", "wrong"]


def run_one(cfg):
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.utils.checkpoint import checkpoint

    hidden, layers, seq, mb, recompute = cfg
    heads = hidden // 128
    kv_heads = heads // 4
    head_dim = 128
    ffn = {2048: 5632, 4096: 11008}[hidden]
    dev = torch.device("cuda")
    bf16 = torch.bfloat16
    torch.manual_seed(0)

    class RmsNorm(torch.autograd.Function):
        # Keeps the bf16 input and fp32 1/rms, as fused RMSNorm kernels do.
        @staticmethod
        def forward(ctx, x, w):
            xf = x.float()
            rstd = torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-5)
            ctx.save_for_backward(x, rstd, w)
            return (xf * rstd).to(x.dtype) * w

        @staticmethod
        def backward(ctx, g):
            x, rstd, w = ctx.saved_tensors
            xf = x.float()
            xhat = xf * rstd
            gw = (g.float() * xhat).sum(dim=tuple(range(g.dim() - 1))).to(w.dtype)
            gx_hat = g.float() * w.float()
            gx = rstd * (gx_hat - xhat * (gx_hat * xhat).mean(-1, keepdim=True))
            return gx.to(x.dtype), gw

    class SwiGlu(torch.autograd.Function):
        # Keeps the gate and up outputs only (Megatron's fused bias_swiglu does the same).
        @staticmethod
        def forward(ctx, g, u):
            ctx.save_for_backward(g, u)
            return F.silu(g) * u

        @staticmethod
        def backward(ctx, grad):
            g, u = ctx.saved_tensors
            gf = g.float()
            sig = torch.sigmoid(gf)
            silu = gf * sig
            gg = grad.float() * u.float() * sig * (1 + gf * (1 - sig))
            gu = grad.float() * silu
            return gg.to(g.dtype), gu.to(u.dtype)

    class CrossEntropy(torch.autograd.Function):
        # Keeps only the fp32 softmax (Megatron's vocab-parallel cross entropy).
        @staticmethod
        def forward(ctx, logits, target):
            sm = logits.float()  # in place from here on: one fp32 copy at a time
            sm.sub_(sm.max(-1, keepdim=True).values)
            sm.exp_()
            sm.div_(sm.sum(-1, keepdim=True))
            loss = -torch.log(sm.gather(-1, target[:, None]).clamp_min(1e-30)).mean()
            ctx.save_for_backward(sm, target)
            return loss

        @staticmethod
        def backward(ctx, g):
            sm, target = ctx.saved_tensors
            sm.scatter_add_(-1, target[:, None],
                            torch.full((target.numel(), 1), -1.0, device=sm.device))
            sm.mul_(g / target.numel())
            return sm.to(bf16), None

    def linear(i, o):
        return torch.nn.Linear(i, o, bias=False, device=dev, dtype=bf16)

    pos = torch.arange(seq, device=dev, dtype=torch.float32)
    inv = 1.0 / (10000 ** (torch.arange(0, head_dim, 2, device=dev).float() / head_dim))
    ang = torch.outer(pos, inv)
    cos = torch.cat([ang.cos(), ang.cos()], -1).to(bf16)[:, None, :]  # s, 1, d
    sin = torch.cat([ang.sin(), ang.sin()], -1).to(bf16)[:, None, :]

    def rope(x):  # x: b, s, h, d
        x1, x2 = x.chunk(2, -1)
        return x * cos + torch.cat([-x2, x1], -1) * sin

    attention = {"impl": "flash_gqa"}

    def attend(q, k, v):  # b, h, s, d
        if attention["impl"] == "flash_gqa":
            with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
                return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        rep = heads // kv_heads
        k = k.repeat_interleave(rep, dim=1)
        v = v.repeat_interleave(rep, dim=1)
        with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
            return F.scaled_dot_product_attention(q, k, v, is_causal=True)

    class Layer(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.n1 = torch.nn.Parameter(torch.ones(hidden, device=dev, dtype=bf16))
            self.n2 = torch.nn.Parameter(torch.ones(hidden, device=dev, dtype=bf16))
            self.q = linear(hidden, heads * head_dim)
            self.k = linear(hidden, kv_heads * head_dim)
            self.v = linear(hidden, kv_heads * head_dim)
            self.o = linear(heads * head_dim, hidden)
            self.gate = linear(hidden, ffn)
            self.up = linear(hidden, ffn)
            self.down = linear(ffn, hidden)

        def forward(self, x):
            b, s, _ = x.shape
            y = RmsNorm.apply(x, self.n1)
            q = rope(self.q(y).view(b, s, heads, head_dim)).transpose(1, 2)
            k = rope(self.k(y).view(b, s, kv_heads, head_dim)).transpose(1, 2)
            v = self.v(y).view(b, s, kv_heads, head_dim).transpose(1, 2)
            a = attend(q, k, v).transpose(1, 2).reshape(b, s, heads * head_dim)
            x = x + self.o(a)
            y = RmsNorm.apply(x, self.n2)
            return x + self.down(SwiGlu.apply(self.gate(y), self.up(y)))

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = torch.nn.Embedding(VOCAB, hidden, device=dev, dtype=bf16)
            self.layers = torch.nn.ModuleList([Layer() for _ in range(layers)])
            self.norm = torch.nn.Parameter(torch.ones(hidden, device=dev, dtype=bf16))
            self.out = linear(hidden, VOCAB)

        def forward(self, tokens, target):
            x = self.emb(tokens)
            for layer in self.layers:
                if recompute == "full":
                    x = checkpoint(layer, x, use_reentrant=False)
                else:
                    x = layer(x)
            logits = self.out(RmsNorm.apply(x, self.norm))
            return CrossEntropy.apply(logits.view(-1, VOCAB), target.view(-1))

    # GQA through the flash backend, or repeated K/V where this PyTorch lacks it.
    try:
        t = torch.randn(1, heads, 256, head_dim, device=dev, dtype=bf16)
        t2 = torch.randn(1, kv_heads, 256, head_dim, device=dev, dtype=bf16)
        attend(t, t2, t2)
    except RuntimeError:
        attention["impl"] = "flash_repeat_kv"
    torch.cuda.synchronize()

    model = Model()
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() > 1:
                p.normal_(0, 0.02)
    params = list(model.parameters())
    masters = [p.detach().float().clone() for p in params]
    for p, mp in zip(params, masters):
        p.main_grad = torch.zeros_like(mp)
        mp.grad = p.main_grad

        def hook(param):
            param.main_grad.add_(param.grad)
            param.grad = None

        p.register_post_accumulate_grad_hook(hook)
    opt = torch.optim.AdamW(masters, lr=1e-4, fused=True)
    tokens = torch.randint(0, VOCAB, (mb, seq), device=dev)
    target = torch.randint(0, VOCAB, (mb, seq), device=dev)

    def step():
        loss = model(tokens, target)
        loss.backward()
        opt.step()
        with torch.no_grad():
            for p, mp in zip(params, masters):
                p.copy_(mp)
                p.main_grad.zero_()
        return loss.item()

    loss0 = step()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    static = torch.cuda.memory_allocated()
    t0 = time.perf_counter()
    loss1 = step()
    torch.cuda.synchronize()
    step_s = time.perf_counter() - t0
    free, total = torch.cuda.mem_get_info()
    wrong = int(not (math.isfinite(loss1) and loss1 != loss0))
    return {
        "gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "hidden": hidden,
        "layers": layers, "heads": heads, "kv_heads": kv_heads, "head_dim": head_dim,
        "ffn_hidden": ffn, "vocab": VOCAB, "seq_len": seq, "micro_batch": mb,
        "recompute": recompute, "attention": attention["impl"],
        "params": sum(p.numel() for p in params), "static_bytes": static,
        "max_allocated_bytes": torch.cuda.max_memory_allocated(),
        "max_reserved_bytes": torch.cuda.max_memory_reserved(),
        "device_used_bytes": total - free, "device_total_bytes": total,
        "step_s": f"{step_s:.4f}", "loss": f"{loss1:.5f}", "wrong": wrong,
    }


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--one":
        try:
            row = run_one(tuple(json.loads(sys.argv[2])))
        except Exception as e:  # an out-of-memory or other failure: one wrong row
            print(f"error: {e!r}"[:400], file=sys.stderr)
            sys.exit(3)
        print("ROW " + json.dumps(row), flush=True)
        return
    out = sys.argv[1]
    gpus = int(subprocess.run([sys.executable, "-c", "import torch; print(torch.cuda.device_count())"],
                              capture_output=True, text=True).stdout.strip() or 1)
    pending = list(enumerate(CONFIGS))
    running = {}  # gpu -> (index, cfg, Popen)
    started = {}
    rows = {}
    while pending or running:
        for gpu in range(gpus):
            if gpu not in running and pending:
                i, cfg = pending.pop(0)
                env = dict(os.environ, CUDA_VISIBLE_DEVICES=str(gpu), PYTHONUNBUFFERED="1")
                p = subprocess.Popen([sys.executable, __file__, "--one", json.dumps(cfg)], env=env,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                running[gpu] = (i, cfg, p)
                started[gpu] = time.time()
        time.sleep(0.2)
        for gpu in list(running):
            i, cfg, p = running[gpu]
            if p.poll() is None:
                if time.time() - started[gpu] > CHILD_TIMEOUT_S:
                    p.kill()  # reported as a failed configuration below
                continue
            so, se = p.communicate()
            del running[gpu]
            line = next((l for l in so.splitlines() if l.startswith("ROW ")), None)
            if line:
                rows[i] = json.loads(line[4:])
            else:
                h, L, s, b, r = cfg
                rows[i] = {"hidden": h, "layers": L, "seq_len": s, "micro_batch": b, "recompute": r,
                           "wrong": 1}
                print(f"config {cfg} failed: {se.strip()[-400:]}", file=sys.stderr)
            print(f"done {len(rows)}/{len(CONFIGS)} {cfg}", file=sys.stderr, flush=True)
            write_csv(out, rows)  # after every configuration: a cut-off run keeps its rows


def write_csv(out, rows):
    tmp = out + ".tmp"
    with open(tmp, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS, restval="", lineterminator="\n")
        w.writeheader()
        for i in sorted(rows):
            w.writerow(rows[i])
    os.replace(tmp, out)


if __name__ == "__main__":
    main()
