#include "kernels/designs/shaped.hpp"

#include "kernels/designs/sequential.hpp"
#include "kernels/tilewise/tilewise_design.hpp"

namespace overlapsim::kernels {
namespace {

// Chunk c's GEMM: where it reads A and writes C, and its batching over the rank blocks.
// The same mapping as PairKernels' (pair_kernels.cpp, pair_op.hpp's chunking), for the
// three pairs this design runs, so the chunks write exactly where the decomposed design's do.
struct ChunkGemm {
  GemmShape shape;
  GemmBatching batching;
  std::int64_t a_offset = 0;
  std::int64_t c_offset = 0;
};

ChunkGemm chunk_gemm(PairOp op, const PairShape& s, const ChunkPlan& plan, int chunk) {
  ChunkGemm g;
  const std::int64_t rows = plan.chunk_rows;
  g.shape = {rows, s.n, s.k};
  g.a_offset = chunk * rows * s.k;
  switch (op) {
    case PairOp::GemmReduceScatter:  // natural A rows -> chunk-major C
      g.batching = {plan.groups, plan.group_rows * s.k, rows * s.n};
      g.c_offset = chunk * plan.groups * rows * s.n;
      break;
    case PairOp::GemmAllToAll:  // one slice of every rank's block, natural layout
      g.batching = {plan.groups, plan.group_rows * s.k, plan.group_rows * s.n};
      g.c_offset = chunk * rows * s.n;
      break;
    default:  // gemm+allreduce: consecutive rows
      g.c_offset = chunk * rows * s.n;
      break;
  }
  if (g.batching.count > 1 && g.batching.stride_a_elems == rows * s.k &&
      g.batching.stride_c_elems == rows * s.n) {
    g.shape.m = rows * g.batching.count;
    g.batching = {};
  }
  return g;
}

// Chunk 1 (0 when unchunked) has the smallest non-zero offsets: its alignment holds for all.
std::size_t chunk_alignment(const ChunkGemm& probe, DType dtype) {
  const std::size_t elem = dtype_bytes(dtype);
  return common_alignment({static_cast<std::uint64_t>(probe.a_offset) * elem,
                           static_cast<std::uint64_t>(probe.c_offset) * elem,
                           static_cast<std::uint64_t>(probe.batching.stride_a_elems) * elem,
                           static_cast<std::uint64_t>(probe.batching.stride_c_elems) * elem});
}

}  // namespace

Status decomposed_chunk_gemm(cublasLtHandle_t lt, PairOp op, const PairShape& shape, int world,
                             DType dtype, void* workspace, std::size_t workspace_bytes, int chunks,
                             CublasLtGemm* out, int* batches) {
  if (!ShapedDesign::supports(op))
    return Status::failure(std::string("shaped: pair ") + to_string(op) + " is not supported");
  if (auto error = chunk_error(op, shape, world, chunks))
    return Status::failure(std::string("shaped: ") + to_string(op) + ": " + *error);
  const ChunkPlan plan = make_chunk_plan(op, shape, world, chunks);
  const ChunkGemm probe = chunk_gemm(op, shape, plan, chunks > 1 ? 1 : 0);
  *batches = probe.batching.count;
  return out->initialize(lt, probe.shape, dtype, probe.batching, chunk_alignment(probe, dtype),
                         workspace, workspace_bytes);
}

std::string ShapedConfig::name() const {
  // Appended piece by piece: GCC 12 flags `"s" + std::to_string(...)` with a false -Wrestrict.
  std::string text("s");
  text.append(std::to_string(free_sms)).append(":c").append(std::to_string(comm_ctas));
  return text.append(":k").append(std::to_string(chunks));
}

Status make_shaped_comm(CommHandle& parent, int ctas, CommHandle* out) {
  if (ctas < 1) return Status::failure("make_shaped_comm: ctas must be >= 1");
  // minCTAs too, so c is the CTA count the collective runs with, not only its cap.
  OVERLAPSIM_TRY(tilewise::make_limited_comm(parent, ctas, out, ctas));
  out->barrier = parent.barrier;  // prepare() meets the other ranks on the child
  return Status::success();
}

bool ShapedDesign::supports(PairOp op) {
  return op == PairOp::GemmAllReduce || op == PairOp::GemmReduceScatter ||
         op == PairOp::GemmAllToAll;
}

ShapedDesign::~ShapedDesign() { destroy(); }

void ShapedDesign::destroy() {
  for (cudaEvent_t e : chunk_done_) cudaEventDestroy(e);
  chunk_done_.clear();
  if (fork_) cudaEventDestroy(fork_);
  if (join_) cudaEventDestroy(join_);
  fork_ = join_ = nullptr;
}

Status ShapedDesign::initialize(CommHandle* comm, cublasLtHandle_t lt, PairOp op,
                                const PairShape& shape, DType dtype, void* workspace,
                                std::size_t workspace_bytes, int device_sms,
                                const ShapedConfig& config) {
  destroy();
  if (!supports(op))
    return Status::failure(std::string("shaped: pair ") + to_string(op) + " is not supported");
  if (config.chunks < 1) return Status::failure("shaped: chunks must be >= 1");
  if (config.free_sms < 0 || config.free_sms >= device_sms)
    return Status::failure("shaped: free_sms " + std::to_string(config.free_sms) + " outside [0, " +
                           std::to_string(device_sms) + ")");
  config_ = config;
  op_ = op;
  shape_ = shape;
  dtype_ = dtype;
  world_ = comm->world;
  if (auto error = chunk_error(op, shape, world_, config.chunks))
    return Status::failure(std::string("shaped: ") + to_string(op) + ": " + *error);
  OVERLAPSIM_TRY(collective_.initialize(comm, lt, op, shape, dtype, workspace, workspace_bytes));
  const ChunkPlan plan = make_chunk_plan(op, shape, world_, config.chunks);
  const ChunkGemm probe = chunk_gemm(op, shape, plan, config.chunks > 1 ? 1 : 0);
  const std::size_t alignment = chunk_alignment(probe, dtype);
  GemmRunOptions options;
  if (config.free_sms > 0) options.sm_count_target = device_sms - config.free_sms;
  // Whatever S: a chunk's GEMM is smaller than the whole, and the heuristic answered
  // 1024x1536x777 in two chunks with a split-K algorithm that the whole GEMM does not use
  // (296 elements off the sequential result on 2 x H100, the same with the SM target exact).
  options.no_split_k = true;
  OVERLAPSIM_TRY(gemm_.initialize(lt, probe.shape, dtype, probe.batching, alignment, workspace,
                                  workspace_bytes, {}, options));
  gemm_batches_ = probe.batching.count;
  CUDA_CHECK(cudaEventCreateWithFlags(&fork_, cudaEventDisableTiming));
  CUDA_CHECK(cudaEventCreateWithFlags(&join_, cudaEventDisableTiming));
  chunk_done_.resize(static_cast<std::size_t>(config.chunks), nullptr);
  for (cudaEvent_t& e : chunk_done_)
    CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  return Status::success();
}

Status ShapedDesign::enqueue_gemm(const PairBuffers& b, int chunk, cudaStream_t stream) const {
  const ChunkPlan plan = make_chunk_plan(op_, shape_, world_, config_.chunks);
  const ChunkGemm g = chunk_gemm(op_, shape_, plan, chunk);
  const auto elem = static_cast<std::int64_t>(dtype_bytes(dtype_));
  return gemm_.run(static_cast<const char*>(b.a) + g.a_offset * elem, b.b,
                   static_cast<char*>(b.c) + g.c_offset * elem, stream);
}

Status ShapedDesign::run_gemms(const PairBuffers& buffers, cudaStream_t stream) const {
  if (fork_ == nullptr) return Status::failure("shaped: run_gemms() before initialize()");
  for (int c = 0; c < config_.chunks; ++c) OVERLAPSIM_TRY(enqueue_gemm(buffers, c, stream));
  return Status::success();
}

Status ShapedDesign::prepare(const PairBuffers& buffers, cudaStream_t compute_stream,
                             CommHandle& barrier_comm) {
  OVERLAPSIM_TRY(run_gemms(buffers, compute_stream));
  return quiesce(barrier_comm, {compute_stream}, "shaped: GEMM kernels loaded");
}

Status ShapedDesign::run(const PairBuffers& buffers, cudaStream_t compute_stream,
                         cudaStream_t comm_stream) const {
  if (fork_ == nullptr) return Status::failure("shaped: run() before initialize()");
  CUDA_CHECK(cudaEventRecord(fork_, compute_stream));
  CUDA_CHECK(cudaStreamWaitEvent(comm_stream, fork_, 0));
  for (int c = 0; c < config_.chunks; ++c) {
    OVERLAPSIM_TRY(enqueue_gemm(buffers, c, compute_stream));
    CUDA_CHECK(cudaEventRecord(chunk_done_[c], compute_stream));
    CUDA_CHECK(cudaStreamWaitEvent(comm_stream, chunk_done_[c], 0));
    OVERLAPSIM_TRY(collective_.enqueue_collective(buffers, config_.chunks, c, comm_stream));
  }
  CUDA_CHECK(cudaEventRecord(join_, comm_stream));
  CUDA_CHECK(cudaStreamWaitEvent(compute_stream, join_, 0));
  return Status::success();
}

ShapedChoice ShapedChoice::grid(const ShapedDesign& design) {
  ShapedChoice c;
  c.kind_ = Kind::Grid;
  c.grid_ = &design;
  c.chunks_ = design.config().chunks;
  return c;
}

ShapedChoice ShapedChoice::decomposed(const PairKernels& pair, DecomposedDesign& design,
                                      int chunks) {
  ShapedChoice c;
  c.kind_ = Kind::Decomposed;
  c.pair_ = &pair;
  c.decomposed_ = &design;
  c.chunks_ = chunks;
  return c;
}

ShapedChoice ShapedChoice::sequential(const PairKernels& pair) {
  ShapedChoice c;
  c.kind_ = Kind::Sequential;
  c.pair_ = &pair;
  c.chunks_ = 1;
  return c;
}

int ShapedChoice::chunks() const { return chunks_; }

std::string ShapedChoice::name() const {
  switch (kind_) {
    case Kind::Decomposed:
      return "decomposed";
    case Kind::Sequential:
      return "sequential";
    case Kind::Grid:
      break;
  }
  const ShapedConfig& g = grid_->config();
  std::string text("s");
  text.append(std::to_string(g.free_sms)).append(":c");
  return text.append(std::to_string(g.comm_ctas));
}

Status ShapedChoice::run(const PairBuffers& buffers, cudaStream_t compute_stream,
                         cudaStream_t comm_stream) const {
  switch (kind_) {
    case Kind::Decomposed:
      return decomposed_->run(*pair_, buffers, chunks_, compute_stream, comm_stream);
    case Kind::Sequential:
      return run_sequential(*pair_, buffers, compute_stream);
    case Kind::Grid:
      break;
  }
  return grid_->run(buffers, compute_stream, comm_stream);
}

}  // namespace overlapsim::kernels
