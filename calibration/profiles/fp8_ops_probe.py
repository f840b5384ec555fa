#!/usr/bin/env python3
"""FP8 quantisation probe: the memory-bound kernels an FP8 training step adds around its GEMMs.

Transformer Engine's FP8 recipes launch, besides the FP8 GEMMs: a cast of each GEMM
input from bf16 to fp8 (e4m3) with a scale, which also records the input's amax; a
fused cast + transpose where the backward needs the tensor's transpose (weights and
saved activations); an amax-only pass where the scale is computed from the current
tensor (current scaling); one small kernel that rolls the amax histories and updates
the scales (delayed scaling); and, for block scaling (1 x 128 activation runs, 128 x 128
weight blocks), a quantiser that writes per-block scales. This probe times one kernel of
each kind on one GPU at the tensor shapes of the shipped workloads' tensor-parallel shards
(GPT-3 175B and Llama 3 70B under TP8), so the simulator's memory-bound model
(bytes / (memory bandwidth x efficiency(bytes)) + launch overhead) can be checked
against them.

The kernels are written in Triton here (one kernel per operation, vectorised loads, the
same bytes read and written as Transformer Engine's kernels); if Transformer Engine is
importable its own quantisers are timed as well (impl=te). PyTorch eager equivalents
(impl=torch) and a bf16 copy of the same tensor (the bandwidth reference) are timed
beside them. Each time is the median of CUDA-event-timed batches of back-to-back calls
(as calibration/profiles/roofline_probe.py does), so the per-call time includes the
launch gap between kernels. One CSV row per (op, impl, shape):

  gpu,op,impl,rows,cols,elements,bytes_read,bytes_written,bytes,time_s,achieved_Bps,max_abs_err

Usage: python3 fp8_ops_probe.py OUT.csv
"""
import csv
import statistics
import sys

import torch
import triton
import triton.language as tl

FP8_MAX = 448.0  # largest finite e4m3 value
E4M3_MAX = tl.constexpr(448.0)  # the same, as Triton kernels read globals


def time_s(fn, warmup=3, reps=10):
    """Median seconds per call over batches of >= ~1 ms of back-to-back calls, issued from
    Python (a small kernel's time is then the host's launch cost, ~10 us for Triton)."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    start.record()
    fn()
    end.record()
    end.synchronize()
    inner = max(1, min(500, int(1e-3 / max(start.elapsed_time(end) * 1e-3, 1e-7))))
    times = []
    for _ in range(reps):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(inner):
            fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e-3 / inner)
    return statistics.median(times)


def graph_time_s(fn, calls=100, reps=10):
    """Median seconds per call of `calls` back-to-back calls captured in one CUDA graph:
    the GPU's time per kernel including the gap between kernels (as the simulator's
    launch_overhead_s, measured the same way), without the host's launch cost."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        fn()
        with torch.cuda.graph(g):
            for _ in range(calls):
                fn()
    torch.cuda.current_stream().wait_stream(s)
    g.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        g.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e-3 / calls)
    del g
    return statistics.median(times)


@triton.jit
def _cast_kernel(x_ptr, y_ptr, scale_ptr, amax_ptr, n, BLOCK: tl.constexpr):
    # Delayed scaling's cast: y = sat(x * scale) in e4m3, amax(|x|) recorded for the history.
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    scale = tl.load(scale_ptr)
    y = tl.clamp(x * scale, -E4M3_MAX, E4M3_MAX)
    tl.store(y_ptr + offs, y.to(tl.float8e4nv), mask=mask)
    tl.atomic_max(amax_ptr, tl.max(tl.abs(x), axis=0))


@triton.jit
def _amax_kernel(x_ptr, amax_ptr, n, BLOCK: tl.constexpr):
    # Current scaling's first pass: amax(|x|) only.
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0).to(tl.float32)
    tl.atomic_max(amax_ptr, tl.max(tl.abs(x), axis=0))


@triton.jit
def _cast_transpose_kernel(x_ptr, y_ptr, yt_ptr, scale_ptr, amax_ptr, rows, cols,
                           BR: tl.constexpr, BC: tl.constexpr):
    # Cast and transpose in one pass: y = fp8(x) (rows x cols), yt = fp8(x)^T (cols x rows).
    pr = tl.program_id(0)
    pc = tl.program_id(1)
    r = pr * BR + tl.arange(0, BR)
    c = pc * BC + tl.arange(0, BC)
    mask = (r[:, None] < rows) & (c[None, :] < cols)
    x = tl.load(x_ptr + r[:, None] * cols + c[None, :], mask=mask, other=0.0).to(tl.float32)
    scale = tl.load(scale_ptr)
    q = tl.clamp(x * scale, -E4M3_MAX, E4M3_MAX).to(tl.float8e4nv)
    tl.store(y_ptr + r[:, None] * cols + c[None, :], q, mask=mask)
    tl.store(yt_ptr + c[None, :] * rows + r[:, None], q, mask=mask)
    tl.atomic_max(amax_ptr, tl.max(tl.max(tl.abs(x), axis=1), axis=0))


@triton.jit
def _block_quant_kernel(x_ptr, y_ptr, s_ptr, yt_ptr, st_ptr, rows, cols,
                        B: tl.constexpr, TRANSPOSE: tl.constexpr, SQUARE: tl.constexpr):
    # Block scaling on a B x B tile. SQUARE: one scale per tile (weights, 128 x 128 blocks);
    # else one scale per 1 x B run of a row (activations), and with TRANSPOSE also the
    # transposed copy scaled per 1 x B run of a column (what wgrad reads).
    pr = tl.program_id(0)
    pc = tl.program_id(1)
    r = pr * B + tl.arange(0, B)
    c = pc * B + tl.arange(0, B)
    x = tl.load(x_ptr + r[:, None] * cols + c[None, :]).to(tl.float32)
    a = tl.abs(x)
    if SQUARE:
        amax = tl.maximum(tl.max(tl.max(a, axis=1), axis=0), 1e-12)
        q = tl.clamp(x * (E4M3_MAX / amax), -E4M3_MAX, E4M3_MAX).to(tl.float8e4nv)
        tl.store(y_ptr + r[:, None] * cols + c[None, :], q)
        tl.store(s_ptr + pr * (cols // B) + pc, amax / E4M3_MAX)
        if TRANSPOSE:
            tl.store(yt_ptr + c[None, :] * rows + r[:, None], q)
    else:
        ramax = tl.maximum(tl.max(a, axis=1), 1e-12)
        q = tl.clamp(x * (E4M3_MAX / ramax)[:, None], -E4M3_MAX, E4M3_MAX).to(tl.float8e4nv)
        tl.store(y_ptr + r[:, None] * cols + c[None, :], q)
        tl.store(s_ptr + r * (cols // B) + pc, ramax / E4M3_MAX)
        if TRANSPOSE:
            camax = tl.maximum(tl.max(a, axis=0), 1e-12)
            qt = tl.clamp(x * (E4M3_MAX / camax)[None, :], -E4M3_MAX, E4M3_MAX).to(tl.float8e4nv)
            tl.store(yt_ptr + c[None, :] * rows + r[:, None], qt)
            tl.store(st_ptr + c * (rows // B) + pr, camax / E4M3_MAX)


@triton.jit
def _scale_update_kernel(hist_ptr, amax_ptr, scale_ptr, hist_len, BLOCK: tl.constexpr):
    # Delayed scaling's update, one program per tensor: roll the amax history (newest
    # amax into slot 0), scale = E4M3_MAX / max(history).
    t = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < hist_len
    h = tl.load(hist_ptr + t * hist_len + offs, mask=mask, other=0.0)
    cur = tl.load(amax_ptr + t)
    prev = tl.load(hist_ptr + t * hist_len + offs - 1, mask=mask & (offs > 0), other=0.0)
    rolled = tl.where(offs == 0, cur, prev)
    tl.store(hist_ptr + t * hist_len + offs, rolled, mask=mask)
    m = tl.maximum(tl.max(tl.maximum(h, rolled), axis=0), 1e-12)
    tl.store(scale_ptr + t, E4M3_MAX / m)


def guarded(what, fn):
    """Runs one case; a failure is printed and skipped (the CSV then lacks that row)."""
    try:
        fn()
    except Exception as e:
        print(f"{what} failed: {type(e).__name__}: {e}", flush=True)


def main(out_path):
    dev = torch.device("cuda")
    gpu = torch.cuda.get_device_name(0).replace(",", " ")
    out = open(out_path, "w", newline="")
    writer = csv.DictWriter(out, fieldnames=[
        "gpu", "op", "impl", "rows", "cols", "elements", "bytes_read", "bytes_written", "bytes",
        "timing", "time_s", "achieved_Bps", "max_abs_err"])
    writer.writeheader()

    def row(op, impl, rows, cols, bytes_read, bytes_written, timing, t, err):
        nbytes = bytes_read + bytes_written
        writer.writerow(dict(gpu=gpu, op=op, impl=impl, rows=rows, cols=cols,
                             elements=rows * cols, bytes_read=bytes_read,
                             bytes_written=bytes_written, bytes=nbytes, timing=timing,
                             time_s=t, achieved_Bps=nbytes / t if nbytes else 0.0,
                             max_abs_err=err))
        out.flush()
        print(f"{op:16s} {impl:6s} {timing:6s} {rows:6d}x{cols:<6d} {t * 1e6:9.2f} us "
              f"{(nbytes / t / 1e9) if nbytes else 0:8.1f} GB/s err={err:.3g}", flush=True)

    def add(op, impl, rows, cols, bytes_read, bytes_written, t, err=0.0, fn=None):
        """One row timed from Python (stream) and, given the call, one in a CUDA graph."""
        row(op, impl, rows, cols, bytes_read, bytes_written, "stream", t, err)
        if fn is not None:
            try:
                row(op, impl, rows, cols, bytes_read, bytes_written, "graph", graph_time_s(fn),
                    err)
            except Exception as e:
                print(f"{op} {impl}: graph capture failed: {type(e).__name__}: {e}", flush=True)

    te = None
    try:
        import transformer_engine.pytorch as te_pt  # noqa: F401
        import transformer_engine_torch as tex
        from transformer_engine.pytorch.tensor.float8_tensor import Float8Quantizer
        te = (tex, Float8Quantizer)
        print("transformer_engine found", flush=True)
    except Exception as e:  # reported: then only Triton and PyTorch rows
        print(f"transformer_engine not importable ({type(e).__name__}: {e}); "
              "timing Triton kernels and PyTorch ops", flush=True)

    # rows x cols of bf16 tensors: TP8 shards of GPT-3 175B (tokens 2048, hidden 12288,
    # no sequence parallelism) and Llama 3 70B (tokens 8192, hidden 8192, sequence-parallel
    # norms on 1024 tokens), activations (tokens x width) and weights (out x in), plus
    # small and large sizes to span the curve.
    shapes = [
        (1024, 1024), (2048, 1536), (1024, 8192), (8192, 1024), (1280, 8192),
        (2048, 6144), (8192, 3584), (4608, 12288), (7168, 8192), (8192, 8192),
        (2048, 12288), (6144, 12288), (12288, 6144), (16384, 8192), (256, 1024), (512, 512),
    ]
    fp8 = torch.float8_e4m3fn
    torch.manual_seed(0)
    for (m, k) in shapes:
        n = m * k
        x = torch.randn(m, k, device=dev, dtype=torch.bfloat16)
        ref = x.float().abs().max()
        scale = (FP8_MAX / ref).reshape(1).float()
        amax = torch.zeros(1, device=dev, dtype=torch.float32)
        y = torch.empty(m, k, device=dev, dtype=fp8)
        yt = torch.empty(k, m, device=dev, dtype=fp8)
        expect = (x.float() * scale).clamp(-FP8_MAX, FP8_MAX)

        def err(q):
            return float((q.float() - expect).abs().max() / FP8_MAX)

        cp = torch.empty_like(x)
        fcp = lambda: cp.copy_(x)
        guarded("copy", lambda: add("copy", "torch", m, k, 2 * n, 2 * n, time_s(fcp), fn=fcp))

        BLOCK = 4096
        grid = (triton.cdiv(n, BLOCK),)

        def cast():
            f = lambda: _cast_kernel[grid](x, y, scale, amax, n, BLOCK=BLOCK)
            t = time_s(f)
            add("cast", "triton", m, k, 2 * n, n, t, err(y), fn=f)

        def amax_only():
            f = lambda: _amax_kernel[grid](x, amax, n, BLOCK=BLOCK)
            t = time_s(f)
            add("amax", "triton", m, k, 2 * n, 0, t, abs(float(amax[0] - ref)), fn=f)

        def cast_transpose():
            g2 = (triton.cdiv(m, 64), triton.cdiv(k, 64))
            f = lambda: _cast_transpose_kernel[g2](x, y, yt, scale, amax, m, k, BR=64, BC=64)
            t = time_s(f)
            add("cast_transpose", "triton", m, k, 2 * n, 2 * n, t,
                max(err(y), float((yt.float().t() - expect).abs().max() / FP8_MAX)), fn=f)

        guarded("cast", cast)
        guarded("amax", amax_only)
        guarded("cast_transpose", cast_transpose)

        # Block scaling (fp32 scales): activations 1 x 128 row-wise only, activations
        # 1 x 128 with the transposed copy, weights 128 x 128 with the transposed copy.
        def block():
            s = torch.empty(m, k // 128, device=dev, dtype=torch.float32)
            st = torch.empty(k, m // 128, device=dev, dtype=torch.float32)
            s2 = torch.empty(m // 128, k // 128, device=dev, dtype=torch.float32)
            gb = (m // 128, k // 128)
            for op, trans, square, written in (
                    ("block1x128", False, False, n + 4 * (n // 128)),
                    ("block1x128_t", True, False, 2 * n + 8 * (n // 128)),
                    ("block128x128_t", True, True, 2 * n + 4 * (n // 16384))):
                sc = s2 if square else s
                f = lambda: _block_quant_kernel[gb](x, y, sc, yt, st, m, k, B=128,
                                                    TRANSPOSE=trans, SQUARE=square)
                add(op, "triton", m, k, 2 * n, written, time_s(f), fn=f)

        if m % 128 == 0 and k % 128 == 0:
            guarded("block", block)

        # PyTorch eager: a plain dtype cast (one kernel), a scaled cast (several kernels:
        # multiply, then convert) and amax (abs, then reduce: two kernels).
        def torch_cases():
            for op, written, f in (("cast_noscale", n, lambda: x.to(fp8)),
                                   ("cast", n, lambda: (x * scale).to(fp8)),
                                   ("amax", 0, lambda: torch.amax(x.abs()))):
                add(op, "torch", m, k, 2 * n, written, time_s(f), fn=f)
        guarded("torch", torch_cases)

        if te is not None:
            tex, Float8Quantizer = te

            def te_cases():
                q = Float8Quantizer(scale.clone(), amax.clone(), tex.DType.kFloat8E4M3,
                                    rowwise=True, columnwise=False)
                add("cast", "te", m, k, 2 * n, n, time_s(lambda: q(x)))
                qt = Float8Quantizer(scale.clone(), amax.clone(), tex.DType.kFloat8E4M3,
                                     rowwise=True, columnwise=True)
                add("cast_transpose", "te", m, k, 2 * n, 2 * n, time_s(lambda: qt(x)))
            guarded("te", te_cases)
        del x, y, yt, cp, expect

    # Delayed scaling's scale update: one kernel over every fp8 tensor's amax history.
    # Tensors: 3 per fp8 GEMM (input, weight, output gradient) times 4 GEMMs a layer
    # times the layers of a pipeline stage (10 .. 24); history 1024 (TE's default) or 1.
    for tensors in (12, 120, 288, 1152):
        for hist_len in (1, 16, 1024):
            hist = torch.rand(tensors, hist_len, device=dev, dtype=torch.float32)
            cur = torch.rand(tensors, device=dev, dtype=torch.float32)
            sc = torch.empty(tensors, device=dev, dtype=torch.float32)
            blk = max(16, triton.next_power_of_2(hist_len))
            f = lambda: _scale_update_kernel[(tensors,)](hist, cur, sc, hist_len, BLOCK=blk)
            nb = tensors * hist_len * 4
            guarded("scale_update", lambda: add("scale_update", "triton", tensors, hist_len,
                                                nb + 4 * tensors, nb + 4 * tensors, time_s(f),
                                                fn=f))

    # Launch gap: 1000 tiny kernels in a CUDA graph (as roofline_probe.py), for reference.
    z = torch.zeros(256, device=dev)
    g = torch.cuda.CUDAGraph()
    st = torch.cuda.Stream()
    st.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(st):
        for _ in range(3):
            z.add_(1.0)
        with torch.cuda.graph(g):
            for _ in range(1000):
                z.add_(1.0)
    torch.cuda.current_stream().wait_stream(st)
    guarded("launch_graph", lambda: add("launch_graph", "torch", 1000, 0, 0, 0,
                                        time_s(lambda: g.replay()) / 1000))

    out.close()


if __name__ == "__main__":
    main(sys.argv[1])
