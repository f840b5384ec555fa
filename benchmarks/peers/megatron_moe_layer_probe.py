#!/usr/bin/env python3
"""Megatron-Core's own MoE layer, eager, on one or more GPUs: how long its forward and backward
take, how much of that is the GPU's kernels and how much the host, and how often the host waits
for the device.

The layer is megatron.core.transformer.moe.moe_layer.MoELayer built from Megatron-Core's "local"
(no Transformer Engine) module spec, get_moe_module_spec(use_te=False): TopKRouter, the
all-to-all token dispatcher (MoEAlltoAllTokenDispatcher), and SequentialMLP experts (one
ColumnParallelLinear/RowParallelLinear MLP per local expert, SwiGLU). Megatron-Core is not
installed: pass its source tree (the folder holding the `megatron` package) with --megatron.
Routing is balanced as the published benchmarks force it (moe_router_force_load_balancing:
random router logits), the permutation unfused (moe_permute_fusion False), bf16, TP 1,
EP = the world size (parallel_state.initialize_model_parallel).

Run under torchrun, one process per GPU:
  python3 -m torch.distributed.run --nproc_per_node N benchmarks/peers/megatron_moe_layer_probe.py \
      --megatron PATH --out DIR [--shapes ...] [--iterations 20] [--modules]

Per shape and rank it writes DIR/megatron_moe_layer_w{N}.csv, one row per measure:
  gpu,shape,world,rank,ep,experts,experts_local,top_k,hidden,expert_ffn,tokens,iterations,
  measure,value,unit,wrong,note
Measures (medians over the timed iterations unless the name says otherwise):
  wall_event_us         forward+backward, CUDA events around both (after a barrier)
  wall_host_us          forward+backward+synchronize, host clock
  fwd_event_us, bwd_event_us           each phase, CUDA events
  fwd_host_us, bwd_host_us             the host's time to return from each phase's call
  kernel_us_{fwd,bwd}   summed device time of the kernels (torch.profiler, CUPTI; GPU-side
                        spans of record_function ranges left out); NCCL kernels' time includes
                        their wait for the peer rank
  kernels_{fwd,bwd}     kernel count; kernels_{fwd,bwd}_{class} by class, kernel_us_{..}_{class}
  launches_{fwd,bwd}    cudaLaunchKernel-like runtime calls seen by the profiler
  syncs_{fwd,bwd}       host-blocking CUDA runtime calls (cudaStreamSynchronize,
                        cudaEventSynchronize, cudaDeviceSynchronize, synchronous cudaMemcpy),
                        by name in the note; the probe's own torch.cuda.synchronize() that
                        closes each profiled phase is counted too (one cudaDeviceSynchronize)
  d2h_{fwd,bwd}         device-to-host copies (CUPTI memcpy records)
  host_cpu_{fwd,bwd}_us the profiler's CPU span of the phase's call; host_wait_{fwd,bwd}_us
                        the time spent inside the blocking calls above (the closing
                        synchronize included)
  graph_capture         1 if torch.cuda.make_graphed_callables captured the layer, else 0
                        (note: the error); graph_wall_event_us when it did
  launch_cost_us        host time per eager x.add_(1) on a 1-element CUDA tensor (20,000)
  sync_roundtrip_us     a tiny kernel then .item(), host clock, median of 200
wrong: non-finite elements in the layer's output and its input gradient.
--modules: instead of the measures above, the per-module breakdown (module_breakdown below):
DIR/megatron_moe_layer_modules_w{N}.csv, one row per shape, rank, pass (fwd, bwd), module
(the eight stages MoELayer.forward calls: route, dispatch_preprocess, token_dispatch,
dispatch_postprocess, experts, combine_preprocess, token_combine, combine_postprocess; plus
layer_other, unmapped and all) and measure (kernels, kernel_us, nccl, nccl_us, memcpy, d2h,
launches, syncs, sync_us, host_us with the profiler on; host_noprof_us, forward, off), and
rank 0's last profiled trace per shape, DIR/trace_w{N}_{shape}.json.gz; the host
microbenchmarks as above. --parse-trace FILE prints a saved trace's breakdown (needs no GPU).
Rank 0 also writes DIR/kernels_w{N}.csv: every kernel of each phase, its class, calls and
device us per iteration. Router: aux_loss with coefficient --aux-loss-coeff (1e-3), fp32
router dtype; no biases. Parameter gradients are not zeroed between iterations, so each weight
gradient is accumulated (one add per weight), as Megatron's DDP does into main_grad without
gradient-accumulation fusion.
"""
import argparse
import os
import statistics
import sys
import time

import torch

SHAPES = {
    # name: hidden, experts, top_k, expert ffn, tokens per rank
    "qwen3-30b-a3b": (2048, 128, 8, 768, 4096),
    "gpt-oss-120b": (2880, 128, 4, 2880, 4096),
    # One published rank's expert work on one GPU: the local experts of the published layout
    # (Qwen3-30B EP 16: 8; GPT-OSS EP 8: 16) with the rows per expert it gets there
    # (4096 and 1024), top-k kept; the router then picks among these experts only.
    "qwen3-30b-a3b-ep16rank": (2048, 8, 8, 768, 4096),
    "gpt-oss-120b-ep8rank": (2880, 16, 4, 2880, 4096),
}

SYNC_CALLS = ("cudaStreamSynchronize", "cudaEventSynchronize", "cudaDeviceSynchronize",
              "cudaMemcpy", "cuStreamSynchronize", "cuEventSynchronize", "cuCtxSynchronize",
              "cuMemcpyDtoH_v2")
LAUNCH_CALLS = ("cudaLaunchKernel", "cuLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernelEx",
                "cudaLaunchCooperativeKernel")


def write_csv(path, header, rows_by_rank):
    """Writes every rank's rows under `header`, atomically (a temporary file, then rename)."""
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(header + "\n")
        for rows in rows_by_rank:
            for r in rows:
                f.write(",".join(str(v) for v in r) + "\n")
    os.replace(tmp, path)
    print(f"# wrote {path}", flush=True)


def kernel_class(name):
    n = name.lower()
    if n.startswith("memcpy"):
        return "memcpy"
    if n.startswith("memset"):
        return "memset"
    if "nccl" in n:
        return "nccl"
    if any(k in n for k in ("gemm", "nvjet", "cutlass", "xmma", "cublas", "sm90_")):
        return "gemm"
    if any(k in n for k in ("sort", "radix", "scan")):
        return "sort_scan"
    if any(k in n for k in ("index", "gather", "scatter", "nonzero", "masked")):
        return "index"
    if "cat" in n and "batched" in n or "catarray" in n:
        return "cat"
    if "reduce" in n:
        return "reduce"
    if "elementwise" in n or "vectorized" in n or "unrolled" in n:
        return "elementwise"
    return "other"


CLASSES = ("gemm", "nccl", "elementwise", "index", "sort_scan", "reduce", "cat", "memcpy",
           "memset", "other")


def profile_phase(fn, rank_sync):
    """Runs fn once under the profiler; returns (result, summary dict)."""
    from torch.profiler import ProfilerActivity, profile, record_function
    rank_sync()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        with record_function("probe_phase"):
            out = fn()
        torch.cuda.synchronize()
    s = {"kernels": 0, "kernel_us": 0.0, "launches": 0, "syncs": 0, "d2h": 0,
         "host_cpu_us": 0.0, "host_wait_us": 0.0, "sync_names": {}}
    for c in CLASSES:
        s["n_" + c] = 0
        s["us_" + c] = 0.0
    span = None
    events = prof.events()
    # GPU-side mirrors of record_function ranges (user annotations) are not kernels: they
    # carry a CPU range's name and span the GPU work under it.
    cpu_names = {e.name for e in events if e.device_type != torch.autograd.DeviceType.CUDA}
    s["per_kernel"] = {}
    for e in events:
        if e.device_type == torch.autograd.DeviceType.CUDA and (
                getattr(e, "is_user_annotation", False) or e.name in cpu_names):
            continue
        if e.device_type == torch.autograd.DeviceType.CUDA:
            dt = getattr(e, "device_time", None)
            if dt is None:
                dt = e.cuda_time
            name = e.name
            if name.lower().startswith("memcpy"):
                if "dtoh" in name.lower().replace(" ", "") or "device -> pinned" in name.lower() \
                        or "device -> pageable" in name.lower():
                    s["d2h"] += 1
            c = kernel_class(name)
            calls, us = s["per_kernel"].get(name, (0, 0.0))
            s["per_kernel"][name] = (calls + 1, us + dt)
            if c in ("memcpy", "memset"):
                s["n_" + c] += 1
                s["us_" + c] += dt
                continue
            s["kernels"] += 1
            s["kernel_us"] += dt
            s["n_" + c] += 1
            s["us_" + c] += dt
        else:
            if e.name == "probe_phase":
                span = e
            elif e.name in LAUNCH_CALLS:
                s["launches"] += 1
            elif e.name in SYNC_CALLS:
                s["syncs"] += 1
                s["host_wait_us"] += e.time_range.elapsed_us()
                s["sync_names"][e.name] = s["sync_names"].get(e.name, 0) + 1
    if span is not None:
        s["host_cpu_us"] = span.time_range.elapsed_us()
    return out, s


# ---------------------------------------------------------------------------------------------
# Per-module breakdown (--modules): the layer's stages wrapped in record_function ranges.
# Forward: each kernel belongs to the stage range that holds the host call that launched it
# (CUDA correlation id). Backward: each autograd node evaluated on the engine's thread belongs
# to the stage whose forward range recorded the node's sequence number; a node with no mapped
# sequence number (AccumulateGrad of the weights, say) goes to the stage of the node before it.
# Works on the profiler's Chrome trace alone (json), so saved traces can be parsed again
# without torch: --parse-trace FILE.json.gz.

STAGES = ("route", "dispatch_preprocess", "token_dispatch", "dispatch_postprocess", "experts",
          "combine_preprocess", "token_combine", "combine_postprocess")


def instrument(layer, host_acc):
    """Wraps the layer's stages (instance attributes shadow the methods the layer calls) in
    record_function('stage:NAME') ranges; host_acc[NAME] gathers host µs per call."""
    from torch.profiler import record_function
    disp = layer.token_dispatcher
    targets = [("route", layer, "route"), ("experts", layer.experts, "forward")]
    targets += [(s, disp, s) for s in STAGES if s not in ("route", "experts")]
    for stage, obj, meth in targets:
        orig = getattr(obj, meth)

        def wrapped(*a, _orig=orig, _stage=stage, **k):
            t0 = time.perf_counter()
            with record_function("stage:" + _stage):
                r = _orig(*a, **k)
            host_acc[_stage] = host_acc.get(_stage, 0.0) + (time.perf_counter() - t0) * 1e6
            return r
        setattr(obj, meth, wrapped)


def _inside(ranges, tid, ts):
    """The range on thread tid holding ts; the ranges of a thread are disjoint, sorted by ts."""
    import bisect
    lst = ranges.get(tid)
    if not lst:
        return None
    key = ranges.setdefault(("starts", tid), [r["ts"] for r in lst])
    i = bisect.bisect_right(key, ts) - 1
    if i >= 0 and ts <= lst[i]["ts"] + lst[i]["dur"]:
        return lst[i]
    return None


def module_breakdown(trace):
    """Per phase (fwd, bwd) and stage: kernels, kernel_us, nccl, memcpy, d2h, launches, syncs,
    host_us. Returns {phase: {stage: {measure: value}}}; stages STAGES plus 'layer_other'
    (host and kernels of the layer outside the stage calls, forward) or 'unmapped'
    (backward work before any mapped node) and 'all'."""
    evs = [e for e in trace.get("traceEvents", []) if e.get("ph") == "X"]
    for e in evs:
        e["ts"] = float(e.get("ts", 0.0))
        e["dur"] = float(e.get("dur", 0.0))
    evs.sort(key=lambda e: (e["ts"], -e["dur"]))
    cpu_cats = ("cpu_op", "user_annotation", "python_function")
    phases = {}
    for e in evs:
        if e.get("cat") == "user_annotation" and e["name"] in ("phase:fwd", "phase:bwd"):
            phases[e["name"][6:]] = e
    stage_r = {}
    for e in evs:
        if e.get("cat") == "user_annotation" and e["name"].startswith("stage:"):
            stage_r.setdefault(e["tid"], []).append(e)
    runtime = [e for e in evs if e.get("cat") in ("cuda_runtime", "cuda_driver")]
    device = [e for e in evs if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    corr = {}
    out = {ph: {} for ph in ("fwd", "bwd")}

    def slot(ph, stage):
        d = out[ph].setdefault(stage, {"kernels": 0, "kernel_us": 0.0, "nccl": 0,
                                       "nccl_us": 0.0, "memcpy": 0, "d2h": 0, "launches": 0,
                                       "syncs": 0, "host_us": 0.0, "sync_us": 0.0})
        return d

    def phase_of(ts):
        for ph, r in phases.items():
            if r["ts"] <= ts <= r["ts"] + r["dur"]:
                return ph
        return None

    # Forward: sequence numbers recorded inside each stage range; host time of the ranges.
    seq_stage = {}
    fwd = phases.get("fwd")
    if fwd is not None:
        ftid = fwd["tid"]
        for r in stage_r.get(ftid, ()):
            if phase_of(r["ts"]) == "fwd":
                slot("fwd", r["name"][6:])["host_us"] += r["dur"]
        for e in evs:
            if e.get("cat") == "cpu_op" and e["tid"] == ftid and phase_of(e["ts"]) == "fwd":
                sq = (e.get("args") or {}).get("Sequence number")
                r = _inside(stage_r, ftid, e["ts"])
                if sq is not None and r is not None:
                    seq_stage.setdefault(sq, r["name"][6:])
        staged = sum(d["host_us"] for d in out["fwd"].values())
        slot("fwd", "layer_other")["host_us"] += max(fwd["dur"] - staged, 0.0)
        slot("fwd", "all")["host_us"] = fwd["dur"]
    # Backward: top-level cpu events on threads other than the caller's, inside phase:bwd.
    bwd = phases.get("bwd")
    bwd_top = {}
    if bwd is not None:
        by_tid = {}
        for e in evs:
            if e.get("cat") in cpu_cats and phase_of(e["ts"]) == "bwd" \
                    and not e["name"].startswith("phase:"):
                by_tid.setdefault(e["tid"], []).append(e)
        for tid, lst in by_tid.items():
            if tid == bwd["tid"] and len(by_tid) > 1:
                continue  # the caller only waits for the engine's thread
            # Units: the engine's evaluate_function ranges (one per autograd node), else the
            # thread's outermost events; each with the events inside it.
            ev_f = [e for e in lst if e["name"].startswith("autograd::engine::evaluate_function")]
            tops, end = [], -1.0
            for e in lst:
                unit = e["ts"] >= end and (not ev_f or e["name"].startswith(
                    "autograd::engine::evaluate_function"))
                if unit:
                    tops.append({"ts": e["ts"], "dur": e["dur"], "kids": []})
                    end = e["ts"] + e["dur"]
                if e["ts"] <= end and tops:
                    tops[-1]["kids"].append(e)
            prev = "unmapped"
            for t in tops:
                st = None
                for k in t["kids"]:
                    sq = (k.get("args") or {}).get("Sequence number")
                    if sq is not None and sq in seq_stage and not k["name"].startswith("aten::"):
                        st = seq_stage[sq]
                        break
                st = st or prev
                prev = st
                t["stage"] = st
                slot("bwd", st)["host_us"] += t["dur"]
            bwd_top[tid] = tops
        slot("bwd", "all")["host_us"] = bwd["dur"]

    def stage_at(ph, tid, ts):
        if ph == "fwd":
            r = _inside(stage_r, tid, ts)
            return r["name"][6:] if r is not None else "layer_other"
        t = _inside(bwd_top, tid, ts)
        return t["stage"] if t is not None else "unmapped"

    for e in runtime:
        ph = phase_of(e["ts"])
        if ph is None:
            continue
        st = stage_at(ph, e["tid"], e["ts"])
        c = (e.get("args") or {}).get("correlation")
        if c is not None:
            corr[c] = (ph, st)
        for s in (st, "all"):
            d = slot(ph, s)
            if e["name"] in LAUNCH_CALLS:
                d["launches"] += 1
            elif e["name"] in SYNC_CALLS:
                d["syncs"] += 1
                d["sync_us"] += e["dur"]
    for e in device:
        c = (e.get("args") or {}).get("correlation")
        if c not in corr:
            continue
        ph, st = corr[c]
        for s in (st, "all"):
            d = slot(ph, s)
            n = e["name"].lower()
            if e.get("cat") == "gpu_memcpy" or n.startswith("memcpy"):
                d["memcpy"] += 1
                if "dtoh" in n.replace(" ", "") or "device -> pinned" in n \
                        or "device -> pageable" in n:
                    d["d2h"] += 1
            elif e.get("cat") == "gpu_memset" or n.startswith("memset"):
                pass
            elif "nccl" in n:
                d["nccl"] += 1
                d["nccl_us"] += e["dur"]
            else:
                d["kernels"] += 1
                d["kernel_us"] += e["dur"]
    return out


def parse_trace_file(path):
    import gzip
    import json
    op = gzip.open if path.endswith(".gz") else open
    with op(path, "rt") as f:
        return module_breakdown(json.load(f))


def run_modules(args, name, layer, x, g, fwd, bwd, barrier, tags, rank, world, mrows):
    """--modules: stage host times without the profiler (forward), then profiled iterations
    (forward and backward in one session) parsed by module_breakdown."""
    import gzip
    import shutil
    from torch.profiler import ProfilerActivity, profile, record_function
    med = statistics.median
    host_acc = {}
    instrument(layer, host_acc)
    for _ in range(args.warmup):
        bwd(fwd())
    barrier()
    stage_host, fh, bh = {}, [], []
    for _ in range(args.iterations):
        x.grad = None
        barrier()
        host_acc.clear()
        t0 = time.perf_counter()
        out = fwd()
        t1 = time.perf_counter()
        bwd(out)
        t2 = time.perf_counter()
        torch.cuda.synchronize()
        fh.append((t1 - t0) * 1e6)
        bh.append((t2 - t1) * 1e6)
        for k, v in host_acc.items():
            stage_host.setdefault(k, []).append(v)
    wrong = int((~torch.isfinite(out.float())).sum().item()
                + (~torch.isfinite(x.grad.float())).sum().item())
    del out

    def add(ph, module, measure, value, unit, note=""):
        v = f"{value:.3f}" if isinstance(value, float) else str(value)
        mrows.append(tags + [ph, module, measure, v, unit, wrong,
                             '"' + note.replace('"', "'") + '"'])

    add("fwd", "all", "host_noprof_us", float(med(fh)), "us",
        "host time to return from forward, profiler off, stage ranges on")
    add("bwd", "all", "host_noprof_us", float(med(bh)), "us",
        "host time to return from backward(), profiler off")
    for k in STAGES:
        if k in stage_host:
            add("fwd", k, "host_noprof_us", float(med(stage_host[k])), "us",
                "host time to return from the stage call, profiler off")
    results = []
    import tempfile
    tmp = os.path.join(tempfile.gettempdir(), f"megatron_moe_trace_{os.getpid()}.json")
    for i in range(args.profiled):
        x.grad = None
        barrier()
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            with record_function("phase:fwd"):
                out = fwd()
            with record_function("phase:bwd"):
                bwd(out)
            torch.cuda.synchronize()
        del out
        prof.export_chrome_trace(tmp)
        try:
            results.append(parse_trace_file(tmp))
        except Exception as e:  # keep the trace; it can be parsed again offline
            print(f"# rank {rank} {name}: trace parse failed: {type(e).__name__}: {e}", flush=True)
        if rank == 0 and i == args.profiled - 1:
            dst = os.path.join(args.out, f"trace_w{world}_{name}.json.gz")
            with open(tmp, "rb") as fi, gzip.open(dst, "wb", compresslevel=6) as fo:
                shutil.copyfileobj(fi, fo)
        os.remove(tmp)
    units = {"kernel_us": "us", "nccl_us": "us", "host_us": "us", "sync_us": "us"}
    for ph in ("fwd", "bwd"):
        mods = []
        for r in results:
            for m in r[ph]:
                if m not in mods:
                    mods.append(m)
        for m in mods:
            for meas in ("kernels", "kernel_us", "nccl", "nccl_us", "memcpy", "d2h", "launches",
                         "syncs", "sync_us", "host_us"):
                vals = [r[ph].get(m, {}).get(meas, 0) for r in results]
                v = med(vals)
                v = float(v) if units.get(meas) else int(round(v))
                add(ph, m, meas, v, units.get(meas, "count"),
                    "profiler on; median of %d" % len(vals) if meas == "host_us" else "")
    if rank == 0:
        for ph in ("fwd", "bwd"):
            if results:
                r = results[-1][ph]
                print(f"# {name} w{world} {ph}: " + "; ".join(
                    f"{m} {d['kernels']}k {d['kernel_us']:.0f}us host {d['host_us']:.0f}us"
                    for m, d in r.items()), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--megatron", help="folder holding the megatron package")
    ap.add_argument("--out")
    ap.add_argument("--shapes", default="qwen3-30b-a3b,gpt-oss-120b")
    ap.add_argument("--iterations", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--profiled", type=int, default=5, help="iterations under the profiler")
    ap.add_argument("--aux-loss-coeff", type=float, default=1e-3,
                    help="router aux_loss coefficient (0 turns the aux loss off)")
    ap.add_argument("--no-graph", action="store_true", help="skip the CUDA graph attempt")
    ap.add_argument("--check-only", action="store_true",
                    help="build each layer, run one forward+backward, print, stop")
    ap.add_argument("--modules", action="store_true",
                    help="per-module breakdown only: writes megatron_moe_layer_modules_w{N}.csv "
                         "and rank 0's last profiled trace per shape")
    ap.add_argument("--parse-trace", help="print the per-module breakdown of a saved trace, stop")
    args = ap.parse_args()
    if args.parse_trace:
        res = parse_trace_file(args.parse_trace)
        for ph in ("fwd", "bwd"):
            for st, d in res[ph].items():
                print(ph, st, " ".join(f"{k}={v:.1f}" if isinstance(v, float) else f"{k}={v}"
                                       for k, v in d.items()))
        return
    if not args.megatron or not args.out:
        ap.error("--megatron and --out are required")
    sys.path.insert(0, os.path.abspath(args.megatron))

    import torch.distributed as dist
    import torch.nn.functional as F

    rank = int(os.environ.get("RANK", "0"))
    world = int(os.environ.get("WORLD_SIZE", "1"))
    local = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local)
    dist.init_process_group("nccl", device_id=torch.device("cuda", local))

    from megatron.core import parallel_state, tensor_parallel
    from megatron.core.transformer.transformer_config import TransformerConfig
    spec_note = ""
    try:
        from megatron.core.models.gpt.moe_module_specs import get_moe_module_spec
    except Exception as e:  # fall back to the same classes, named directly
        get_moe_module_spec = None
        spec_note = f"moe_module_specs import failed ({type(e).__name__}: {e}); local classes built directly"
    parallel_state.initialize_model_parallel(tensor_model_parallel_size=1,
                                             pipeline_model_parallel_size=1,
                                             expert_model_parallel_size=world)
    tensor_parallel.model_parallel_cuda_manual_seed(1234)
    gpu = torch.cuda.get_device_name()
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, f"megatron_moe_layer_w{world}.csv")
    rows = []
    mrows = []

    def barrier():
        torch.cuda.synchronize()
        if world > 1:
            dist.barrier()

    def build(name):
        hidden, experts, top_k, ffn, tokens = SHAPES[name]
        cfg = TransformerConfig(
            num_layers=1, hidden_size=hidden, num_attention_heads=16, ffn_hidden_size=ffn,
            moe_ffn_hidden_size=ffn, num_moe_experts=experts, moe_router_topk=top_k,
            gated_linear_unit=True, activation_func=F.silu, add_bias_linear=False,
            bf16=True, params_dtype=torch.bfloat16, pipeline_dtype=torch.bfloat16,
            tensor_model_parallel_size=1, expert_model_parallel_size=world,
            sequence_parallel=False, moe_token_dispatcher_type="alltoall",
            moe_router_force_load_balancing=True, moe_permute_fusion=False,
            moe_grouped_gemm=False, moe_router_dtype="fp32",
            moe_router_load_balancing_type="aux_loss", moe_aux_loss_coeff=args.aux_loss_coeff,
            use_cpu_initialization=False, perform_initialization=True)
        if get_moe_module_spec is not None:
            spec = get_moe_module_spec(use_te=False, num_experts=experts, moe_grouped_gemm=False)
            layer = spec(config=cfg, layer_number=1)
        else:
            from functools import partial
            from megatron.core.tensor_parallel.layers import ColumnParallelLinear, RowParallelLinear
            from megatron.core.transformer.mlp import MLPSubmodules
            from megatron.core.transformer.moe.experts import SequentialMLP
            from megatron.core.transformer.moe.moe_layer import MoELayer, MoESubmodules
            sub = MoESubmodules(experts=partial(SequentialMLP, submodules=MLPSubmodules(
                linear_fc1=ColumnParallelLinear, linear_fc2=RowParallelLinear)))
            layer = MoELayer(config=cfg, submodules=sub, layer_number=1)
        layer = layer.cuda().train()
        torch.manual_seed(1000 + rank)
        x = torch.randn(tokens, 1, hidden, device="cuda", dtype=torch.bfloat16, requires_grad=True)
        g = torch.randn(tokens, 1, hidden, device="cuda", dtype=torch.bfloat16)
        return layer, x, g

    for name in args.shapes.split(","):
        hidden, experts, top_k, ffn, tokens = SHAPES[name]
        tags = [gpu, name, world, rank, world, experts, experts // world, top_k, hidden, ffn,
                tokens, args.iterations]

        def add(measure, value, unit, wrong=0, note=""):
            v = f"{value:.3f}" if isinstance(value, float) else str(value)
            rows.append(tags + [measure, v, unit, wrong, '"' + note.replace('"', "'") + '"'])

        layer, x, g = build(name)
        if rank == 0:
            print(f"# {name}: {type(layer).__name__}, router {type(layer.router).__name__}, "
                  f"dispatcher {type(layer.token_dispatcher).__name__}, experts "
                  f"{type(layer.experts).__name__} x {layer.num_local_experts} local; "
                  f"{spec_note}", flush=True)

        def fwd():
            out, bias = layer(x)
            return out

        def bwd(out):
            out.backward(g)

        if args.modules:
            run_modules(args, name, layer, x, g, fwd, bwd, barrier, tags, rank, world, mrows)
            del layer, x, g
            torch.cuda.empty_cache()
            continue

        if args.check_only:
            out = fwd()
            bwd(out)
            torch.cuda.synchronize()
            print(f"# rank {rank} {name}: out {tuple(out.shape)} finite "
                  f"{bool(torch.isfinite(out).all())}, grad finite {bool(torch.isfinite(x.grad).all())}",
                  flush=True)
            del layer, x, g, out
            torch.cuda.empty_cache()
            continue

        for _ in range(args.warmup):
            bwd(fwd())
        barrier()
        ev = [torch.cuda.Event(enable_timing=True) for _ in range(3)]
        wall_e, wall_h, fe, be, fh, bh = [], [], [], [], [], []
        for _ in range(args.iterations):
            x.grad = None
            barrier()
            t0 = time.perf_counter()
            ev[0].record()
            out = fwd()
            t1 = time.perf_counter()
            ev[1].record()
            bwd(out)
            t2 = time.perf_counter()
            ev[2].record()
            torch.cuda.synchronize()
            t3 = time.perf_counter()
            wall_e.append(ev[0].elapsed_time(ev[2]) * 1e3)
            fe.append(ev[0].elapsed_time(ev[1]) * 1e3)
            be.append(ev[1].elapsed_time(ev[2]) * 1e3)
            wall_h.append((t3 - t0) * 1e6)
            fh.append((t1 - t0) * 1e6)
            bh.append((t2 - t1) * 1e6)
        wrong = int((~torch.isfinite(out.float())).sum().item()
                    + (~torch.isfinite(x.grad.float())).sum().item())
        med = statistics.median
        add("wall_event_us", med(wall_e), "us", wrong,
            f"min {min(wall_e):.1f} max {max(wall_e):.1f}")
        add("wall_host_us", med(wall_h), "us", wrong)
        add("fwd_event_us", med(fe), "us", wrong)
        add("bwd_event_us", med(be), "us", wrong)
        add("fwd_host_us", med(fh), "us", wrong, "host time to return from forward")
        add("bwd_host_us", med(bh), "us", wrong, "host time to return from backward()")

        # Profiled iterations: forward and backward in separate profiler sessions.
        summ = {"fwd": [], "bwd": []}
        for _ in range(args.profiled):
            x.grad = None
            out, sf = profile_phase(fwd, barrier)
            _, sb = profile_phase(lambda: bwd(out), barrier)
            summ["fwd"].append(sf)
            summ["bwd"].append(sb)
        for ph in ("fwd", "bwd"):
            L = summ[ph]
            m = lambda k: med([s[k] for s in L])
            names = {}
            for s in L:
                for k, v in s["sync_names"].items():
                    names[k] = names.get(k, 0) + v
            add(f"kernel_us_{ph}", float(m("kernel_us")), "us", wrong)
            add(f"kernels_{ph}", int(m("kernels")), "count", wrong)
            for c in CLASSES:
                add(f"kernels_{ph}_{c}", int(m("n_" + c)), "count", wrong)
                add(f"kernel_us_{ph}_{c}", float(m("us_" + c)), "us", wrong)
            add(f"launches_{ph}", int(m("launches")), "count", wrong)
            add(f"syncs_{ph}", int(m("syncs")), "count", wrong,
                "; ".join(f"{k} {v / len(L):g}/iter" for k, v in sorted(names.items()) if v))
            add(f"d2h_{ph}", int(m("d2h")), "count", wrong)
            add(f"host_cpu_{ph}_us", float(m("host_cpu_us")), "us", wrong,
                "profiler CPU span of the call (profiler on)")
            add(f"host_wait_{ph}_us", float(m("host_wait_us")), "us", wrong,
                "inside blocking CUDA calls")
        if rank == 0:
            with open(os.path.join(args.out, f"kernels_w{world}.csv"), "a") as kf:
                if kf.tell() == 0:
                    kf.write("gpu,shape,world,rank,phase,class,kernel,calls_per_iteration,"
                             "device_us_per_iteration\n")
                for ph in ("fwd", "bwd"):
                    tot = {}
                    for s_ in summ[ph]:
                        for k, (c_, u_) in s_["per_kernel"].items():
                            a, b = tot.get(k, (0, 0.0))
                            tot[k] = (a + c_, b + u_)
                    n_ = len(summ[ph])
                    for k, (c_, u_) in sorted(tot.items(), key=lambda kv: -kv[1][1]):
                        kq = '"' + k.replace('"', "'")[:300] + '"'
                        kf.write(f"{gpu},{name},{world},{rank},{ph},{kernel_class(k)},{kq},"
                                 f"{c_ / n_:g},{u_ / n_:.3f}\n")
            print(f"# {name} w{world}: wall {med(wall_e):.0f} us, kernels "
                  f"{med([s['kernel_us'] for s in summ['fwd']]) + med([s['kernel_us'] for s in summ['bwd']]):.0f} us",
                  flush=True)
        del out
        layer_state = (layer, x, g)

        # CUDA graph attempt, last for this shape (a failed capture can spoil the context).
        if not args.no_graph:
            try:
                x.grad = None
                # make_graphed_callables takes a Module: wrap the layer (it returns a tuple).
                class Wrap(torch.nn.Module):
                    def __init__(self, m):
                        super().__init__()
                        self.m = m

                    def forward(self, t):
                        return self.m(t)[0]
                gl = torch.cuda.make_graphed_callables(Wrap(layer), (x,))
                for _ in range(3):
                    gl(x).backward(g)
                barrier()
                ts = []
                for _ in range(args.iterations):
                    barrier()
                    ev[0].record()
                    gl(x).backward(g)
                    ev[2].record()
                    torch.cuda.synchronize()
                    ts.append(ev[0].elapsed_time(ev[2]) * 1e3)
                add("graph_capture", 1, "bool", wrong)
                add("graph_wall_event_us", med(ts), "us", wrong)
            except Exception as e:
                msg = f"{type(e).__name__}: {e}".replace("\n", " ")[:300]
                add("graph_capture", 0, "bool", wrong, msg)
                if rank == 0:
                    print(f"# {name} w{world}: graph capture failed: {msg}", flush=True)
                try:
                    torch.cuda.synchronize()
                except Exception as e2:
                    print(f"# rank {rank}: context after capture failure: {e2}", flush=True)
        del layer_state, layer, x, g
        torch.cuda.empty_cache()

    # Host microbenchmarks, same process, after the layers.
    if not args.check_only:
        t = torch.zeros(1, device="cuda")
        for _ in range(1000):
            t.add_(1)
        torch.cuda.synchronize()
        per_issue, per_wall = [], []
        for _ in range(5):
            n = 20000
            t0 = time.perf_counter()
            for _ in range(n):
                t.add_(1)
            t1 = time.perf_counter()
            torch.cuda.synchronize()
            t2 = time.perf_counter()
            per_issue.append((t1 - t0) * 1e6 / n)
            per_wall.append((t2 - t0) * 1e6 / n)
        rt = []
        for _ in range(200):
            t0 = time.perf_counter()
            t.add_(1).item()
            rt.append((time.perf_counter() - t0) * 1e6)
        tags = [gpu, "host", world, rank, world, 0, 0, 0, 0, 0, 0, 20000]
        rows.append(tags + ["launch_cost_us", f"{statistics.median(per_issue):.3f}", "us", 0,
                            f'"issue time per x.add_(1), median of 5 x 20000; wall incl. drain '
                            f'{statistics.median(per_wall):.3f} us"'])
        tags[-1] = 200
        rows.append(tags + ["sync_roundtrip_us", f"{statistics.median(rt):.3f}", "us", 0,
                            f'"x.add_(1).item(), median of 200; min {min(rt):.1f} max {max(rt):.1f}"'])

    # Gather every rank's rows on rank 0 and write one file.
    allrows = [None] * world
    dist.all_gather_object(allrows, rows)
    allm = [None] * world
    dist.all_gather_object(allm, mrows)
    tags = "gpu,shape,world,rank,ep,experts,experts_local,top_k,hidden,expert_ffn,tokens,iterations"
    if rank == 0 and args.modules:
        write_csv(os.path.join(args.out, f"megatron_moe_layer_modules_w{world}.csv"),
                  tags + ",pass,module,measure,value,unit,wrong,note", allm)
    if rank == 0:
        write_csv(path, tags + ",measure,value,unit,wrong,note", allrows)
    parallel_state.destroy_model_parallel()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
