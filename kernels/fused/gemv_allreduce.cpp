#include "kernels/fused/gemv_allreduce.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "kernels/fused/gemv_allreduce_kernel.hpp"
#include "kernels/tilewise/peer_memory.hpp"

namespace overlapsim::kernels::fused {

const char* to_string(GemvTransport transport) {
  return transport == GemvTransport::NcclWindow ? "nccl_window" : "peer_pointers";
}

GemvAllReduce::GemvAllReduce() = default;

GemvAllReduce::~GemvAllReduce() {
  if (window_ != nullptr && comm_ != nullptr) ncclCommWindowDeregister(comm_->comm, window_);
  if (nccl_buffer_ != nullptr) ncclMemFree(nccl_buffer_);
}

Status GemvAllReduce::can_implement(int tokens, std::int64_t n, std::int64_t k, DType dtype,
                                    int world) {
  if (dtype != DType::BF16) return Status::failure("fused gemv+allreduce: bf16 only");
  if (tokens < 1 || tokens > kMaxTokens)
    return Status::failure("fused gemv+allreduce: 1.." + std::to_string(kMaxTokens) +
                           " tokens, got " + std::to_string(tokens));
  if (n < kSliceCols || n % kSliceCols != 0 || k < 32 || k % 32 != 0)
    return Status::failure("fused gemv+allreduce: n and k must be multiples of 32, got n " +
                           std::to_string(n) + ", k " + std::to_string(k));
  if (world < 1 || world > kMaxWorld)
    return Status::failure("fused gemv+allreduce: 1.." + std::to_string(kMaxWorld) +
                           " ranks, got " + std::to_string(world));
  return Status::success();
}

Status GemvAllReduce::initialize(CommHandle* comm, int tokens, std::int64_t n, std::int64_t k,
                                 DType dtype, const GemvAllReduceOptions& options) {
  const int world = comm == nullptr ? 1 : comm->world;
  OVERLAPSIM_TRY(can_implement(tokens, n, k, dtype, world));
  tokens_ = tokens;
  n_ = n;
  k_ = k;
  world_ = world;
  rank_ = comm == nullptr ? 0 : comm->rank;
  epoch_ = 0;
  timeout_s_ = options.timeout_s;
  transport_ = options.transport;
  comm_ = comm;
  OVERLAPSIM_TRY(preload_gemv_allreduce());
  int fit = 0;
  OVERLAPSIM_TRY(gemv_allreduce_max_ctas(tokens, &fit));
  const std::int64_t slices = n / kSliceCols;
  grid_ = static_cast<int>(std::min<std::int64_t>(slices, fit));
  if (options.max_ctas > 0) grid_ = std::min(grid_, options.max_ctas);
  if (grid_ < 1) return Status::failure("fused gemv+allreduce: no CTA fits on this device");
  OVERLAPSIM_TRY(timed_out_.allocate(sizeof(int)));
  CUDA_CHECK(cudaMemset(timed_out_.data(), 0, sizeof(int)));
  if (world_ == 1) return Status::success();

  const std::size_t recv_bytes = 2 * static_cast<std::size_t>(world_) * tokens * n * 2;
  const std::size_t flag_bytes = static_cast<std::size_t>(world_) * slices * sizeof(std::uint32_t);
  if (transport_ == GemvTransport::NcclWindow) {
    // The flags after the receive buffer, 16-byte aligned; one window holds both.
    flags_offset_bytes_ = (recv_bytes + 15) / 16 * 16;
    NCCL_CHECK(ncclMemAlloc(&nccl_buffer_, flags_offset_bytes_ + flag_bytes));
    CUDA_CHECK(cudaMemset(static_cast<char*>(nccl_buffer_) + flags_offset_bytes_, 0, flag_bytes));
    CUDA_CHECK(cudaDeviceSynchronize());
    NCCL_SETTLE(*comm,
                ncclCommWindowRegister(comm->comm, nccl_buffer_, flags_offset_bytes_ + flag_bytes,
                                       &window_, NCCL_WIN_COLL_SYMMETRIC));
    return Status::success();
  }
  OVERLAPSIM_TRY(recv_.allocate(recv_bytes));
  OVERLAPSIM_TRY(flags_.allocate(flag_bytes));
  CUDA_CHECK(cudaMemset(flags_.data(), 0, flag_bytes));
  CUDA_CHECK(cudaDeviceSynchronize());  // flags at 0 before any peer can see them
  tilewise::PeerLinks links;
  OVERLAPSIM_TRY(tilewise::comm_peer_links(*comm, &links));
  peers_ = std::make_unique<tilewise::PeerMemory>(std::move(links));
  std::vector<std::vector<void*>> all;
  OVERLAPSIM_TRY(peers_->share({recv_.data(), flags_.data()}, &all));
  for (int r = 0; r < world_; ++r) {
    recv_ptrs_[r] = all[static_cast<std::size_t>(r)][0];
    flag_ptrs_[r] = all[static_cast<std::size_t>(r)][1];
  }
  return Status::success();
}

GemvKernelArgs GemvAllReduce::local_args(const void* x, const void* w, void* y) const {
  GemvKernelArgs a;
  a.x = static_cast<const std::uint16_t*>(x);
  a.w = static_cast<const std::uint16_t*>(w);
  a.y = static_cast<std::uint16_t*>(y);
  a.tokens = tokens_;
  a.n = n_;
  a.k = k_;
  a.world = world_;
  a.rank = rank_;
  a.push = false;
  return a;
}

Status GemvAllReduce::run(const void* x, const void* w, void* y, cudaStream_t stream) {
  if (grid_ == 0) return Status::failure("fused gemv+allreduce: run before initialize");
  GemvKernelArgs a = local_args(x, w, y);
  a.push = world_ > 1;
  for (int r = 0; r < world_; ++r) {
    a.recv[r] = static_cast<std::uint16_t*>(recv_ptrs_[r]);
    a.flags[r] = static_cast<std::uint32_t*>(flag_ptrs_[r]);
  }
  a.window = window_;
  a.flags_offset_bytes = flags_offset_bytes_;
  ++epoch_;
  if (epoch_ == 0) ++epoch_;  // 0 is the flags' initial value
  a.epoch = epoch_;
  a.timeout_ns = static_cast<std::uint64_t>(timeout_s_ * 1e9);
  a.timed_out = timed_out_.as<int>();
  return launch_gemv_allreduce(a, grid_, stream);
}

Status GemvAllReduce::run_local(const void* x, const void* w, void* y, cudaStream_t stream) const {
  if (grid_ == 0) return Status::failure("fused gemv+allreduce: run_local before initialize");
  return launch_gemv_allreduce(local_args(x, w, y), grid_, stream);
}

Status GemvAllReduce::check_timeout(cudaStream_t stream) const {
  CUDA_CHECK(cudaStreamSynchronize(stream));
  int flag = 0;
  CUDA_CHECK(cudaMemcpy(&flag, timed_out_.data(), sizeof flag, cudaMemcpyDeviceToHost));
  if (flag != 0)
    return Status::failure("fused gemv+allreduce: rank " + std::to_string(rank_) +
                           " gave up waiting for a peer's partial after " +
                           std::to_string(timeout_s_) + " s");
  return Status::success();
}

}  // namespace overlapsim::kernels::fused
