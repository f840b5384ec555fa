#pragma once
// The receive side of a fused GPU-initiated exchange as every rank sees it: each rank's
// receive buffer and arrival counters, mapped into this rank so its kernel can store rows or
// tiles and bump counters on its peers directly (CUDA IPC through tilewise::PeerMemory).
// Shared by the fused embedding-bag + All-to-All (forward and backward) and GEMM +
// All-to-All kernels.
#include <memory>

#include "kernels/common/status.hpp"
#include "kernels/harness/comm.hpp"
#include "kernels/tilewise/peer_memory.hpp"

namespace overlapsim::kernels::fused {

struct PeerReceive {
  static constexpr int kMaxRanks = 8;
  std::unique_ptr<tilewise::PeerMemory> peers;  // keeps the mappings open
  void* recv[kMaxRanks] = {};                   // rank r's receive buffer
  void* counters[kMaxRanks] = {};               // rank r's arrival counters
};

// Maps every rank's `recv` and `counters` (allocated, the counters zeroed and the device
// synchronised, so no peer sees them before they are 0) into `out`. Without a communicator
// or with one rank, only the rank's own.
Status share_peer_receive(CommHandle* comm, int world, void* recv, void* counters,
                          PeerReceive* out);

}  // namespace overlapsim::kernels::fused
