#include "kernels/harness/rank_barrier.hpp"

#include <chrono>

namespace overlapsim::kernels {

RankBarrier::Outcome RankBarrier::arrive_and_wait(double timeout_s,
                                                  const std::atomic<bool>* abort) {
  using Clock = std::chrono::steady_clock;
  const auto deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(
                         std::chrono::duration<double>(timeout_s > 0 ? timeout_s : 0));
  std::unique_lock<std::mutex> lock(mutex_);
  if (broken_) return Outcome::Aborted;
  const std::uint64_t my_phase = phase_;
  if (++arrived_ == count_) {
    arrived_ = 0;
    ++phase_;
    changed_.notify_all();
    return Outcome::Passed;
  }
  // The abort flag is raised without this mutex (by a failing rank), so poll it: a short
  // wait_for bounds how late a waiter notices.
  while (phase_ == my_phase) {
    if (broken_ || (abort != nullptr && abort->load())) {
      broken_ = true;
      changed_.notify_all();
      return Outcome::Aborted;
    }
    if (Clock::now() >= deadline) {
      broken_ = true;
      changed_.notify_all();
      return Outcome::TimedOut;
    }
    changed_.wait_for(lock, std::chrono::milliseconds(2));
  }
  return Outcome::Passed;
}

}  // namespace overlapsim::kernels
