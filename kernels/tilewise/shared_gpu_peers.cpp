#include "kernels/tilewise/shared_gpu_peers.hpp"

#include <chrono>
#include <string>

namespace overlapsim::kernels::tilewise {

SharedGpuPeers::SharedGpuPeers(int world, double timeout_s)
    : world_(world),
      timeout_s_(timeout_s),
      filling_(static_cast<std::size_t>(world > 0 ? world : 0)),
      filled_(static_cast<std::size_t>(world > 0 ? world : 0), false) {}

PeerLinks SharedGpuPeers::links(int rank) {
  PeerLinks l;
  l.world = world_;
  l.rank = rank;
  l.shared_gpu = true;
  l.exchange = [this, rank](const std::vector<void*>& mine, std::vector<std::vector<void*>>* all) {
    return exchange(rank, mine, all);
  };
  return l;
}

// A rank that finishes a round early can enter the next one and fill filling_ again, but
// that round completes only once every rank (the slow ones included, after they have read
// complete_) has arrived, so complete_ is never replaced under a reader.
Status SharedGpuPeers::exchange(int rank, const std::vector<void*>& mine,
                                std::vector<std::vector<void*>>* all) {
  if (world_ < 1 || rank < 0 || rank >= world_)
    return Status::failure("shared-GPU peers: rank " + std::to_string(rank) + " outside 0.." +
                           std::to_string(world_ - 1));
  std::unique_lock<std::mutex> lock(mutex_);
  const auto slot = static_cast<std::size_t>(rank);
  if (filled_[slot])
    return Status::failure("shared-GPU peers: rank " + std::to_string(rank) +
                           " entered an exchange twice before the others arrived");
  filling_[slot] = mine;
  filled_[slot] = true;
  const std::uint64_t my_round = round_;
  if (++count_ == world_) {
    // A mismatch fails every rank of the round (none is left waiting).
    complete_consistent_ = true;
    for (const auto& r : filling_) complete_consistent_ &= r.size() == mine.size();
    complete_ = filling_;
    filled_.assign(filled_.size(), false);
    count_ = 0;
    ++round_;
    changed_.notify_all();
  } else {
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                              std::chrono::duration<double>(timeout_s_));
    if (!changed_.wait_until(lock, deadline, [&] { return round_ != my_round; }))
      return Status::failure("shared-GPU peers: rank " + std::to_string(rank) + " waited " +
                             std::to_string(timeout_s_) +
                             " s in a pointer exchange for the other ranks");
  }
  if (!complete_consistent_)
    return Status::failure("shared-GPU peers: the ranks exchanged different pointer counts");
  *all = complete_;
  return Status::success();
}

}  // namespace overlapsim::kernels::tilewise
