#pragma once
// One collective as overlap-bench times it: element counts for a requested nccl-tests
// size, and the call on a given communicator and stream (shared by the collective runner
// and the interference runner, which also calls it on CTA-limited communicators).
#include <cstdint>

#include "kernels/collectives/nccl_collectives.hpp"

namespace overlapsim::kernels::bench {

struct CollectiveCounts {
  std::size_t send = 0;
  std::size_t recv = 0;
  std::uint64_t bytes = 0;  // nccl-tests bytes actually used
};

// Rounds the element count down so every rank's block is whole.
CollectiveCounts collective_counts(CollectiveOp op, std::uint64_t bytes, DType dtype, int world);

Status enqueue_collective(CommHandle& comm, CollectiveOp op, const void* send, void* recv,
                          const CollectiveCounts& counts, DType dtype, cudaStream_t stream);

}  // namespace overlapsim::kernels::bench
