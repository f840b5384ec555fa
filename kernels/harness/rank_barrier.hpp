#pragma once
// A host rendezvous of the rank threads of one process that can give up: a rank stuck
// elsewhere (dead peer, deadline) must not leave the others waiting forever, so a wait
// ends when every rank arrived, when `abort` is raised (the harness's peer-failed flag),
// or at the deadline. std::barrier cannot do either of the last two.
//
// Why overlap-bench needs it: in thread mode one process drives every GPU, and a rank
// that calls cudaMalloc/cudaFree (or creates/destroys a communicator) while a peer's NCCL
// kernel waits for this rank can deadlock inside the CUDA driver (docs/kernels/log.md, "Hang
// of a whole overlap-bench run"). Runners drain their streams and meet here before and
// after every allocation phase, so no NCCL kernel is in flight while anyone maps memory.
// C++17, no CUDA.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>

namespace overlapsim::kernels {

class RankBarrier {
 public:
  explicit RankBarrier(int count) : count_(count) {}
  RankBarrier(const RankBarrier&) = delete;
  RankBarrier& operator=(const RankBarrier&) = delete;

  enum class Outcome { Passed, Aborted, TimedOut };

  // Waits until `count` arrivals of the current phase, then every waiter passes and the
  // barrier is ready for the next phase. An aborted or timed-out waiter leaves the barrier
  // broken: later arrivals fail at once (Aborted), so no rank waits on a phase that can
  // never complete.
  Outcome arrive_and_wait(double timeout_s, const std::atomic<bool>* abort);

  int count() const { return count_; }

 private:
  const int count_;
  std::mutex mutex_;
  std::condition_variable changed_;
  int arrived_ = 0;
  std::uint64_t phase_ = 0;
  bool broken_ = false;
};

}  // namespace overlapsim::kernels
