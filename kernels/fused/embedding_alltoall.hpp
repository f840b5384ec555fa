#pragma once
// Fused embedding-bag + all-to-all, DLRM's model-parallel forward: every rank owns some of
// the model's tables, pools their bags for the global batch (W ranks x B local samples)
// and rank d receives its B samples of every table, recv[table][B][dim].
//   Fused (run): one kernel per call (embedding_alltoall.cu) pools each bag with our
//     embedding-bag arithmetic and stores the row straight into the destination rank's
//     receive buffer over NVLink; each CTA then counts itself done on every rank
//     (a per-source counter), and the call ends when this rank's counters show every
//     source's CTAs: no host step between the lookup and the exchange.
//   Peers, by GemvTransport (the fused kernels' one notion of how peers are reached):
//     PeerPointers, CUDA peer pointers or IPC handles (kernels/tilewise/peer_memory.hpp);
//     NcclWindow, NCCL's device API (2.28+): one symmetric window per rank, LSA pointers.
//   Sequential (run_sequential): our embedding-bag kernel once per owned table into
//     send[slot][W * B][dim], then NCCL's grouped send/recv of each table's B-bag blocks.
//     run_sequential_own: the same, the fused kernel's pooling (one launch, no push) first.
//   Results: the fused kernel's pooled rows are bit-identical to embedding_bag_sum's (the
//     same loads and the same order of adds); the exchange moves bytes, so every design's
//     recv is bit-identical.
//   Back to back: counters count CTAs and are never reset (a call waits for the grids of
//     the calls so far, summed, per source); receive buffers alternate by the call's parity. A
//     call's result stays valid until this rank's next call starts (a peer can be at most one call
//     ahead).
//   Residency: only CTA 0 waits, after its own pushes, so any grid makes progress.
// Host API: shard_tables -> can_implement -> initialize (collective) -> run / run_sequential
// (any number of times, no host synchronisation) -> check_timeout. C++20.
#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/common/status.hpp"
#include "kernels/fused/gemv_allreduce.hpp"
#include "kernels/fused/peer_receive.hpp"
#include "kernels/harness/comm.hpp"
#include "kernels/harness/device_buffer.hpp"
#include "kernels/harness/dtype.hpp"

namespace overlapsim::kernels::fused {

struct EmbeddingTable {
  std::int64_t rows = 0;
  std::int64_t pooling = 0;  // indices per bag (multi-hot size)
};

struct EmbeddingAllToAllShape {
  std::vector<EmbeddingTable> tables;  // the whole model's tables
  std::vector<int> owner;              // per table: the rank that holds it
  std::int64_t dim = 0;
  std::int64_t local_batch = 0;  // B: samples per rank
  int world = 1;
  std::int64_t global_batch() const { return local_batch * world; }
  // Tables `rank` owns, in table order (its slots).
  std::vector<int> owned(int rank) const;
};

// Table-wise sharding: tables by lookups per sample (pooling) from the most, each to the
// rank with the fewest lookups so far (ties: the lower rank); deterministic.
std::vector<int> shard_tables(const std::vector<EmbeddingTable>& tables, int world);

// The receive buffer's size in elements: tables x B x dim.
std::size_t received_count(const EmbeddingAllToAllShape& shape);

struct EmbeddingAllToAllOptions {
  GemvTransport transport = GemvTransport::PeerPointers;
  double timeout_s = 30.0;  // a counter wait longer than this gives up (check_timeout)
  // Row loads a lane group keeps in flight on bags its warp shares (a2a::KernelArgs::
  // row_loads): 4 (4 CTAs an SM) or 8 (3 CTAs an SM). The same bits either way; tune picks.
  int row_loads = 4;
};

class EmbeddingAllToAll {
 public:
  EmbeddingAllToAll();
  // With NcclWindow, collective: deregisters the window (same order on every rank).
  ~EmbeddingAllToAll();
  EmbeddingAllToAll(const EmbeddingAllToAll&) = delete;
  EmbeddingAllToAll& operator=(const EmbeddingAllToAll&) = delete;

  static Status can_implement(const EmbeddingAllToAllShape& shape, DType dtype);

  // Collective over comm's ranks: allocates the receive buffers, counters and the
  // sequential design's send buffer, exchanges addresses, agrees on the grid and loads the
  // kernels. Call it between quiesce() fences (it allocates).
  Status initialize(CommHandle* comm, const EmbeddingAllToAllShape& shape, DType dtype,
                    const EmbeddingAllToAllOptions& options = {});

  // tables[s], indices[s]: this rank's slot s (shape.owned(rank)[s]): rows x dim, and
  // [global batch][pooling] int32. Every rank calls run once per step, in the same order;
  // the result is at received() until this rank's next run.
  Status run(const void* const* tables, const std::int32_t* const* indices, cudaStream_t stream);
  const void* received() const;  // [tables][B][dim] of the last run

  // The sequential designs into `out` ([tables][B][dim]).
  Status run_sequential(const void* const* tables, const std::int32_t* const* indices, void* out,
                        cudaStream_t stream);
  Status run_sequential_own(const void* const* tables, const std::int32_t* const* indices,
                            void* out, cudaStream_t stream);
  // Their parts alone: the lookups into the send buffer (ours per table, or the fused
  // kernel without push), and NCCL's exchange of the send buffer into `out`.
  Status lookup(const void* const* tables, const std::int32_t* const* indices, cudaStream_t stream);
  Status lookup_own(const void* const* tables, const std::int32_t* const* indices,
                    cudaStream_t stream);
  Status exchange(void* out, cudaStream_t stream);
  // Chooses the row loads in flight (4 or 8) by timing the one-launch lookup (lookup_own)
  // with each on these tables and indices, the slowest rank's time deciding. Collective
  // (an all-reduce of the timings); call it between calls, on their stream; it
  // synchronises. `report` (optional) receives the choice and both times.
  Status tune(const void* const* tables, const std::int32_t* const* indices, cudaStream_t stream,
              std::string* report = nullptr);
  // Sets the row loads in flight (4 or 8) and with them the grid, between calls.
  Status set_row_loads(int row_loads);
  int row_loads() const { return row_loads_; }

  // Waits for `stream`; a failure if a counter wait of this rank gave up.
  Status check_timeout(cudaStream_t stream) const;

  int grid() const { return grid_; }
  std::uint32_t epoch() const { return epoch_; }
  // Bytes this rank sends to other ranks per call (its tables' bags of the other ranks).
  std::uint64_t remote_send_bytes() const;

 private:
  Status fill_args(const void* const* tables, const std::int32_t* const* indices, void* args);

  EmbeddingAllToAllShape shape_;
  DType dtype_ = DType::BF16;
  std::vector<int> slots_;  // owned tables
  int world_ = 1, rank_ = 0, grid_ = 0;
  int row_loads_ = 4;
  int grids_[2] = {};  // the agreed grid for 4 and 8 row loads
  std::uint32_t epoch_ = 0;
  std::uint32_t counted_ = 0;  // the grids of the calls so far, summed (KernelArgs::expected)
  double timeout_s_ = 30.0;
  GemvTransport transport_ = GemvTransport::PeerPointers;
  DeviceBuffer recv_, counters_, timed_out_, send_;
  PeerReceive receive_;  // every rank's receive buffer and counters, mapped here
  CommHandle* comm_ = nullptr;
  void* nccl_buffer_ = nullptr;  // NcclWindow: receive buffer, then counters
  ncclWindow_t window_ = nullptr;
  std::size_t counters_offset_bytes_ = 0;
};

}  // namespace overlapsim::kernels::fused
