#pragma once
// Fused GEMM + all-to-all, the MoE combine: every rank computes C = A·Bᵀ (m × n, its
// tokens' expert outputs) and rank d must end with rows d·m/W .. (d+1)·m/W − 1 of every
// rank's C, recv[source][m/W][n]: the layout of NCCL's all-to-all of C.
//   Fused (run): the own GEMM (kernels/gemm) with the push epilogue
//     (gemm_alltoall_epilogue.cuh): each finished 128×256 tile is stored straight into its
//     destination rank's receive buffer over NVLink (CUDA peer pointers,
//     kernels/tilewise/peer_memory.hpp), then one thread adds 1 to the destination's counter
//     of this source (system-scope fence, relaxed system-scope add). Behind the GEMM on the
//     same stream a one-CTA kernel waits (ld.acquire.sys) until every source's counter shows
//     all its tiles for this call: no host step between the GEMM and the exchange, and no
//     copy engine or NCCL kernel.
//   Sequential (run_gemm + exchange): the own GEMM into C, then NCCL's all-to-all of C.
//   Results: the push GEMM runs the own GEMM's mainloop (same schedule, same wgmma order)
//     and only moves the stores, so recv is bit-identical to the sequential design's.
//   Back to back: counters count tiles and are never reset (a call waits for
//     epoch · tiles per source, wrapping compare); receive buffers alternate by the call's
//     parity. A peer can be at most one call ahead (its call e + 2 needs this rank's tiles
//     of call e + 1, which this rank's stream issues after whatever follows its call e), so
//     a call's result stays valid until this rank's next call starts.
//   No deadlock: the GEMM never waits; only the wait kernel does, after this rank's GEMM.
// Host API: can_implement -> initialize (collective) -> run / run_gemm / exchange (any
// number of times, no host synchronisation) -> check_timeout. C++20.
#include <cuda_runtime.h>

#include <cstdint>
#include <map>
#include <memory>
#include <utility>

#include "kernels/common/status.hpp"
#include "kernels/fused/peer_receive.hpp"
#include "kernels/gemm/own_gemm.hpp"
#include "kernels/harness/comm.hpp"
#include "kernels/harness/device_buffer.hpp"
#include "kernels/harness/dtype.hpp"

namespace overlapsim::kernels::fused {

struct GemmAllToAllShape {
  std::int64_t m = 0;  // rows of C on every rank (tokens routed to this rank's experts)
  std::int64_t n = 0;  // hidden size
  std::int64_t k = 0;  // the expert's inner (FFN) size
  int world = 1;
  std::int64_t rows_per_rank() const { return m / world; }
};

struct GemmAllToAllOptions {
  double timeout_s = 30.0;  // a counter wait longer than this gives up (check_timeout)
};

class GemmAllToAll {
 public:
  GemmAllToAll();
  ~GemmAllToAll();
  GemmAllToAll(const GemmAllToAll&) = delete;
  GemmAllToAll& operator=(const GemmAllToAll&) = delete;

  // Shape checks only (m a multiple of 128·world, k a multiple of 8, n even, world 1..8).
  static Status can_implement(const GemmAllToAllShape& shape, DType dtype);

  // Collective over comm's ranks: receive buffers, counters, peer pointers, kernel loads.
  // Call it between quiesce() fences (it allocates).
  Status initialize(CommHandle* comm, const GemmAllToAllShape& shape, DType dtype,
                    const GemmAllToAllOptions& options = {});

  // a: m × k, b: n × k (row-major, 16-byte aligned). Every rank calls run once per step,
  // in the same order; the result is at received() until this rank's next run.
  Status run(const void* a, const void* b, cudaStream_t stream);
  const void* received() const;  // [source][m / world][n] of the last run

  // The sequential design's parts: the own GEMM into c (m × n), NCCL's all-to-all of c.
  Status run_gemm(const void* a, const void* b, void* c, cudaStream_t stream);
  Status exchange(const void* c, void* out, cudaStream_t stream);

  // Waits for `stream`; a failure if a counter wait of this rank gave up.
  Status check_timeout(cudaStream_t stream) const;

  std::uint32_t epoch() const { return epoch_; }
  int num_ctas() const { return num_ctas_; }
  // Tiles every source sends this rank per call.
  std::uint32_t tiles_per_source() const { return tiles_per_source_; }

 private:
  Status gemm_for(const void* a, const void* b, void* c, gemm::OwnGemm** out);

  GemmAllToAllShape shape_;
  DType dtype_ = DType::BF16;
  int world_ = 1, rank_ = 0, num_ctas_ = 0;
  std::uint32_t epoch_ = 0;
  std::uint32_t tiles_per_source_ = 0;
  double timeout_s_ = 30.0;
  CommHandle* comm_ = nullptr;
  DeviceBuffer recv_, counters_, timed_out_, scratch_c_;
  PeerReceive receive_;  // every rank's receive buffer and counters, mapped here
  std::map<std::pair<const void*, const void*>, std::unique_ptr<gemm::OwnGemm>> push_gemms_;
  std::map<std::pair<std::pair<const void*, const void*>, void*>, std::unique_ptr<gemm::OwnGemm>>
      plain_gemms_;
};

}  // namespace overlapsim::kernels::fused
