#include "kernels/tilewise/vendor_reduce_scatter.hpp"

#include <cuda_runtime.h>

#include <string>
#include <utility>

#include "kernels/tilewise/design_support.hpp"
#include "kernels/tilewise/partial_sum.hpp"
#include "kernels/tilewise/signal_wait.hpp"

namespace overlapsim::kernels::tilewise {

VendorReduceScatterDesign::~VendorReduceScatterDesign() {
  for (cudaEvent_t e : chunk_done_) cudaEventDestroy(e);
  if (fork_) cudaEventDestroy(fork_);
  if (joined_) cudaEventDestroy(joined_);
}

Status VendorReduceScatterDesign::can_implement(std::int64_t m, std::int64_t n, std::int64_t k,
                                                int world,
                                                const VendorReduceScatterOptions& options) {
  if (world < 1 || world > 16)
    return Status::failure("vendor gemm+reducescatter: world must be in 1..16");
  if (m < 1 || n < 1 || k < 1)
    return Status::failure("vendor gemm+reducescatter: m, n, k must be >= 1");
  if (options.chunks < 1)
    return Status::failure("vendor gemm+reducescatter: chunks must be >= 1, got " +
                           std::to_string(options.chunks));
  if (m % (std::int64_t{world} * options.chunks) != 0)
    return Status::failure("vendor gemm+reducescatter: m must be a multiple of " +
                           std::to_string(world) + " ranks x " + std::to_string(options.chunks) +
                           " chunks, got m = " + std::to_string(m));
  return Status::success();
}

Status VendorReduceScatterDesign::initialize(CommHandle* comm, std::int64_t m, std::int64_t n,
                                             std::int64_t k, DType dtype,
                                             const VendorReduceScatterOptions& options) {
  PeerLinks links;
  OVERLAPSIM_TRY(comm_peer_links(*comm, &links));
  return initialize(std::move(links), m, n, k, dtype, options);
}

Status VendorReduceScatterDesign::initialize(PeerLinks links, std::int64_t m, std::int64_t n,
                                             std::int64_t k, DType dtype,
                                             const VendorReduceScatterOptions& options) {
  if (initialized_) return Status::failure("vendor gemm+reducescatter: initialize() called twice");
  OVERLAPSIM_TRY(check_peer_links(links, "vendor gemm+reducescatter"));
  if (dtype != DType::BF16 && dtype != DType::FP16)
    return Status::failure("vendor gemm+reducescatter: bf16 or fp16 only, got " +
                           std::string(to_string(dtype)));
  OVERLAPSIM_TRY(can_implement(m, n, k, links.world, options));
  world_ = links.world;
  rank_ = links.rank;
  m_ = m;
  n_ = n;
  k_ = k;
  dtype_ = dtype;
  options_ = options;
  const bool shared_gpu = links.shared_gpu;
  memory_ = std::make_unique<PeerMemory>(std::move(links));

  const std::int64_t block_rows = m / world_;
  const std::int64_t chunk_rows = block_rows / options.chunks;
  OVERLAPSIM_TRY(gemms_.initialize(n, k, dtype, {block_rows, chunk_rows}, chunk_rows));
  OVERLAPSIM_TRY(staging_.allocate(static_cast<std::size_t>(m * n) * kElementBytes));
  OVERLAPSIM_TRY(received_.allocate(2 * static_cast<std::size_t>(world_) *
                                    static_cast<std::size_t>(block_rows * n) * kElementBytes));
  OVERLAPSIM_TRY(zeroed(flags_, static_cast<std::size_t>(world_) * 4));
  OVERLAPSIM_TRY(flag_writer_.initialize());
  CUDA_CHECK(cudaEventCreateWithFlags(&fork_, cudaEventDisableTiming));
  CUDA_CHECK(cudaEventCreateWithFlags(&joined_, cudaEventDisableTiming));
  for (int i = 0; i < (world_ - 1) * options.chunks; ++i) {
    cudaEvent_t e = nullptr;
    CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    chunk_done_.push_back(e);
  }
  OVERLAPSIM_TRY(preload_signal_wait());
  OVERLAPSIM_TRY(preload_partial_sum());

  std::vector<std::vector<void*>> all;
  OVERLAPSIM_TRY(memory_->share({received_.data(), flags_.data()}, &all));
  peer_received_.assign(static_cast<std::size_t>(world_), nullptr);
  peer_flags_.assign(static_cast<std::size_t>(world_), nullptr);
  for (int r = 0; r < world_; ++r) {
    peer_received_[static_cast<std::size_t>(r)] =
        static_cast<char*>(all[static_cast<std::size_t>(r)][0]);
    peer_flags_[static_cast<std::size_t>(r)] =
        static_cast<std::uint32_t*>(all[static_cast<std::size_t>(r)][1]);
  }
  // The zeroed flags are in place before any peer's first push can reach them (as
  // allgather_gemm.cpp).
  if (shared_gpu) {
    CUDA_CHECK(cudaStreamSynchronize(nullptr));
  } else {
    CUDA_CHECK(cudaDeviceSynchronize());
  }
  OVERLAPSIM_TRY(memory_->barrier());
  initialized_ = true;
  return Status::success();
}

char* VendorReduceScatterDesign::slot(int parity, int source) const {
  const std::size_t block = static_cast<std::size_t>(m_ / world_ * n_) * kElementBytes;
  return received_.as<char>() +
         (static_cast<std::size_t>(parity) * static_cast<std::size_t>(world_) +
          static_cast<std::size_t>(source)) *
             block;
}

Status VendorReduceScatterDesign::run(const void* a, const void* b, void* out,
                                      cudaStream_t compute_stream, cudaStream_t comm_stream) {
  if (!initialized_) return Status::failure("vendor gemm+reducescatter: run before initialize()");
  const std::uint32_t epoch = ++epoch_;
  const int parity = static_cast<int>(epoch & 1u);
  const int chunks = options_.chunks;
  const std::int64_t block_rows = m_ / world_;
  const std::int64_t chunk_rows = block_rows / chunks;
  const std::size_t chunk_bytes = static_cast<std::size_t>(chunk_rows * n_) * kElementBytes;
  const std::size_t block_bytes = static_cast<std::size_t>(block_rows * n_) * kElementBytes;
  // The comm stream starts behind everything before the call on the compute stream.
  CUDA_CHECK(cudaEventRecord(fork_, compute_stream));
  CUDA_CHECK(cudaStreamWaitEvent(comm_stream, fork_, 0));
  for (int i = 1; i < world_; ++i) {
    const int d = (rank_ + i) % world_;  // step i: the block rank + i owns
    char* dst = peer_received_[static_cast<std::size_t>(d)] +
                (static_cast<std::size_t>(parity) * static_cast<std::size_t>(world_) +
                 static_cast<std::size_t>(rank_)) *
                    block_bytes;
    for (int ch = 0; ch < chunks; ++ch) {
      const std::int64_t row = d * block_rows + ch * chunk_rows;
      OVERLAPSIM_TRY(gemms_.run(chunk_rows, row, a, b, staging_.data(), compute_stream));
      cudaEvent_t done = chunk_done_[static_cast<std::size_t>((i - 1) * chunks + ch)];
      CUDA_CHECK(cudaEventRecord(done, compute_stream));
      CUDA_CHECK(cudaStreamWaitEvent(comm_stream, done, 0));
      CUDA_CHECK(
          cudaMemcpyAsync(dst + static_cast<std::size_t>(ch) * chunk_bytes,
                          staging_.as<char>() + static_cast<std::size_t>(row * n_) * kElementBytes,
                          chunk_bytes, cudaMemcpyDeviceToDevice, comm_stream));
    }
    OVERLAPSIM_TRY(
        flag_writer_.write(peer_flags_[static_cast<std::size_t>(d)] + rank_, epoch, comm_stream));
  }
  // The own block last, into its own slot, while the last pushes travel.
  OVERLAPSIM_TRY(
      gemms_.run_at(block_rows,
                    static_cast<const char*>(a) +
                        static_cast<std::size_t>(rank_ * block_rows * k_) * kElementBytes,
                    b, slot(parity, rank_), compute_stream));
  for (int s = 0; s < world_; ++s)
    if (s != rank_)
      OVERLAPSIM_TRY(enqueue_wait_geq(flags_.as<std::uint32_t>() + s, epoch, compute_stream));
  OVERLAPSIM_TRY(sum_partials(slot(parity, 0), static_cast<std::size_t>(block_rows * n_), world_,
                              out, static_cast<std::size_t>(block_rows * n_), dtype_,
                              compute_stream));
  // Joined: the next call's GEMMs may overwrite the staging rows these pushes read.
  CUDA_CHECK(cudaEventRecord(joined_, comm_stream));
  CUDA_CHECK(cudaStreamWaitEvent(compute_stream, joined_, 0));
  return Status::success();
}

}  // namespace overlapsim::kernels::tilewise
