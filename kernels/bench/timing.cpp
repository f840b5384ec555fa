#include "kernels/bench/timing.hpp"

#include <algorithm>
#include <vector>

namespace overlapsim::kernels::bench {
namespace {

struct EventPair {
  cudaEvent_t start = nullptr;
  cudaEvent_t stop = nullptr;
};

class Events {
 public:
  ~Events() {
    for (auto& e : events_) {
      if (e.start) cudaEventDestroy(e.start);
      if (e.stop) cudaEventDestroy(e.stop);
    }
  }
  Status create(int count) {
    events_.resize(static_cast<std::size_t>(count));
    for (auto& e : events_) {
      CUDA_CHECK(cudaEventCreate(&e.start));
      CUDA_CHECK(cudaEventCreate(&e.stop));
    }
    return Status::success();
  }
  EventPair& operator[](int i) { return events_[static_cast<std::size_t>(i)]; }

 private:
  std::vector<EventPair> events_;
};

}  // namespace

Status time_iterations(RankContext& ctx, int warmup, int iterations,
                       const EnqueueIteration& enqueue, Timing* timing) {
  Events events;
  OVERLAPSIM_TRY(events.create(iterations));
  for (int i = 0; i < warmup; ++i) OVERLAPSIM_TRY(enqueue(i));
  OVERLAPSIM_TRY(wait_stream(ctx.comm, ctx.compute_stream, "warm-up"));
  for (int i = 0; i < iterations; ++i) {
    CUDA_CHECK(cudaEventRecord(events[i].start, ctx.compute_stream));
    OVERLAPSIM_TRY(enqueue(warmup + i));
    CUDA_CHECK(cudaEventRecord(events[i].stop, ctx.compute_stream));
  }
  OVERLAPSIM_TRY(wait_stream(ctx.comm, ctx.compute_stream, "timed iterations"));
  std::vector<double> seconds(static_cast<std::size_t>(iterations));
  for (int i = 0; i < iterations; ++i) {
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, events[i].start, events[i].stop));
    seconds[static_cast<std::size_t>(i)] = ms * 1e-3;
  }
  OVERLAPSIM_TRY(allreduce_host(ctx.comm, ctx.compute_stream, seconds, ncclMax));
  std::sort(seconds.begin(), seconds.end());
  const std::size_t n = seconds.size();
  timing->median_s = n % 2 ? seconds[n / 2] : 0.5 * (seconds[n / 2 - 1] + seconds[n / 2]);
  timing->min_s = seconds.front();
  timing->max_s = seconds.back();
  return Status::success();
}

}  // namespace overlapsim::kernels::bench
