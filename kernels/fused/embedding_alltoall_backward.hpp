#pragma once
// DLRM's model-parallel embedding backward, the forward's exchange reversed
// (embedding_alltoall.hpp): every rank holds the gradients of the pooled rows of its B
// samples for every table, grad[table][B][dim] (the forward's receive layout); the table
// owners need them for the global batch, then produce each owned table's gradient for the
// looked-up rows.
//   The gradient is the per-lookup sparse gradient of sum pooling, the representation
//   PyTorch's EmbeddingBag(sparse=True) hands its optimizer: values[slot][g][j][dim] = the
//   pooled-row gradient of bag g, for lookup j of bag g of the slot's table, whose index is
//   the forward's idx[g][j] (the forward's index array, untouched, is the gradient's
//   indices). Each value is a copy: every design gives the same bits in any order.
//   Sequential (run_sequential): NCCL's grouped send/recv of each table's B rows to its
//     owner (exchange), then our expansion kernel on the owner (expand), one stream.
//   Fused (run): one kernel per call (embedding_alltoall_backward.cu): part of every CTA
//     stores this rank's rows into the owners' receive buffers over NVLink (CUDA peer
//     pointers), owner by owner in a shift (rank + 1, rank + 2, ...; from 1 MiB a table
//     block at 3+ ranks each CTA starts at its own place in it, so a source pushes to all
//     owners at once), counting the CTA on each owner once its rows are out; meanwhile the
//     grid expands this rank's own rows, then each source's as its counter shows them landed.
//   Back to back: counters count CTAs and are never reset (a call waits for the grids of
//     the calls so far, summed); receive buffers alternate by the call's parity (a peer can
//     be at most one call ahead); the expansion's tile counters are never reset either (a
//     call advances each by its claims plus one failed claim a warp). After a timeout
//     (check_timeout fails) the design is out of step: initialize a new one.
// Host API: can_implement -> initialize (collective) -> run / run_sequential (any number
// of times, every rank the same calls in the same order, no host synchronisation) ->
// check_timeout. C++20.
#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "kernels/common/status.hpp"
#include "kernels/fused/embedding_alltoall.hpp"
#include "kernels/fused/peer_receive.hpp"
#include "kernels/harness/comm.hpp"
#include "kernels/harness/device_buffer.hpp"
#include "kernels/harness/dtype.hpp"

namespace overlapsim::kernels::fused {

// Elements of `rank`'s sparse gradient values: sum over its tables of G x pooling x dim.
std::size_t gradient_values_count(const EmbeddingAllToAllShape& shape, int rank);

// How each source pushes its rows to the table owners: kAuto picks from the shape at
// initialize (spread with one push warp from 1 MiB a table block at 3+ ranks, else the
// shift with two); the others force a schedule, for A/B runs of one binary.
enum class BackwardPush { kAuto, kShift, kSpread };

struct EmbeddingAllToAllBackwardOptions {
  double timeout_s = 30.0;  // a counter wait longer than this gives up (check_timeout)
  BackwardPush push = BackwardPush::kAuto;
  int push_warps = 0;   // 0: the schedule's own (1 spread, 2 shift); else 1..7
  int claim_tiles = 0;  // 0: the default (2); else 1..64 tiles a claim
};

class EmbeddingAllToAllBackward {
 public:
  EmbeddingAllToAllBackward();
  ~EmbeddingAllToAllBackward();
  EmbeddingAllToAllBackward(const EmbeddingAllToAllBackward&) = delete;
  EmbeddingAllToAllBackward& operator=(const EmbeddingAllToAllBackward&) = delete;

  // bf16 or fp16 gradients, dim a multiple of 8 (rows of whole 16-byte pieces); at most 64
  // tables, 8 ranks, 32 tables a rank.
  static Status can_implement(const EmbeddingAllToAllShape& shape, DType dtype);

  // Collective over comm's ranks (null: one rank): allocates the receive buffers, counters
  // and NCCL's receive buffer, exchanges addresses, agrees on the grid, loads the kernel.
  // Call it between quiesce() fences (it allocates).
  // Every rank must pass the same options.
  Status initialize(CommHandle* comm, const EmbeddingAllToAllShape& shape, DType dtype,
                    const EmbeddingAllToAllBackwardOptions& options = {});

  // grad: this rank's [tables][B][dim]; values: gradient_values_count(shape, rank) elements,
  // [slot][G][pooling][dim] over this rank's tables in table order. Every rank calls run
  // once per step, in the same order; `grad` must stay unchanged until the call ends.
  Status run(const void* grad, void* values, cudaStream_t stream);
  Status run_sequential(const void* grad, void* values, cudaStream_t stream);
  // The sequential design's parts: NCCL's exchange of grad into this design's receive
  // buffer, and the expansion from it (this rank's own rows read from grad).
  Status exchange(const void* grad, cudaStream_t stream);
  Status expand(const void* grad, void* values, cudaStream_t stream);

  // Waits for `stream`; a failure if a wait for a source of this rank gave up.
  Status check_timeout(cudaStream_t stream) const;

  int grid() const { return grid_; }
  int expand_grid() const { return expand_grid_; }
  // Bytes this rank sends to other ranks per call (its rows of the tables others own).
  std::uint64_t remote_send_bytes() const;

 private:
  Status fill_args(const void* grad, void* values, void* args) const;

  EmbeddingAllToAllShape shape_;
  DType dtype_ = DType::BF16;
  std::vector<int> slots_;
  int world_ = 1, rank_ = 0, grid_ = 0, expand_grid_ = 0;
  std::uint32_t epoch_ = 0;
  std::uint32_t counted_ = 0;               // the grids of the calls so far, summed
  std::vector<std::uint32_t> claims_base_;  // per tile counter of the expansion
  // The push schedule and tile claims (EmbeddingAllToAllBackwardOptions), set at initialize.
  bool push_spread_ = false;
  int claim_tiles_ = 2;
  int push_warps_ = 2;
  double timeout_s_ = 30.0;
  DeviceBuffer recv_, counters_, claims_, timed_out_, gathered_;
  PeerReceive receive_;  // every rank's receive buffer and counters, mapped here
  CommHandle* comm_ = nullptr;
};

}  // namespace overlapsim::kernels::fused
