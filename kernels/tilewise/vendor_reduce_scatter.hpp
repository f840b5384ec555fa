#pragma once
// GEMM+ReduceScatter with per-chunk vendor GEMMs on the copy-engine transport (row-parallel
// projections with sequence parallelism): rank r holds A_r (M × K_r, its slice of K) and B_r
// (N × K_r) and ends with rows [r·M/n, (r+1)·M/n) of Σ_s A_s·B_sᵀ.
//   GEMMs (compute stream): one cuBLASLt GEMM a chunk of rows (vendor_row_gemms.hpp), the
//     blocks in rotated order r + 1, r + 2, ..., r − 1 (at step i every rank works for a
//     different owner, so the pushes of one step aim at n different receivers), the own
//     block last, straight into the own receive slot.
//   Transport (comm stream, copy engines, no SM): each peer chunk, once its GEMM is done (a
//     CUDA event on the compute stream, both streams this rank's), is copied into the
//     owner's receive slot for this rank; after the block's last chunk a stream write of the
//     call's epoch into the owner's flag (the write's memory barrier orders the copies first).
//   Sum (compute stream): stream waits for every peer's flag (stream memory operations: no
//     SM), then one kernel sums the n slots in rank order in fp32, rounded once
//     (partial_sum.hpp). The last peer's push overlaps the own block's GEMM.
// Result: within bf16 rounding of own GEMM + NCCL reduce-scatter (NCCL rounds after each
// hop, this rounds once); bit for bit the same cuBLASLt chunk GEMMs followed by the rank-order
// fp32 sum, every call (the sum's order is fixed, not arrival order).
// Back to back: receive slots alternate by the epoch's parity and flags hold the epoch (as
// allgather_gemm.hpp): a peer is at most one call ahead, since its call e + 1 ends only after
// our pushes of call e + 1, which follow our call e's sum on our streams. The call ends with
// its pushes joined, so the next call's GEMMs may overwrite the staging rows.
// No deadlock: the pushes need no SM and depend only on this rank's GEMMs; the waits come
// after every GEMM and push of the call is enqueued.
// Host API: can_implement → initialize (collective) → run (any number of times). Every call
// returns a Status; nothing throws. C++17.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "kernels/common/status.hpp"
#include "kernels/harness/comm.hpp"
#include "kernels/harness/device_buffer.hpp"
#include "kernels/harness/dtype.hpp"
#include "kernels/tilewise/peer_flag_writer.hpp"
#include "kernels/tilewise/peer_memory.hpp"
#include "kernels/tilewise/vendor_row_gemms.hpp"

namespace overlapsim::kernels::tilewise {

struct VendorReduceScatterOptions {
  // Chunks a peer's block is cut into, each its own GEMM and copy: the first copy starts
  // after a chunk's GEMM instead of a block's, at the cost of smaller GEMMs and more copies.
  int chunks = 1;
};

class VendorReduceScatterDesign {
 public:
  VendorReduceScatterDesign() = default;
  ~VendorReduceScatterDesign();
  VendorReduceScatterDesign(const VendorReduceScatterDesign&) = delete;
  VendorReduceScatterDesign& operator=(const VendorReduceScatterDesign&) = delete;

  // Shape and option checks only (no CUDA call).
  static Status can_implement(std::int64_t m, std::int64_t n, std::int64_t k, int world,
                              const VendorReduceScatterOptions& options);
  // Collective (every rank, same order): buffers, flags, events, pointer exchange.
  Status initialize(CommHandle* comm, std::int64_t m, std::int64_t n, std::int64_t k, DType dtype,
                    const VendorReduceScatterOptions& options);
  Status initialize(PeerLinks links, std::int64_t m, std::int64_t n, std::int64_t k, DType dtype,
                    const VendorReduceScatterOptions& options);
  // a: M × K, b: N × K, out: M/n × N (this rank's rows of the sum). Starts and ends on
  // compute_stream.
  Status run(const void* a, const void* b, void* out, cudaStream_t compute_stream,
             cudaStream_t comm_stream);

  int world() const { return world_; }
  int rank() const { return rank_; }
  const VendorReduceScatterOptions& options() const { return options_; }

 private:
  char* slot(int parity, int source) const;  // this rank's receive slot for `source`

  std::unique_ptr<PeerMemory> memory_;
  bool initialized_ = false;
  int world_ = 1, rank_ = 0;
  std::int64_t m_ = 0, n_ = 0, k_ = 0;
  DType dtype_ = DType::BF16;
  VendorReduceScatterOptions options_;
  VendorRowGemms gemms_;
  DeviceBuffer staging_;   // M × N: the peer chunks' GEMM results until pushed
  DeviceBuffer received_;  // 2 parities × world slots × M/n × N
  DeviceBuffer flags_;     // [world] epochs written by the senders
  PeerFlagWriter flag_writer_;
  std::vector<char*> peer_received_;        // [world] their receive buffers
  std::vector<std::uint32_t*> peer_flags_;  // [world] their flags
  std::uint32_t epoch_ = 0;
  cudaEvent_t fork_ = nullptr, joined_ = nullptr;
  std::vector<cudaEvent_t> chunk_done_;  // [(world − 1) × chunks] GEMM done, copy may start
};

}  // namespace overlapsim::kernels::tilewise
