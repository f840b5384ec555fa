#pragma once
// Ranks of the copy-engine transport (copy_engine_design.hpp, peer_memory.hpp) as host threads of one
// process that share one GPU: their pointer exchange is a rendezvous in host memory instead of a
// collective over NCCL (which refuses two ranks on one device). With it the whole
// multi-rank protocol (rank-rotated GEMMs, copies, epoch flags, both all-reduce phase-2
// modes, back-to-back calls) runs on a single GPU, every copy and flag inside its memory.
// For checking the protocol where only one GPU is at hand; it times nothing real.
// Host only, C++17.
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <vector>

#include "kernels/common/status.hpp"
#include "kernels/tilewise/peer_memory.hpp"

namespace overlapsim::kernels::tilewise {

class SharedGpuPeers {
 public:
  // `timeout_s`: how long a rank waits in an exchange for the others before it fails.
  explicit SharedGpuPeers(int world, double timeout_s = 60.0);
  SharedGpuPeers(const SharedGpuPeers&) = delete;
  SharedGpuPeers& operator=(const SharedGpuPeers&) = delete;

  // Rank `rank`'s links (shared_gpu set); valid while this object lives. Each rank's
  // thread must call the exchange in the same order, as with a communicator.
  PeerLinks links(int rank);

 private:
  Status exchange(int rank, const std::vector<void*>& mine, std::vector<std::vector<void*>>* all);

  const int world_;
  const double timeout_s_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<std::vector<void*>> filling_;  // the round being filled, by rank
  std::vector<bool> filled_;
  int count_ = 0;
  std::uint64_t round_ = 0;                   // completed rounds
  std::vector<std::vector<void*>> complete_;  // the last completed round's table
  bool complete_consistent_ = true;           // its ranks gave equal pointer counts
};

}  // namespace overlapsim::kernels::tilewise
