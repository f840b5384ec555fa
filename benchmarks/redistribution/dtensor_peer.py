#!/usr/bin/env python3
"""PyTorch DTensor's `redistribute` on the layout pairs redistribution-bench times.

For every pair of --pairs (benchmarks/redistribution/gpu_pairs.csv) whose mesh has as many
devices as there are ranks: a DeviceMesh with the pair's named axes (devices row-major, as
`overlapsim redistribute` numbers them), the source DTensor from each rank's block of a
reproducible bf16 array (DTensor.from_local with the source's placements; under a pending sum
the ranks of a group hold small addends that sum to the array), then
`redistribute(mesh, target placements)`, checked against the target block and timed.

Timing follows redistribution-bench (kernels/redistribution/redistribution_bench.cpp): a
1-element all-reduce lines the ranks up before every run, CUDA events around the call on the
current stream (an asynchronous result is waited inside the window), the maximum over ranks
of one run, median (and min, max) of --iterations runs after --warmup. The collectives
DTensor chose are counted once with CommDebugMode (column `steps`).

A pair DTensor's public placements cannot express (placements.py: a dimension split over
mesh axes out of mesh order) gets a row with status `not-expressible` and no time; one that
fails gets `error: ...`. Every row names the GPU; `wrong` counts elements off, summed over
ranks.

  python3 -m torch.distributed.run --standalone --nproc-per-node 4 \
      benchmarks/redistribution/dtensor_peer.py \
      --pairs benchmarks/redistribution/gpu_pairs.csv --output dtensor_w4.csv
"""
import argparse
import csv
import os
import statistics
import subprocess
import sys

for _k in ("NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST", "NVSHMEM_DISABLE_NVLS"):
    os.environ.setdefault(_k, "0" if _k == "NCCL_NVLS_ENABLE" else "1")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import placements as pl  # noqa: E402

HEADER = ["gpu", "driver", "cuda", "nccl", "torch", "ranks", "pair", "mesh", "shape", "dtype",
          "from", "to", "plan", "steps", "step", "kind", "placements_from", "placements_to",
          "time_us", "time_min_us", "time_max_us", "iterations", "wrong", "status"]
_MESHES = {}
DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}


def values(lo_hi, shape, dev, dtype):
    """The array's values on a block: the top 7 bits of Knuth's multiplicative hash of the
    row-major index, minus 64 (exact in bf16, and sums of a few stay exact)."""
    idx = torch.zeros((), dtype=torch.int64, device=dev)
    for d, (lo, hi) in enumerate(lo_hi):
        stride = 1
        for e in shape[d + 1:]:
            stride *= e
        r = torch.arange(lo, hi, dtype=torch.int64, device=dev) * stride
        idx = idx.unsqueeze(-1) + r.reshape((1,) * d + (hi - lo,))
    h = (idx * 2654435761) & 0xFFFFFFFF
    return ((h >> 25) - 64).to(dtype), idx


def source_block(mesh, shape, layout, device, dev, dtype):
    box = pl.block_of(mesh, shape, layout, device)
    v, idx = values(box, shape, dev, dtype)
    n = pl.partial_group_size(mesh, layout)
    if n == 1:
        return v
    # Member p > 0 of a pending-sum group holds a small addend in [-2, 2]; member 0 the rest.
    def addend(p):
        return ((idx * 40503 + p * 7919) % 5 - 2).to(dtype)
    p = pl.partial_rank(mesh, layout, device)
    if p:
        return addend(p)
    rest = v.clone()
    for q in range(1, n):
        rest -= addend(q)
    return rest


def placement_objects(spec):
    from torch.distributed.tensor import Partial, Replicate, Shard
    return [Shard(d) if k == "Shard" else Partial() if k == "Partial" else Replicate()
            for k, d in spec]


def wait_local(out):
    local = out.to_local()
    wait = getattr(local, "wait", None)  # an AsyncCollectiveTensor: wait inside the window
    return wait() if callable(wait) else local


def comm_counts(fn):
    try:
        from torch.distributed.tensor.debug import CommDebugMode
        with CommDebugMode() as m:
            fn()
        counts = m.get_comm_counts()
        return "+".join(f"{getattr(op, '__name__', str(op)).split('.')[-1]}x{n}"
                        for op, n in counts.items() if n) or "local"
    except Exception as e:  # the count is a label only: never lose the timing for it
        return f"uncounted ({type(e).__name__})"


def run_pair(row, world, rank, dev, args, tags):
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import DTensor
    mesh = pl.parse_mesh(row["mesh"])
    shape = pl.parse_shape(row["shape"])
    src = pl.parse_layout(row["from"], mesh, shape)
    dst = pl.parse_layout(row["to"], mesh, shape)
    base = dict(tags, ranks=world, pair=row["name"], mesh=row["mesh"], shape=row["shape"],
                dtype=row["dtype"], **{"from": row["from"], "to": row["to"]}, plan="dtensor",
                step="all", kind="plan")
    try:
        sp, tp = pl.to_dtensor(src, mesh), pl.to_dtensor(dst, mesh)
    except pl.NotExpressible as e:
        return dict(base, steps="", placements_from="", placements_to="", time_us="",
                    time_min_us="", time_max_us="", iterations=0, wrong="",
                    status=f"not-expressible: {e}")
    base.update(placements_from=pl.placements_text(sp), placements_to=pl.placements_text(tp))
    dtype = DTYPES[row["dtype"]]
    # One DeviceMesh (and its subgroups' communicators) per mesh, shared by its pairs.
    if str(mesh) not in _MESHES:
        _MESHES[str(mesh)] = init_device_mesh("cuda", mesh.sizes, mesh_dim_names=mesh.names)
    dmesh = _MESHES[str(mesh)]
    x = source_block(mesh, shape, src, rank, dev, dtype)
    want, _ = values(pl.block_of(mesh, shape, dst, rank), shape, dev, dtype)
    stride = torch.empty(shape, device="meta").stride()
    dt = DTensor.from_local(x, dmesh, placement_objects(sp), run_check=False,
                            shape=torch.Size(shape), stride=stride)
    target = placement_objects(tp)

    def call():
        return wait_local(dt.redistribute(dmesh, target))

    steps = comm_counts(call)
    out = call()
    if dst.partial:
        # A kept pending sum: the members' addends must sum to the target block.
        out = out.clone()
        for a in dst.partial:
            dist.all_reduce(out, group=dmesh.get_group(mesh.names[a]))
    wrong = torch.tensor([int((out.float() != want.float()).sum().item())
                          if tuple(out.shape) == tuple(want.shape) else want.numel()],
                         device=dev)
    del out
    line_up = torch.zeros(1, device=dev)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for i in range(args.warmup + args.iterations):
        dist.all_reduce(line_up)
        start.record()
        call()
        end.record()
        end.synchronize()
        if i >= args.warmup:
            times.append(start.elapsed_time(end) * 1e3)
    t = torch.tensor(times, device=dev, dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    dist.all_reduce(wrong)
    per_run = t.tolist()
    return dict(base, steps=steps, time_us=f"{statistics.median(per_run):.2f}",
                time_min_us=f"{min(per_run):.2f}", time_max_us=f"{max(per_run):.2f}",
                iterations=len(per_run), wrong=int(wrong.item()), status="ok")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", default="benchmarks/redistribution/gpu_pairs.csv")
    ap.add_argument("--output", default="")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--iterations", type=int, default=30)
    ap.add_argument("--only", default="", help="comma-separated pair names")
    args = ap.parse_args()
    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    local = int(os.environ.get("LOCAL_RANK", rank))
    torch.cuda.set_device(local)
    dev = torch.device("cuda", local)
    try:
        driver = subprocess.run(["nvidia-smi", "--query-gpu=driver_version",
                                 "--format=csv,noheader", "-i", "0"],
                                capture_output=True, text=True).stdout.strip()
    except OSError:
        driver = ""
    tags = dict(gpu=torch.cuda.get_device_name(dev).replace(",", " "), driver=driver,
                cuda=torch.version.cuda, nccl=".".join(map(str, torch.cuda.nccl.version())),
                torch=torch.__version__)
    if rank == 0:
        try:
            libs = sorted({line.split()[-1] for line in open("/proc/self/maps")
                           if "libnccl" in line})
        except OSError:
            libs = []
        print(f"# torch {torch.__version__}, NCCL {tags['nccl']} from {', '.join(libs) or '?'}",
              file=sys.stderr, flush=True)
    only = set(filter(None, args.only.split(",")))
    rows = [r for r in csv.DictReader(open(args.pairs))
            if pl.parse_mesh(r["mesh"]).devices == world and (not only or r["name"] in only)]
    out_rows = []
    writer = csv.DictWriter(sys.stdout, fieldnames=HEADER) if rank == 0 else None
    if writer:
        writer.writeheader()
    for row in rows:
        try:
            r = run_pair(row, world, rank, dev, args, tags)
        except Exception as e:  # one pair's failure must not lose the others' rows
            r = dict(tags, ranks=world, pair=row["name"], mesh=row["mesh"], shape=row["shape"],
                     dtype=row["dtype"], plan="dtensor", step="all", kind="plan",
                     iterations=0, status=f"error: {type(e).__name__}: {e}".replace("\n", " "),
                     **{"from": row["from"], "to": row["to"]})
            print(f"rank {rank}: {row['name']}: {r['status']}", file=sys.stderr, flush=True)
        torch.cuda.empty_cache()
        if writer:
            writer.writerow(r)
            sys.stdout.flush()
            out_rows.append(r)
    if rank == 0 and args.output:
        tmp = args.output + ".tmp"
        with open(tmp, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=HEADER, restval="")
            w.writeheader()
            w.writerows(out_rows)
        os.replace(tmp, args.output)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
