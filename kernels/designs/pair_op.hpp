#pragma once
// Operator-collective pairs, their buffers and how the decomposed design chunks them.
//
// Shapes are per rank (every rank runs the same shape on its own data):
//   gemm+allreduce     A[M x K] * B[N x K]^T -> C[M x N]; allreduce of C in place.
//   gemm+reducescatter C as above; rank r ends with out[M/n x N] = sum over ranks of C's
//                      rows [r*M/n, (r+1)*M/n).
//   allgather+gemm     each rank holds A's rows [r*M/n, (r+1)*M/n) (M/n x K); allgather to
//                      A[M x K]; then C = A * B^T (M x N).
//   gemm+alltoall      C as above; rows [p*M/n, (p+1)*M/n) go to rank p, and the block
//                      from rank s lands at out rows [s*M/n, (s+1)*M/n) (MoE combine).
//   gemv+allreduce     y[N] = W[N x K] * x[K] (M = 1); allreduce of y in place.
//   embedding+alltoall E[M x D] = embedding bags (M bags, D = n, pooling L = k, over a
//                      table of table_rows rows); rows exchanged as in gemm+alltoall.
//
// Chunking (decomposed design, k chunks). Rows are split into `groups` equal blocks (1
// for allreduce and allgather; the world size for reducescatter and alltoall, the
// blocks that belong to different ranks), each block into k chunks of rows. Chunk c
// covers rows {g*M/groups + c*rows + j : every block g, j < rows}, rows = M/(groups*k),
// so chunk c's collective moves a slice of every rank's block and the chunked result
// equals the unchunked one element for element:
//   - allreduce: chunk c = rows [c*M/k, (c+1)*M/k), reduced in place;
//   - reducescatter: the GEMM writes chunk c's blocks one after another into C (C is a
//     staging buffer: chunk-major, [k][n][M/(n k)][N]); reducescatter of that contiguous
//     region delivers rows [c*M/(n k), ...) of each rank's out;
//   - alltoall: C keeps its natural layout; chunk c sends rows [p*M/n + c*M/(n k), ...)
//     to rank p and receives into the same rows of out from each peer;
//   - allgather+gemm: chunk c gathers rows [c*M/(n k), ...) of every shard into a
//     chunk-major staging A ([k][n][M/(n k)][K]), then a GEMM batched over the n blocks
//     writes them to C's natural rows;
//   - gemv: chunks split N instead (M = 1): chunk c = y[c*N/k, (c+1)*N/k).
// A chunk count is valid when it divides the rows (or N) evenly. C++17.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "kernels/collectives/nccl_collectives.hpp"
#include "kernels/harness/dtype.hpp"

namespace overlapsim::kernels {

enum class PairOp {
  GemmAllReduce,
  GemmReduceScatter,
  AllGatherGemm,
  GemmAllToAll,
  GemvAllReduce,
  EmbeddingAllToAll
};

const char* to_string(PairOp op);  // "gemm+allreduce", ... (the CSV `op` column)
std::optional<PairOp> parse_pair_op(std::string_view name);
CollectiveOp pair_collective(PairOp op);
bool collective_first(PairOp op);     // allgather+gemm
const char* compute_name(PairOp op);  // "gemm", "gemv", "embedding"

struct PairShape {
  std::int64_t m = 0;
  std::int64_t n = 0;
  std::int64_t k = 0;
  std::int64_t table_rows = 0;  // embedding only
};

// Element counts of one rank's buffers.
struct PairSizes {
  std::size_t a = 0;        // A (allgather+gemm: the shard), x for gemv, table for embedding
  std::size_t b = 0;        // B / W (0 for embedding)
  std::size_t indices = 0;  // embedding only (int32)
  std::size_t staging = 0;  // allgather+gemm: the gathered A
  std::size_t c = 0;        // op output
  std::size_t out = 0;      // collective output (0: in place in c)
};

struct ChunkPlan {
  int chunks = 1;
  int groups = 1;               // row blocks that belong to different ranks
  std::int64_t group_rows = 0;  // rows per block (M / groups)
  std::int64_t chunk_rows = 0;  // rows per block per chunk; for gemv: N per chunk
};

// Shape checks that do not depend on chunking; a message naming the problem, or nullopt.
std::optional<std::string> shape_error(PairOp op, const PairShape& shape, int world);
// Why `chunks` cannot split this shape, or nullopt.
std::optional<std::string> chunk_error(PairOp op, const PairShape& shape, int world, int chunks);
ChunkPlan make_chunk_plan(PairOp op, const PairShape& shape, int world, int chunks);

PairSizes pair_sizes(PairOp op, const PairShape& shape, int world);
// nccl-tests "bytes" of the pair's collective.
std::uint64_t collective_bytes(PairOp op, const PairShape& shape, int world, DType dtype);
// Floating-point operations of the compute op (2MNK for GEMM/GEMV; adds for embedding).
double compute_flops(PairOp op, const PairShape& shape);

}  // namespace overlapsim::kernels
