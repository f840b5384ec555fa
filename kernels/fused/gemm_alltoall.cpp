#include "kernels/fused/gemm_alltoall.hpp"

#include <string>
#include <vector>

#include "kernels/collectives/nccl_collectives.hpp"
#include "kernels/fused/device_timeout.hpp"
#include "kernels/fused/gemm_alltoall_kernel.hpp"
#include "kernels/fused/peer_receive.hpp"
#include "kernels/gemm/gemm_config.hpp"

namespace overlapsim::kernels::fused {

GemmAllToAll::GemmAllToAll() = default;
GemmAllToAll::~GemmAllToAll() = default;

Status GemmAllToAll::can_implement(const GemmAllToAllShape& shape, DType dtype) {
  if (dtype != DType::BF16 && dtype != DType::FP16)
    return Status::failure("fused gemm+alltoall: bf16 or fp16 only");
  if (shape.world < 1 || shape.world > gemm_a2a::kMaxWorld)
    return Status::failure("fused gemm+alltoall: 1.." + std::to_string(gemm_a2a::kMaxWorld) +
                           " ranks, got " + std::to_string(shape.world));
  const std::int64_t tile_m = gemm::GemmConfig::kTileM;
  if (shape.m < 1 || shape.m % (tile_m * shape.world) != 0)
    return Status::failure("fused gemm+alltoall: m must be a multiple of 128 x world (" +
                           std::to_string(tile_m * shape.world) + "), got " +
                           std::to_string(shape.m));
  if (shape.n < 2 || shape.n % 2 != 0 || shape.k < 8 || shape.k % 8 != 0)
    return Status::failure("fused gemm+alltoall: n even and k a multiple of 8, got n=" +
                           std::to_string(shape.n) + " k=" + std::to_string(shape.k));
  return Status::success();
}

Status GemmAllToAll::initialize(CommHandle* comm, const GemmAllToAllShape& shape, DType dtype,
                                const GemmAllToAllOptions& options) {
  const int world = comm == nullptr ? 1 : comm->world;
  if (shape.world != world)
    return Status::failure("fused gemm+alltoall: shape for " + std::to_string(shape.world) +
                           " ranks on " + std::to_string(world));
  OVERLAPSIM_TRY(can_implement(shape, dtype));
  shape_ = shape;
  dtype_ = dtype;
  world_ = world;
  rank_ = comm == nullptr ? 0 : comm->rank;
  comm_ = comm;
  epoch_ = 0;
  timeout_s_ = options.timeout_s;
  push_gemms_.clear();
  plain_gemms_.clear();
  const std::int64_t tiles_n = (shape.n + gemm::GemmConfig::kTileN - 1) / gemm::GemmConfig::kTileN;
  tiles_per_source_ =
      static_cast<std::uint32_t>(shape.rows_per_rank() / gemm::GemmConfig::kTileM * tiles_n);
  OVERLAPSIM_TRY(gemm_a2a::preload());
  const std::size_t elems = static_cast<std::size_t>(shape.m * shape.n);
  OVERLAPSIM_TRY(recv_.allocate(2 * elems * dtype_bytes(dtype)));
  OVERLAPSIM_TRY(scratch_c_.allocate(16));  // the push GEMM's OwnGemm needs some c
  OVERLAPSIM_TRY(timed_out_.allocate(sizeof(int)));
  CUDA_CHECK(cudaMemset(timed_out_.data(), 0, sizeof(int)));
  const std::size_t counter_bytes = static_cast<std::size_t>(world) * sizeof(std::uint32_t);
  OVERLAPSIM_TRY(counters_.allocate(counter_bytes));
  CUDA_CHECK(cudaMemset(counters_.data(), 0, counter_bytes));
  CUDA_CHECK(cudaDeviceSynchronize());  // counters at 0 before any peer can see them
  return share_peer_receive(comm, world, recv_.data(), counters_.data(), &receive_);
}

Status GemmAllToAll::gemm_for(const void* a, const void* b, void* c, gemm::OwnGemm** out) {
  gemm::GemmArgs args;
  args.m = shape_.m;
  args.n = shape_.n;
  args.k = shape_.k;
  args.dtype = dtype_ == DType::BF16 ? gemm::DType::kBf16 : gemm::DType::kFp16;
  args.a = a;
  args.b = b;
  gemm::SchedulerOptions sched;
  sched.cluster_m = 1;  // the push kernel is instantiated for single CTAs only
  std::unique_ptr<gemm::OwnGemm>* slot = nullptr;
  if (c == nullptr) {
    // The push GEMM visits the ranks' row blocks in the rotated order (rank + 1 first, its
    // own last; tile_scheduler.hpp), as the copy-engine design does: at any moment the
    // ranks push to distinct destinations, and the last wave's stores stay local, so no
    // NVLink store trails the GEMM. The tiles' values do not depend on the order.
    const int rows_per_part = static_cast<int>(shape_.rows_per_rank() / gemm::GemmConfig::kTileM);
    int group_m = gemm::GemmConfig::kDefaultGroupM;
    while (rows_per_part % group_m != 0) --group_m;
    sched.group_m = group_m;
    sched.rotate_world = world_;
    sched.rotate_rank = rank_;
    slot = &push_gemms_[{a, b}];
    args.c = scratch_c_.data();
  } else {
    slot = &plain_gemms_[{{a, b}, c}];
    args.c = c;
  }
  if (!*slot) {
    auto g = std::make_unique<gemm::OwnGemm>();
    OVERLAPSIM_TRY(g->initialize(args, {}, sched));
    if (c == nullptr && g->padded())
      return Status::failure("fused gemm+alltoall: a and b must be 16-byte aligned");
    *slot = std::move(g);
  }
  *out = slot->get();
  return Status::success();
}

Status GemmAllToAll::run(const void* a, const void* b, cudaStream_t stream) {
  if (tiles_per_source_ == 0) return Status::failure("fused gemm+alltoall: run before initialize");
  gemm::OwnGemm* g = nullptr;
  OVERLAPSIM_TRY(gemm_for(a, b, nullptr, &g));
  num_ctas_ = g->num_ctas();
  ++epoch_;
  const std::size_t half_bytes =
      static_cast<std::size_t>(shape_.m * shape_.n) * dtype_bytes(dtype_);
  gemm_a2a::PushArgs args;
  args.world = world_;
  args.rank = rank_;
  args.rows_per_rank = shape_.rows_per_rank();
  for (int r = 0; r < world_; ++r) {
    args.recv[r] = static_cast<char*>(receive_.recv[r]) + (epoch_ & 1u) * half_bytes;
    args.counters[r] = static_cast<std::uint32_t*>(receive_.counters[r]);
  }
  OVERLAPSIM_TRY(gemm_a2a::launch_push_gemm(*g, dtype_, shape_.n, args, stream));
  return gemm_a2a::launch_wait(counters_.as<std::uint32_t>(), world_, epoch_ * tiles_per_source_,
                               static_cast<std::uint64_t>(timeout_s_ * 1e9), timed_out_.as<int>(),
                               stream);
}

const void* GemmAllToAll::received() const {
  return static_cast<const char*>(recv_.data()) +
         static_cast<std::size_t>(epoch_ & 1u) * static_cast<std::size_t>(shape_.m * shape_.n) *
             dtype_bytes(dtype_);
}

Status GemmAllToAll::run_gemm(const void* a, const void* b, void* c, cudaStream_t stream) {
  if (c == nullptr) return Status::failure("fused gemm+alltoall: run_gemm needs c");
  gemm::OwnGemm* g = nullptr;
  OVERLAPSIM_TRY(gemm_for(a, b, c, &g));
  return g->run(stream);
}

Status GemmAllToAll::exchange(const void* c, void* out, cudaStream_t stream) {
  const std::size_t block = static_cast<std::size_t>(shape_.rows_per_rank() * shape_.n);
  if (comm_ == nullptr || world_ == 1) {
    CUDA_CHECK(
        cudaMemcpyAsync(out, c, block * dtype_bytes(dtype_), cudaMemcpyDeviceToDevice, stream));
    return Status::success();
  }
  return all_to_all(*comm_, c, block, out, block, block, dtype_, stream);
}

Status GemmAllToAll::check_timeout(cudaStream_t stream) const {
  return read_timeout_flag(timed_out_, stream, "fused gemm+alltoall", rank_, "a source's tiles",
                           timeout_s_);
}

}  // namespace overlapsim::kernels::fused
