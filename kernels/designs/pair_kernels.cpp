#include "kernels/designs/pair_kernels.hpp"

#include <string>

#include "kernels/ops/embedding_bag.hpp"

namespace overlapsim::kernels {
namespace {

// Where chunk c's GEMM reads A and writes C (elements from the buffer starts), and how it
// is batched over the row blocks of different ranks.
struct GemmChunk {
  GemmShape shape;
  GemmBatching batching;
  std::int64_t a_offset = 0;
  std::int64_t b_offset = 0;
  std::int64_t c_offset = 0;
};

GemmChunk gemm_chunk(PairOp op, const PairShape& s, const ChunkPlan& plan, int chunk) {
  GemmChunk g;
  const std::int64_t rows = plan.chunk_rows;
  const std::int64_t c = chunk;
  g.shape = {rows, s.n, s.k};
  switch (op) {
    case PairOp::GemmAllReduce:
      g.a_offset = c * rows * s.k;
      g.c_offset = c * rows * s.n;
      break;
    case PairOp::GemvAllReduce:
      g.shape = {1, rows, s.k};
      g.b_offset = c * rows * s.k;
      g.c_offset = c * rows;
      break;
    case PairOp::GemmReduceScatter:  // natural A rows -> chunk-major C
      g.batching = {plan.groups, plan.group_rows * s.k, rows * s.n};
      g.a_offset = c * rows * s.k;
      g.c_offset = c * plan.groups * rows * s.n;
      break;
    case PairOp::AllGatherGemm:  // chunk-major gathered A -> natural C rows
      g.batching = {plan.groups, rows * s.k, plan.group_rows * s.n};
      g.a_offset = c * plan.groups * rows * s.k;
      g.c_offset = c * rows * s.n;
      break;
    case PairOp::GemmAllToAll:  // natural -> natural, one slice of every rank's block
      g.batching = {plan.groups, plan.group_rows * s.k, plan.group_rows * s.n};
      g.a_offset = c * rows * s.k;
      g.c_offset = c * rows * s.n;
      break;
    case PairOp::EmbeddingAllToAll:
      break;
  }
  // Blocks that lie back to back in both A and C are one taller GEMM (always when k = 1).
  if (g.batching.count > 1 && g.batching.stride_a_elems == rows * s.k &&
      g.batching.stride_c_elems == rows * s.n) {
    g.shape.m = rows * g.batching.count;
    g.batching = {};
  }
  return g;
}

// Every chunk's offsets are multiples of chunk 1's, so its alignment holds for all.
std::size_t gemm_alignment(const GemmChunk& g, std::size_t elem) {
  return common_alignment({static_cast<std::uint64_t>(g.a_offset) * elem,
                           static_cast<std::uint64_t>(g.b_offset) * elem,
                           static_cast<std::uint64_t>(g.c_offset) * elem,
                           static_cast<std::uint64_t>(g.batching.stride_a_elems) * elem,
                           static_cast<std::uint64_t>(g.batching.stride_c_elems) * elem});
}

const char* at(const void* base, std::int64_t elems, std::size_t elem) {
  return static_cast<const char*>(base) + elems * static_cast<std::int64_t>(elem);
}
char* at(void* base, std::int64_t elems, std::size_t elem) {
  return static_cast<char*>(base) + elems * static_cast<std::int64_t>(elem);
}

}  // namespace

Status PairKernels::initialize(CommHandle* comm, cublasLtHandle_t lt, PairOp op,
                               const PairShape& shape, DType dtype, void* workspace,
                               std::size_t workspace_bytes) {
  comm_ = comm;
  lt_ = lt;
  op_ = op;
  shape_ = shape;
  dtype_ = dtype;
  workspace_ = workspace;
  workspace_bytes_ = workspace_bytes;
  gemm_by_chunks_.clear();
  if (auto error = shape_error(op, shape, comm->world))
    return Status::failure(std::string(to_string(op)) + ": " + *error);
  if (op == PairOp::EmbeddingAllToAll)
    OVERLAPSIM_TRY(
        embedding_bag_can_implement({shape.table_rows, shape.n, shape.m, shape.k}, dtype));
  return Status::success();
}

Status PairKernels::prepare(int chunks) {
  if (auto error = chunk_error(op_, shape_, world(), chunks))
    return Status::failure(std::string(to_string(op_)) + ": " + *error);
  if (op_ == PairOp::EmbeddingAllToAll || gemm_by_chunks_.count(chunks)) return Status::success();
  const ChunkPlan plan = make_chunk_plan(op_, shape_, world(), chunks);
  // Chunk 1 (or 0 when unchunked) carries the smallest non-zero offsets.
  const GemmChunk probe = gemm_chunk(op_, shape_, plan, chunks > 1 ? 1 : 0);
  CublasLtGemm gemm;
  OVERLAPSIM_TRY(gemm.initialize(lt_, probe.shape, dtype_, probe.batching,
                                 gemm_alignment(probe, dtype_bytes(dtype_)), workspace_,
                                 workspace_bytes_));
  gemm_by_chunks_.emplace(chunks, std::move(gemm));
  return Status::success();
}

Status PairKernels::enqueue_op(const PairBuffers& b, int chunks, int chunk,
                               cudaStream_t stream) const {
  const ChunkPlan plan = make_chunk_plan(op_, shape_, world(), chunks);
  if (op_ == PairOp::EmbeddingAllToAll) {
    const BagRange range{chunk * plan.chunk_rows, plan.chunk_rows, plan.groups, plan.group_rows};
    return embedding_bag_sum(b.a, b.indices, b.c, {shape_.table_rows, shape_.n, shape_.m, shape_.k},
                             range, dtype_, stream);
  }
  auto found = gemm_by_chunks_.find(chunks);
  if (found == gemm_by_chunks_.end())
    return Status::failure("PairKernels: prepare(" + std::to_string(chunks) + ") was not called");
  const std::size_t elem = dtype_bytes(dtype_);
  const GemmChunk g = gemm_chunk(op_, shape_, plan, chunk);
  const void* a = op_ == PairOp::AllGatherGemm ? b.staging : b.a;
  return found->second.run(at(a, g.a_offset, elem), at(b.b, g.b_offset, elem),
                           at(b.c, g.c_offset, elem), stream);
}

Status PairKernels::enqueue_collective(const PairBuffers& b, int chunks, int chunk,
                                       cudaStream_t stream) const {
  const ChunkPlan plan = make_chunk_plan(op_, shape_, world(), chunks);
  const std::size_t elem = dtype_bytes(dtype_);
  const std::int64_t rows = plan.chunk_rows;
  const std::int64_t c = chunk;
  const std::int64_t n = shape_.n;
  switch (op_) {
    case PairOp::GemmAllReduce:
      return all_reduce(*comm_, at(b.c, c * rows * n, elem), at(b.c, c * rows * n, elem),
                        static_cast<std::size_t>(rows * n), dtype_, stream);
    case PairOp::GemvAllReduce:
      return all_reduce(*comm_, at(b.c, c * rows, elem), at(b.c, c * rows, elem),
                        static_cast<std::size_t>(rows), dtype_, stream);
    case PairOp::GemmReduceScatter:
      return reduce_scatter(*comm_, at(b.c, c * plan.groups * rows * n, elem),
                            at(b.out, c * rows * n, elem), static_cast<std::size_t>(rows * n),
                            dtype_, stream);
    case PairOp::AllGatherGemm:
      return all_gather(*comm_, at(b.a, c * rows * shape_.k, elem),
                        at(b.staging, c * plan.groups * rows * shape_.k, elem),
                        static_cast<std::size_t>(rows * shape_.k), dtype_, stream);
    case PairOp::GemmAllToAll:
    case PairOp::EmbeddingAllToAll: {
      const auto stride = static_cast<std::size_t>(plan.group_rows * n);
      return all_to_all(*comm_, at(b.c, c * rows * n, elem), stride, at(b.out, c * rows * n, elem),
                        stride, static_cast<std::size_t>(rows * n), dtype_, stream);
    }
  }
  return Status::failure("PairKernels: unknown pair");
}

}  // namespace overlapsim::kernels
