#!/usr/bin/env python3
"""PyTorch peer of `overlapsim redistribute` on one host: a 1-D mesh of all ranks.

For each layout pair, three ways of taking a bf16 array from the source to the target
layout, each timed in the same process:
  dtensor      DTensor.redistribute (PyTorch's own choice of collectives)
  synthesised  the plan `overlapsim redistribute` synthesises for the pair on a 1-D mesh:
               all-to-all (dist.all_to_all_single), reduce-scatter, all-gather or all-reduce
  naive        all-gather (or all-reduce of pending sums), then a local slice
Each result is checked against the target block of the global array (`wrong`: elements off,
summed over ranks). Timing: a barrier before every timed call, CUDA events, max over ranks,
median/min/max over --iters iterations after --warmup.

  torchrun --nproc-per-node 2 benchmarks/peers/torch_redistribute.py --output r2.csv

Compare the synthesised rows on 2 GPUs with the simulator's prediction:
  overlapsim redistribute --mesh x=2 --shape S --from F --to T \
      --cluster workloads/clusters/h200x2-nvlink.yaml --format json
"""
import argparse
import os
import statistics

os.environ.setdefault("NCCL_NVLS_ENABLE", "0")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

# (name, global shape, source placement, target placement); placements on the 1-D mesh x.
# "S0" = Shard(0), "S1" = Shard(1), "R" = Replicate(), "P" = Partial().
PAIRS = [
    ("rows-to-cols", (8192, 8192), "S0", "S1"),            # P('x', None) -> P(None, 'x')
    ("sp-to-tp", (16384, 8192), "S0", "R"),                 # sequence parallel -> replicated
    ("tp-to-sp", (16384, 8192), "P", "S0"),                 # row-parallel output -> SP
    ("tp-allreduce", (16384, 8192), "P", "R"),              # Megatron TP without SP
    ("moe-dispatch", (8, 16384, 4096), "S1", "S0"),         # tokens -> experts
    ("dlrm-mp-to-dp", (16384, 64, 128), "S1", "S0"),        # tables -> batch
]
HEADER = ("gpu,torch,nccl,world,pair,shape,from,to,method,steps,bytes_per_rank,time_us,"
          "time_min_us,time_max_us,wrong")


def block(full, placement, rank, world):
    if placement.startswith("S"):
        return full.chunk(world, dim=int(placement[1:]))[rank].contiguous()
    return full.clone()


def addend(full, rank, world):
    # Pending sums: rank 0 holds the array less the others' small addends.
    g = torch.Generator(device="cpu").manual_seed(1234 + rank)
    if rank == 0:
        rest = full.clone()
        for r in range(1, world):
            rest -= addend(full, r, world)
        return rest
    return torch.randint(-2, 3, full.shape, generator=g).to(full.device, full.dtype)


def source(full, src, rank, world):
    return addend(full, rank, world) if src == "P" else block(full, src, rank, world)


def all_to_all(x, sdim, tdim, world):
    # Split the target dimension into `world` pieces, exchange, join along the source one.
    send = torch.stack(list(x.chunk(world, dim=tdim))).contiguous()
    recv = torch.empty_like(send)
    dist.all_to_all_single(recv, send)
    return torch.cat(list(recv.unbind(0)), dim=sdim)


def all_gather(x, dim, world):
    out = torch.empty((world,) + tuple(x.shape), dtype=x.dtype, device=x.device)
    dist.all_gather_into_tensor(out, x.contiguous())
    return torch.cat(list(out.unbind(0)), dim=dim)


def synthesised(x, src, dst, rank, world):
    if src == "P" and dst.startswith("S"):
        d = int(dst[1:])
        send = torch.stack(list(x.chunk(world, dim=d))).contiguous()
        out = torch.empty_like(send[0])
        dist.reduce_scatter_tensor(out, send)
        return out, "reduce-scatter"
    if src == "P":
        y = x.clone()
        dist.all_reduce(y)
        return y, "all-reduce"
    if dst == "R":
        return all_gather(x, int(src[1:]), world), "all-gather"
    return all_to_all(x, int(src[1:]), int(dst[1:]), world), "all-to-all"


def naive(x, src, dst, rank, world):
    if src == "P":
        y = x.clone()
        dist.all_reduce(y)
        steps = "all-reduce"
    else:
        y = all_gather(x, int(src[1:]), world)
        steps = "all-gather"
    if dst != "R":
        y = y.chunk(world, dim=int(dst[1:]))[rank].contiguous()
        steps += "+slice"
    return y, steps


def dtensor_fn(mesh, src, dst):
    from torch.distributed.tensor import DTensor, Partial, Replicate, Shard

    def placement(p):
        return Partial() if p == "P" else Replicate() if p == "R" else Shard(int(p[1:]))

    def run(x, src_p, dst_p, rank, world):
        dt = DTensor.from_local(x, mesh, [placement(src_p)], run_check=False)
        return dt.redistribute(mesh, [placement(dst_p)]).to_local(), "redistribute"
    return run


def timed(fn, x, src, dst, rank, world, warmup, iters):
    out, steps = fn(x, src, dst, rank, world)
    for _ in range(warmup):
        fn(x, src, dst, rank, world)
    times = []
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(iters):
        dist.barrier()
        start.record()
        fn(x, src, dst, rank, world)
        end.record()
        end.synchronize()
        t = torch.tensor([start.elapsed_time(end) * 1e3], device=x.device)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        times.append(t.item())
    return out, steps, times


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--output", default="")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--iters", type=int, default=20)
    args = ap.parse_args()
    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    local = int(os.environ.get("LOCAL_RANK", rank))
    torch.cuda.set_device(local)
    dev = torch.device("cuda", local)
    from torch.distributed.device_mesh import init_device_mesh
    mesh = init_device_mesh("cuda", (world,), mesh_dim_names=("x",))
    nccl = ".".join(map(str, torch.cuda.nccl.version()))
    rows = []
    for name, shape, src, dst in PAIRS:
        n = 1
        for e in shape:
            n *= e
        # Small integers, exact in bf16 and under the sums.
        full = (torch.arange(n, device=dev) % 61).to(torch.bfloat16).reshape(shape)
        x = source(full, src, rank, world)
        want = block(full, dst, rank, world)
        for method, fn in (("dtensor", dtensor_fn(mesh, src, dst)), ("synthesised", synthesised),
                           ("naive", naive)):
            out, steps, times = timed(fn, x, src, dst, rank, world, args.warmup, args.iters)
            wrong = torch.tensor([int((out.float() != want.float()).sum().item())
                                  if out.shape == want.shape else want.numel()], device=dev)
            dist.all_reduce(wrong)
            if rank == 0:
                rows.append(",".join(map(str, [
                    torch.cuda.get_device_name(dev).replace(",", " "), torch.__version__, nccl,
                    world, name, "x".join(map(str, shape)), src, dst, method, steps,
                    x.numel() * x.element_size(), f"{statistics.median(times):.2f}",
                    f"{min(times):.2f}", f"{max(times):.2f}", int(wrong.item())])))
                print(rows[-1], flush=True)
    if rank == 0 and args.output:
        tmp = args.output + ".tmp"
        with open(tmp, "w") as f:
            f.write(HEADER + "\n" + "\n".join(rows) + "\n")
        os.replace(tmp, args.output)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
