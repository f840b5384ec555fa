#!/usr/bin/env python3
"""PyTorch peer of embedding-alltoall-bench --passes backward: DLRM's embedding backward.

Every rank holds the gradients of its local batch's pooled rows for the 26 DLRM-DCNv2
tables (dim 128, the MLPerf multi-hot sizes times --pooling-scales, bf16), [tables][B][dim]
as the forward left them; the table owners (the forward peer's sharding) need them for the
global batch. PyTorch's way, one stream:
  alltoall+embedding_bag_backward torch_sequential   the rows put in owner order,
        dist.all_to_all_single (NCCL), the owners' rows put in [table][global batch] order,
        then torch.autograd.grad through F.embedding_bag(mode="sum", sparse=True): the
        per-lookup sparse gradient (values: the bag's gradient once per lookup)
  embedding_bag_backward torch                       the autograd backward alone
  alltoall_backward torch_nccl                       the all-to-all alone
The backward never reads the tables' rows, so they are capped at --max-rows (default 100000;
the indices are drawn in that range). Columns, timing and alignment as the forward peer
(torch_embedding_alltoall.py). `wrong`: sparse-gradient values that differ from their
bag's gradient row, plus indices that differ from the forward's, summed over ranks.

  torchrun --nproc-per-node 4 benchmarks/peers/torch_embedding_alltoall_backward.py --output t.csv
"""
import argparse
import os

os.environ.setdefault("NCCL_NVLS_ENABLE", "0")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch_embedding_alltoall import DIM, POOLING, ROWS, Bench, run_cases, shard_tables  # noqa: E402


class BackwardBench(Bench):
    def case(self, batch, scale):
        w = self.world
        g = w * batch
        tables = len(ROWS)
        pooling = [p * scale for p in POOLING]
        owner = shard_tables(POOLING, w)
        slots_of = [sum(1 for t in range(tables) if owner[t] == r) for r in range(w)]
        slots = len(self.slots)
        gen = torch.Generator(device=self.device)
        gen.manual_seed(11 + self.rank + 100 * batch + 10000 * scale)
        grads = torch.empty(tables, batch, DIM, dtype=torch.bfloat16,
                            device=self.device).uniform_(-1, 1, generator=gen)
        owner_order = torch.tensor([t for r in range(w) for t in range(tables) if owner[t] == r],
                                   device=self.device)
        recv = torch.empty(w * slots * batch, DIM, dtype=torch.bfloat16, device=self.device)
        in_splits = [slots_of[r] * batch for r in range(w)]
        out_splits = [slots * batch] * w
        weights = [table.detach().requires_grad_() for table in self.tables]
        indices = [torch.randint(0, table.shape[0], (g, pooling[t]), device=self.device,
                                 generator=gen, dtype=torch.int64)
                   for t, table in zip(self.slots, self.tables)]
        pooled = [F.embedding_bag(idx, wt, mode="sum", sparse=True)
                  for idx, wt in zip(indices, weights)]

        def exchange():
            send = grads.index_select(0, owner_order)
            dist.all_to_all_single(recv, send.view(-1, DIM), out_splits, in_splits)

        def owner_rows():  # [slot][global batch][dim]
            return recv.view(w, slots, batch, DIM).transpose(0, 1).reshape(slots, g, DIM)

        def local(rows):
            if not slots:
                return []
            return torch.autograd.grad(pooled, weights, list(rows.unbind(0)), retain_graph=True)

        def sequential():
            exchange()
            return local(owner_rows())

        exchange()
        rows = owner_rows().clone()
        bad = 0
        for s, sparse in enumerate(sequential()):
            values = sparse._values()
            want = rows[s].repeat_interleave(pooling[self.slots[s]], 0)
            bad += int((values.view(torch.int16) != want.view(torch.int16)).any(1).sum().item())
            bad += int((sparse._indices().view(-1) != indices[s].view(-1)).sum().item())
        count = torch.tensor([float(bad)], dtype=torch.float64, device=self.device)
        dist.all_reduce(count)
        wrong = int(count.item())
        k = sum(pooling)
        nbytes = tables * batch * DIM * 2
        factor = (w - 1) / w
        self.emit("alltoall+embedding_bag_backward", "torch_sequential", batch, k, nbytes,
                  self.timed(sequential), factor, wrong)
        self.emit("embedding_bag_backward", "torch", batch, k, 0, self.timed(lambda: local(rows)),
                  0.0, wrong)
        self.emit("alltoall_backward", "torch_nccl", batch, k, nbytes, self.timed(exchange),
                  factor, 0)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--output", default="")
    parser.add_argument("--iterations", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--batches", type=int, nargs="+", default=[256, 1024, 2112, 8192, 32768])
    parser.add_argument("--pooling-scales", type=int, nargs="+", default=[1])
    parser.add_argument("--max-rows", type=int, default=100000)
    args = parser.parse_args()
    dist.init_process_group("nccl", device_id=torch.device(
        "cuda", int(os.environ.get("LOCAL_RANK", 0))))
    run_cases(BackwardBench(args), args, "torch_embedding_alltoall_backward")


if __name__ == "__main__":
    main()
