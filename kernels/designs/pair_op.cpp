#include "kernels/designs/pair_op.hpp"

namespace overlapsim::kernels {
namespace {

constexpr PairOp kAllPairs[] = {PairOp::GemmAllReduce, PairOp::GemmReduceScatter,
                                PairOp::AllGatherGemm, PairOp::GemmAllToAll,
                                PairOp::GemvAllReduce, PairOp::EmbeddingAllToAll};

int row_groups(PairOp op, int world) {
  const CollectiveOp coll = pair_collective(op);
  return coll == CollectiveOp::ReduceScatter || coll == CollectiveOp::AllToAll ||
                 coll == CollectiveOp::AllGather
             ? world
             : 1;
}

}  // namespace

const char* to_string(PairOp op) {
  switch (op) {
    case PairOp::GemmAllReduce:
      return "gemm+allreduce";
    case PairOp::GemmReduceScatter:
      return "gemm+reducescatter";
    case PairOp::AllGatherGemm:
      return "allgather+gemm";
    case PairOp::GemmAllToAll:
      return "gemm+alltoall";
    case PairOp::GemvAllReduce:
      return "gemv+allreduce";
    case PairOp::EmbeddingAllToAll:
      return "embedding+alltoall";
  }
  return "?";
}

std::optional<PairOp> parse_pair_op(std::string_view name) {
  for (PairOp op : kAllPairs)
    if (name == to_string(op)) return op;
  return std::nullopt;
}

CollectiveOp pair_collective(PairOp op) {
  switch (op) {
    case PairOp::GemmAllReduce:
    case PairOp::GemvAllReduce:
      return CollectiveOp::AllReduce;
    case PairOp::GemmReduceScatter:
      return CollectiveOp::ReduceScatter;
    case PairOp::AllGatherGemm:
      return CollectiveOp::AllGather;
    case PairOp::GemmAllToAll:
    case PairOp::EmbeddingAllToAll:
      return CollectiveOp::AllToAll;
  }
  return CollectiveOp::AllReduce;
}

bool collective_first(PairOp op) { return op == PairOp::AllGatherGemm; }

const char* compute_name(PairOp op) {
  if (op == PairOp::GemvAllReduce) return "gemv";
  if (op == PairOp::EmbeddingAllToAll) return "embedding";
  return "gemm";
}

std::optional<std::string> shape_error(PairOp op, const PairShape& s, int world) {
  if (s.m < 1 || s.n < 1 || s.k < 1) return std::string("m, n and k must be >= 1");
  if (op == PairOp::GemvAllReduce && s.m != 1) return std::string("gemv needs m = 1");
  if (op == PairOp::EmbeddingAllToAll && s.table_rows < 1)
    return std::string("embedding needs table_rows >= 1");
  const int groups = row_groups(op, world);
  if (s.m % groups != 0)
    return "m = " + std::to_string(s.m) + " must divide by the " + std::to_string(groups) +
           " ranks";
  return std::nullopt;
}

std::optional<std::string> chunk_error(PairOp op, const PairShape& s, int world, int chunks) {
  if (auto error = shape_error(op, s, world)) return error;
  if (chunks < 1) return std::string("chunks must be >= 1");
  if (op == PairOp::GemvAllReduce) {
    if (s.n % chunks != 0)
      return "n = " + std::to_string(s.n) + " does not split into " + std::to_string(chunks) +
             " chunks";
    return std::nullopt;
  }
  const std::int64_t group_rows = s.m / row_groups(op, world);
  if (group_rows % chunks != 0)
    return std::to_string(group_rows) + " rows per rank block do not split into " +
           std::to_string(chunks) + " chunks";
  return std::nullopt;
}

ChunkPlan make_chunk_plan(PairOp op, const PairShape& s, int world, int chunks) {
  ChunkPlan plan;
  plan.chunks = chunks;
  if (op == PairOp::GemvAllReduce) {
    plan.groups = 1;
    plan.group_rows = s.n;
    plan.chunk_rows = s.n / chunks;
    return plan;
  }
  plan.groups = row_groups(op, world);
  plan.group_rows = s.m / plan.groups;
  plan.chunk_rows = plan.group_rows / chunks;
  return plan;
}

PairSizes pair_sizes(PairOp op, const PairShape& s, int world) {
  const auto m = static_cast<std::size_t>(s.m);
  const auto n = static_cast<std::size_t>(s.n);
  const auto k = static_cast<std::size_t>(s.k);
  PairSizes sizes;
  switch (op) {
    case PairOp::GemmAllReduce:
    case PairOp::GemvAllReduce:
    case PairOp::GemmReduceScatter:
    case PairOp::GemmAllToAll:
      // The op on the full inputs, then the collective on C (in place for the all-reduce).
      sizes.a = m * k;
      sizes.b = n * k;
      sizes.c = m * n;
      if (op == PairOp::GemmReduceScatter) sizes.out = m / world * n;
      if (op == PairOp::GemmAllToAll) sizes.out = m * n;
      break;
    case PairOp::AllGatherGemm:
      sizes.a = m / world * k;
      sizes.b = n * k;
      sizes.staging = m * k;
      sizes.c = m * n;
      break;
    case PairOp::EmbeddingAllToAll:
      sizes.a = static_cast<std::size_t>(s.table_rows) * n;
      sizes.indices = m * k;
      sizes.c = m * n;
      sizes.out = m * n;
      break;
  }
  return sizes;
}

std::uint64_t collective_bytes(PairOp op, const PairShape& s, int, DType dtype) {
  const std::uint64_t elem = dtype_bytes(dtype);
  if (op == PairOp::AllGatherGemm) return static_cast<std::uint64_t>(s.m) * s.k * elem;
  return static_cast<std::uint64_t>(s.m) * s.n * elem;  // C (or E, or y) per rank
}

double compute_flops(PairOp op, const PairShape& s) {
  if (op == PairOp::EmbeddingAllToAll) return static_cast<double>(s.m) * s.n * s.k;
  return 2.0 * static_cast<double>(s.m) * s.n * s.k;
}

}  // namespace overlapsim::kernels
