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

// Median, min and max of per-iteration times.
Timing summarize(std::vector<double> seconds) {
  std::sort(seconds.begin(), seconds.end());
  const std::size_t n = seconds.size();
  Timing t;
  t.median_s = n % 2 ? seconds[n / 2] : 0.5 * (seconds[n / 2 - 1] + seconds[n / 2]);
  t.min_s = seconds.front();
  t.max_s = seconds.back();
  return t;
}

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
  *timing = summarize(seconds);
  return Status::success();
}

Status time_interleaved(RankContext& ctx, int warmup, int iterations,
                        const std::vector<EnqueueIteration>& variants,
                        const EnqueueIteration& align, std::vector<Timing>* timings) {
  const int count = static_cast<int>(variants.size());
  Events events;
  OVERLAPSIM_TRY(events.create(iterations * count));
  // Iterations are numbered from the first warm-up one; `slot` is the timed iteration's
  // index among the events, or -1 during warm-up.
  const auto run_iteration = [&](int i, int slot) -> Status {
    for (int step = 0; step < count; ++step) {
      const int v = (i + step) % count;
      if (align) OVERLAPSIM_TRY(align(i));
      if (slot >= 0)
        CUDA_CHECK(cudaEventRecord(events[slot * count + v].start, ctx.compute_stream));
      // Each variant of iteration i gets its own input set: i * count + v.
      OVERLAPSIM_TRY(variants[static_cast<std::size_t>(v)](i * count + v));
      if (slot >= 0) CUDA_CHECK(cudaEventRecord(events[slot * count + v].stop, ctx.compute_stream));
    }
    return Status::success();
  };
  for (int i = 0; i < warmup; ++i) OVERLAPSIM_TRY(run_iteration(i, -1));
  OVERLAPSIM_TRY(wait_stream(ctx.comm, ctx.compute_stream, "warm-up"));
  for (int i = 0; i < iterations; ++i) OVERLAPSIM_TRY(run_iteration(warmup + i, i));
  OVERLAPSIM_TRY(wait_stream(ctx.comm, ctx.compute_stream, "timed iterations"));
  // Laid out [iteration][variant], reduced over ranks in one call.
  std::vector<double> seconds(static_cast<std::size_t>(iterations * count));
  for (int e = 0; e < iterations * count; ++e) {
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, events[e].start, events[e].stop));
    seconds[static_cast<std::size_t>(e)] = ms * 1e-3;
  }
  OVERLAPSIM_TRY(allreduce_host(ctx.comm, ctx.compute_stream, seconds, ncclMax));
  timings->assign(static_cast<std::size_t>(count), Timing{});
  for (int v = 0; v < count; ++v) {
    std::vector<double> of_variant;
    for (int i = 0; i < iterations; ++i)
      of_variant.push_back(seconds[static_cast<std::size_t>(i * count + v)]);
    (*timings)[static_cast<std::size_t>(v)] = summarize(of_variant);
  }
  return Status::success();
}

}  // namespace overlapsim::kernels::bench
