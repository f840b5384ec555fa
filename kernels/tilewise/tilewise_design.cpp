#include "kernels/tilewise/tilewise_design.hpp"

#include <chrono>
#include <string>
#include <thread>

#include "kernels/tilewise/design_support.hpp"

namespace overlapsim::kernels::tilewise {
namespace {

char* at(void* base, std::int64_t elems) { return static_cast<char*>(base) + elems * 2; }

}  // namespace

Status make_limited_comm(CommHandle& parent, int max_ctas, CommHandle* out, int min_ctas) {
  if (max_ctas < 1) return Status::failure("make_limited_comm: max_ctas must be >= 1");
  if (min_ctas > max_ctas)
    return Status::failure("make_limited_comm: min_ctas must be <= max_ctas");
  *out = CommHandle{};
  out->rank = parent.rank;
  out->world = parent.world;
  out->timeout_s = parent.timeout_s;
  out->trace = parent.trace;
  out->peer_failed = parent.peer_failed;
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  // Blocking: a non-blocking communicator costs ~80 us of host time per call (harness
  // measurement, commit 252474e), and the design issues one call per group.
  config.blocking = 1;
  config.maxCTAs = max_ctas;
  if (min_ctas > 0) config.minCTAs = min_ctas;
  // NCCL launches 4-CTA clusters on Hopper by default; a cluster needs 4 free SMs of one
  // GPC, which a GEMM leaving a few SMs free scattered over the GPCs never offers, so its
  // kernels would wait for the GEMM to end (measured: no overlap at all). Single CTAs fit.
  config.cgaClusterSize = 1;
  const ncclResult_t r = ncclCommSplit(parent.comm, 0, parent.rank, &out->comm, &config);
  if (r != ncclSuccess && r != ncclInProgress)
    return Status::failure(std::string(OVERLAPSIM_WHERE ": ncclCommSplit: ") +
                           ncclGetErrorString(r));
  // From a non-blocking parent the split finishes in the background and the child handle
  // may still be null when the call returns (seen: NCCL 2.28, "comm argument is NULL" on
  // the child's first collective), so wait for the parent's job and the child both.
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                            std::chrono::duration<double>(parent.timeout_s));
  for (;;) {
    ncclResult_t parent_state = ncclSuccess;
    ncclCommGetAsyncError(parent.comm, &parent_state);
    if (parent_state != ncclSuccess && parent_state != ncclInProgress)
      return abort_comm(parent, std::string("ncclCommSplit: ") + ncclGetErrorString(parent_state));
    ncclResult_t child_state = ncclInProgress;
    if (out->comm != nullptr) ncclCommGetAsyncError(out->comm, &child_state);
    if (child_state != ncclSuccess && child_state != ncclInProgress)
      return abort_comm(*out, std::string("ncclCommSplit: ") + ncclGetErrorString(child_state));
    if (out->comm != nullptr && child_state == ncclSuccess && parent_state == ncclSuccess)
      return Status::success();
    if (parent.peer_failed != nullptr && parent.peer_failed->load())
      return Status::failure("ncclCommSplit: peer failed");
    if (std::chrono::steady_clock::now() > deadline)
      return Status::failure("ncclCommSplit: not finished after " +
                             std::to_string(parent.timeout_s) + " s");
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

Status destroy_comm(CommHandle* comm) {
  if (comm->comm == nullptr) return Status::success();
  OVERLAPSIM_TRY(nccl_settle(*comm, ncclCommFinalize(comm->comm), "ncclCommFinalize"));
  const ncclResult_t r = ncclCommDestroy(comm->comm);
  comm->comm = nullptr;
  if (r != ncclSuccess)
    return Status::failure(std::string("ncclCommDestroy: ") + ncclGetErrorString(r));
  return Status::success();
}

TilewiseDesign::~TilewiseDesign() { destroy(); }

void TilewiseDesign::destroy() {
  if (fork_) cudaEventDestroy(fork_);
  if (join_) cudaEventDestroy(join_);
  fork_ = join_ = nullptr;
  gemms_.clear();
}

Status TilewiseDesign::can_implement(CollectiveOp op, std::int64_t m, std::int64_t n,
                                     std::int64_t k, int world, const TilewiseOptions& options) {
  if (k < 1) return Status::failure("tilewise: k must be >= 1");
  if (auto e = shape_error(op, m, n, world)) return Status::failure("tilewise: " + *e);
  if (options.comm_sms < 0) return Status::failure("tilewise: comm_sms must be >= 0");
  return Status::success();
}

Status TilewiseDesign::initialize(CommHandle* comm, CollectiveOp op, std::int64_t m, std::int64_t n,
                                  std::int64_t k, DType dtype, const TilewiseOptions& options) {
  destroy();
  OVERLAPSIM_TRY(can_implement(op, m, n, k, comm->world, options));
  comm_ = comm;
  problem_ = {op, m, n, k, dtype};
  options_ = options;
  int sms = 0;
  OVERLAPSIM_TRY(current_device_sms(&sms));
  if (options.comm_sms >= sms)
    return Status::failure("tilewise: comm_sms = " + std::to_string(options.comm_sms) +
                           " leaves no SM for the GEMM (" + std::to_string(sms) + " SMs)");
  const int row_blocks = op == CollectiveOp::AllReduce ? 1 : comm->world;
  grid_ = make_tile_grid(m, n, sms - options.comm_sms, options.group_m, row_blocks);
  if (options_.group_waves.empty())
    options_.group_waves.assign(static_cast<std::size_t>(grid_.waves()), 1);
  if (auto e = build_remap(op, grid_, options_.group_waves, comm->world, comm->rank, &plan_))
    return Status::failure("tilewise: " + *e);
  OVERLAPSIM_TRY(upload(tile_offsets_, plan_.tile_offset_elems));
  OVERLAPSIM_TRY(upload(tile_groups_, plan_.tile_group));
  OVERLAPSIM_TRY(upload(out_offsets_, plan_.out_tile_offset_elems));
  OVERLAPSIM_TRY(
      counters_.allocate(static_cast<std::size_t>(plan_.groups()) * sizeof(std::uint32_t)));
  CUDA_CHECK(cudaMemset(counters_.data(), 0, counters_.bytes()));
  OVERLAPSIM_TRY(timed_out_.allocate(sizeof(int)));
  CUDA_CHECK(cudaMemset(timed_out_.data(), 0, sizeof(int)));
  CUDA_CHECK(cudaEventCreateWithFlags(&fork_, cudaEventDisableTiming));
  CUDA_CHECK(cudaEventCreateWithFlags(&join_, cudaEventDisableTiming));
  // Every kernel of the design is loaded now: a lazy load while the communication stream
  // waits on a counter can deadlock (design.md). The GEMM's own are loaded by prepare().
  OVERLAPSIM_TRY(preload_signal_wait());
  OVERLAPSIM_TRY(preload_unpermute_kernels());
  CUDA_CHECK(cudaDeviceSynchronize());
  return Status::success();
}

Status TilewiseDesign::prepare(const void* a, const void* b, void* p) {
  if (comm_ == nullptr) return Status::failure("tilewise: prepare() before initialize()");
  const auto key = std::make_tuple(a, b, p);
  if (gemms_.count(key)) return Status::success();
  auto g = std::make_unique<gemm::OwnGemm>();
  const gemm::GemmArgs args = problem_.gemm_args(a, b, p);
  gemm::EpilogueArgs epilogue;
  epilogue.tile_offset_elems = tile_offsets_.as<std::int64_t>();
  epilogue.group_counters = counters_.as<std::uint32_t>();
  epilogue.tile_group = tile_groups_.as<std::int32_t>();
  OVERLAPSIM_TRY(g->initialize(args, epilogue, scheduler_options(grid_)));
  if (g->cluster_m() != grid_.cluster_m)
    return Status::failure("tilewise: the GEMM runs clusters of " + std::to_string(g->cluster_m()) +
                           ", the plan assumed " + std::to_string(grid_.cluster_m));
  gemms_.emplace(key, std::move(g));
  return Status::success();
}

Status TilewiseDesign::enqueue_group_collective(int group, void* p, void* r, cudaStream_t stream) {
  const std::size_t g = static_cast<std::size_t>(group);
  const std::int64_t block = plan_.group_block_elems[g];
  if (block == 0) return Status::success();  // an empty group (rounding), on every rank
  void* region = at(p, plan_.group_begin_elems[g]);
  switch (problem_.op) {
    case CollectiveOp::AllReduce:
      return all_reduce(*comm_, region, region, static_cast<std::size_t>(block), problem_.dtype,
                        stream);
    case CollectiveOp::ReduceScatter:
      return reduce_scatter(*comm_, region, at(r, plan_.recv_begin_elems[g]),
                            static_cast<std::size_t>(block), problem_.dtype, stream);
    case CollectiveOp::AllToAll:
      return all_to_all(*comm_, region, static_cast<std::size_t>(block),
                        at(r, plan_.recv_begin_elems[g]), static_cast<std::size_t>(block),
                        static_cast<std::size_t>(block), problem_.dtype, stream);
    case CollectiveOp::AllGather:
      break;
  }
  return Status::failure("tilewise: unsupported collective");
}

Status TilewiseDesign::run(const void* a, const void* b, void* p, void* r,
                           cudaStream_t compute_stream, cudaStream_t comm_stream) {
  if (problem_.op != CollectiveOp::AllReduce && r == nullptr)
    return Status::failure("tilewise: reducescatter/alltoall need a receive buffer");
  OVERLAPSIM_TRY(prepare(a, b, p));
  gemm::OwnGemm& g = *gemms_.at(std::make_tuple(a, b, p));
  // The fork orders this call's communication after everything before it on the compute
  // stream (the previous call's consumers of P and R included).
  CUDA_CHECK(cudaEventRecord(fork_, compute_stream));
  CUDA_CHECK(cudaStreamWaitEvent(comm_stream, fork_, 0));
  // The GEMM is enqueued before any wait, so nothing the host does while enqueuing the
  // NCCL calls can block on a wait whose producer is not launched yet.
  OVERLAPSIM_TRY(g.run(compute_stream));
  for (int group = 0; group < plan_.groups(); ++group) {
    OVERLAPSIM_TRY(enqueue_wait_and_reset(
        counters_.as<std::uint32_t>() + group,
        static_cast<std::uint32_t>(plan_.group_tiles[static_cast<std::size_t>(group)]),
        options_.wait, timed_out_.as<int>(), options_.wait_timeout_s, comm_stream));
    OVERLAPSIM_TRY(enqueue_group_collective(group, p, r, comm_stream));
  }
  CUDA_CHECK(cudaEventRecord(join_, comm_stream));
  CUDA_CHECK(cudaStreamWaitEvent(compute_stream, join_, 0));
  return Status::success();
}

Status TilewiseDesign::run_gemm_only(const void* a, const void* b, void* p, cudaStream_t stream) {
  OVERLAPSIM_TRY(prepare(a, b, p));
  OVERLAPSIM_TRY(gemms_.at(std::make_tuple(a, b, p))->run(stream));
  CUDA_CHECK(cudaMemsetAsync(counters_.data(), 0, counters_.bytes(), stream));
  return Status::success();
}

TileView TilewiseDesign::result_view(const void* p, const void* r) const {
  TileView v;
  v.data = problem_.op == CollectiveOp::AllReduce ? p : r;
  v.tile_offset_elems = out_offsets_.as<std::int64_t>();
  v.rows = plan_.out_rows;
  v.cols = problem_.n;
  return v;
}

Status TilewiseDesign::unpermute(const void* p, const void* r, void* natural,
                                 cudaStream_t stream) const {
  return tilewise::unpermute(result_view(p, r), natural, problem_.dtype, stream);
}

Status TilewiseDesign::check_waits() {
  int flag = 0;
  CUDA_CHECK(cudaMemcpy(&flag, timed_out_.data(), sizeof flag, cudaMemcpyDeviceToHost));
  if (flag != 0)
    return Status::failure("tilewise: a group wait timed out after " +
                           std::to_string(options_.wait_timeout_s) +
                           " s (its counter never reached the group's tile count)");
  return Status::success();
}

}  // namespace overlapsim::kernels::tilewise
