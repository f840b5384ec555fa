#pragma once
// Fused GEMV + all-reduce for decode's row-parallel projections (o_proj, down_proj under
// tensor parallelism): y[tokens x n] = sum over ranks of x_r[tokens x k] * W_r^T, W_r the
// rank's n x k shard of a Linear weight (K split over ranks), in one kernel per call
// (gemv_allreduce.cu): each CTA computes a slice of y's columns, stores its bf16 partial
// straight into every peer's receive buffer over NVLink, releases a per-slice flag, and
// after all its slices reduces the world's partials of its slices in rank order.
//   Peers, by GemvTransport: PeerPointers, PeerMemory (kernels/tilewise/peer_memory.hpp):
//     threads of one process exchange UVA pointers with peer access on, processes of one
//     host CUDA IPC handles; NcclWindow, NCCL's device API (2.28+): the buffers come from
//     ncclMemAlloc, are registered as one symmetric window (ncclCommWindowRegister), and the
//     kernel takes each peer's address from the window (ncclGetPeerPointer, LSA: NVLink
//     load/store). The kernel is otherwise the same.
//   Back to back: flags hold the call's number (epoch) and are never reset; receive
//     buffers alternate by call parity (a peer can be at most one call ahead: its call e+1
//     waits for this rank's pushes of call e+1, made after this rank's call e ended).
//   Results: with 2 ranks bit-identical to this GEMV (run_local) followed by NCCL's
//     all-reduce (one fp32 add, one rounding, commutative); with more ranks the fixed rank
//     order 0, 1, ... (fp32 sum of the bf16 partials, one rounding) on every rank.
//   Residency: every CTA pushes all its slices before it waits, so the call completes when
//     each rank's whole grid is resident; the grid is capped by occupancy, and nothing else
//     may hold the SMs meanwhile.
// Host API: can_implement -> initialize (collective) -> run / run_local (any number of
// times, no host synchronisation) -> check_timeout. Every call returns a Status. C++20.
#include <cuda_runtime.h>

#include <cstdint>
#include <memory>

#include "kernels/common/status.hpp"
#include "kernels/harness/comm.hpp"
#include "kernels/harness/device_buffer.hpp"
#include "kernels/harness/dtype.hpp"

namespace overlapsim::kernels::tilewise {
class PeerMemory;
}

namespace overlapsim::kernels::fused {

struct GemvKernelArgs;  // gemv_allreduce_kernel.hpp

enum class GemvTransport { PeerPointers, NcclWindow };
const char* to_string(GemvTransport transport);  // "peer_pointers", "nccl_window"

struct GemvAllReduceOptions {
  GemvTransport transport = GemvTransport::PeerPointers;
  double timeout_s = 30.0;  // a flag wait longer than this gives up (check_timeout says so)
  int max_ctas = 0;         // 0: as many as fit on the device at once
};

class GemvAllReduce {
 public:
  GemvAllReduce();
  // With NcclWindow, collective: deregisters the window (every rank destroys its design in
  // the same order).
  ~GemvAllReduce();
  GemvAllReduce(const GemvAllReduce&) = delete;
  GemvAllReduce& operator=(const GemvAllReduce&) = delete;

  // bf16, 1..64 tokens, n a multiple of 32, k a multiple of 32, 1..8 ranks.
  static Status can_implement(int tokens, std::int64_t n, std::int64_t k, DType dtype, int world);

  // Collective over comm's ranks: allocates the receive buffers and flags, exchanges their
  // addresses and loads the kernels. Call it between quiesce() fences (it allocates).
  Status initialize(CommHandle* comm, int tokens, std::int64_t n, std::int64_t k, DType dtype,
                    const GemvAllReduceOptions& options = {});

  // Every rank calls it once per step, in the same order: y = sum over ranks of x * w^T.
  // x: tokens x k, w: n x k, y: tokens x n, all row-major bf16, 16-byte aligned.
  Status run(const void* x, const void* w, void* y, cudaStream_t stream);
  // This rank's partial alone, the same kernel with no communication: y = x * w^T.
  Status run_local(const void* x, const void* w, void* y, cudaStream_t stream) const;

  // Waits for `stream`; a failure if any flag wait of this rank gave up.
  Status check_timeout(cudaStream_t stream) const;

  int grid() const { return grid_; }
  GemvTransport transport() const { return transport_; }
  std::uint32_t epoch() const { return epoch_; }

 private:
  // The kernel's arguments for this rank's GEMV alone (no push); run() adds the exchange.
  GemvKernelArgs local_args(const void* x, const void* w, void* y) const;

  int tokens_ = 0;
  std::int64_t n_ = 0, k_ = 0;
  int world_ = 1, rank_ = 0, grid_ = 0;
  std::uint32_t epoch_ = 0;
  double timeout_s_ = 30.0;
  GemvTransport transport_ = GemvTransport::PeerPointers;
  DeviceBuffer recv_, flags_, timed_out_;
  std::unique_ptr<tilewise::PeerMemory> peers_;
  CommHandle* comm_ = nullptr;
  void* nccl_buffer_ = nullptr;  // NcclWindow: receive buffer, then flags
  ncclWindow_t window_ = nullptr;
  std::size_t flags_offset_bytes_ = 0;
  void* recv_ptrs_[8] = {};
  void* flag_ptrs_[8] = {};
};

}  // namespace overlapsim::kernels::fused
