#include "kernels/bench/timing.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "kernels/harness/stream_gate.hpp"

namespace overlapsim::kernels::bench {
namespace {

thread_local TimingPolicy current_policy;

// Iterations enqueued behind one stream gate, and the longest the gate holds the stream
// (a launch queue that fills up blocks the host: the timeout then releases the batch).
constexpr int kGatedIterations = 32;
constexpr double kGateTimeout_s = 0.05;

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

// Elapsed seconds of `count` event pairs, reduced to the max over ranks.
Status read_reduced(RankContext& ctx, Events& events, int count, std::vector<double>* seconds) {
  seconds->assign(static_cast<std::size_t>(count), 0.0);
  for (int e = 0; e < count; ++e) {
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, events[e].start, events[e].stop));
    (*seconds)[static_cast<std::size_t>(e)] = ms * 1e-3;
  }
  return allreduce_host(ctx.comm, ctx.compute_stream, *seconds, ncclMax);
}

double sum_of(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s;
}

}  // namespace

const TimingPolicy& timing_policy() { return current_policy; }

ScopedTimingPolicy::ScopedTimingPolicy(const TimingPolicy& policy) : previous_(current_policy) {
  current_policy = policy;
}

ScopedTimingPolicy::~ScopedTimingPolicy() { current_policy = previous_; }

int more_iterations_for(double min_time_s, double timed_s, int timed_iterations) {
  if (timed_s >= min_time_s || timed_iterations >= kMaxTimedIterations || timed_iterations < 1)
    return 0;
  const double mean_s = timed_s / timed_iterations;
  const double missing = mean_s > 0 ? std::ceil((min_time_s - timed_s) / mean_s) : 1.0;
  const double room = static_cast<double>(kMaxTimedIterations - timed_iterations);
  return static_cast<int>(std::clamp(missing, 1.0, room));
}

int iterations_for(double seconds, double iteration_s) {
  if (seconds <= 0 || iteration_s <= 0) return 0;
  return static_cast<int>(
      std::min(std::ceil(seconds / iteration_s), static_cast<double>(kMaxTimedIterations)));
}

Timing summarize(std::vector<double> seconds) {
  Timing t;
  if (seconds.empty()) return t;
  std::sort(seconds.begin(), seconds.end());
  const std::size_t n = seconds.size();
  t.median_s = n % 2 ? seconds[n / 2] : 0.5 * (seconds[n / 2 - 1] + seconds[n / 2]);
  t.min_s = seconds.front();
  t.max_s = seconds.back();
  t.iterations = static_cast<int>(n);
  return t;
}

Status run_for(RankContext& ctx, cudaStream_t stream, double seconds, int first,
               const EnqueueIteration& enqueue, int* next) {
  *next = first;
  if (seconds <= 0) return Status::success();
  Events probe;
  OVERLAPSIM_TRY(probe.create(1));
  CUDA_CHECK(cudaEventRecord(probe[0].start, stream));
  OVERLAPSIM_TRY(enqueue((*next)++));
  CUDA_CHECK(cudaEventRecord(probe[0].stop, stream));
  OVERLAPSIM_TRY(wait_stream(ctx.comm, stream, "timed warm-up probe"));
  std::vector<double> one;
  OVERLAPSIM_TRY(read_reduced(ctx, probe, 1, &one));
  const int count = iterations_for(seconds, one[0]);
  for (int i = 0; i < count; ++i) OVERLAPSIM_TRY(enqueue((*next)++));
  return wait_stream(ctx.comm, stream, "timed warm-up");
}

Status time_iterations(RankContext& ctx, int warmup, int iterations,
                       const EnqueueIteration& enqueue, Timing* timing) {
  const TimingPolicy policy = timing_policy();
  for (int i = 0; i < warmup; ++i) OVERLAPSIM_TRY(enqueue(i));
  OVERLAPSIM_TRY(wait_stream(ctx.comm, ctx.compute_stream, "warm-up"));
  int index = warmup;
  OVERLAPSIM_TRY(run_for(ctx, ctx.compute_stream, policy.warmup_s, index, enqueue, &index));
  // Timed iterations run behind a stream gate, kGatedIterations at a time: the host
  // enqueues them while the gate holds the stream, so the GPU runs them back to back and
  // no iteration counts the host's launch latency (stream_gate.hpp). The first iteration
  // after each gate may wait for the peer ranks' gates: one sample in kGatedIterations,
  // which the median ignores.
  thread_local StreamGate gate;
  if (!gate.initialized()) {
    // Its pinned words are mapped into every GPU: allocated between fences, like any
    // allocation in a rank thread (free_queue.hpp). Every rank's first timing comes here.
    OVERLAPSIM_TRY(quiesce(ctx, "timing: before the stream gate"));
    OVERLAPSIM_TRY(gate.initialize());
    OVERLAPSIM_TRY(quiesce(ctx, "timing: after the stream gate"));
  }
  const int timeouts_before = gate.timeouts();
  std::vector<double> all;
  for (int batch = iterations; batch > 0;
       batch = more_iterations_for(policy.min_time_s, sum_of(all), static_cast<int>(all.size()))) {
    Events events;
    OVERLAPSIM_TRY(events.create(batch));
    for (int i = 0; i < batch; ++i) {
      if (i % kGatedIterations == 0) {
        if (i > 0) gate.open();
        OVERLAPSIM_TRY(gate.close(ctx.compute_stream, kGateTimeout_s));
      }
      CUDA_CHECK(cudaEventRecord(events[i].start, ctx.compute_stream));
      OVERLAPSIM_TRY(enqueue(index++));
      CUDA_CHECK(cudaEventRecord(events[i].stop, ctx.compute_stream));
    }
    gate.open();
    OVERLAPSIM_TRY(wait_stream(ctx.comm, ctx.compute_stream, "timed iterations"));
    std::vector<double> seconds;
    OVERLAPSIM_TRY(read_reduced(ctx, events, batch, &seconds));
    all.insert(all.end(), seconds.begin(), seconds.end());
  }
  *timing = summarize(all);
  if (gate.timeouts() != timeouts_before)
    std::fprintf(stderr,
                 "overlap-bench: rank on GPU %d: %d stream gate(s) opened by timeout (the host "
                 "blocked while enqueueing); those batches ran as the host enqueued them\n",
                 ctx.device, gate.timeouts() - timeouts_before);
  return Status::success();
}

Status time_interleaved(RankContext& ctx, int warmup, int iterations,
                        const std::vector<EnqueueIteration>& variants,
                        const EnqueueIteration& align, std::vector<Timing>* timings) {
  const TimingPolicy policy = timing_policy();
  const int count = static_cast<int>(variants.size());
  // Iterations are numbered from the first warm-up one; `events` (null during warm-up)
  // gets one pair per variant at slot * count + v.
  const auto run_iteration = [&](int i, Events* events, int slot) -> Status {
    for (int step = 0; step < count; ++step) {
      const int v = (i + step) % count;
      if (align) OVERLAPSIM_TRY(align(i));
      if (events)
        CUDA_CHECK(cudaEventRecord((*events)[slot * count + v].start, ctx.compute_stream));
      // Each variant of iteration i gets its own input set: i * count + v.
      OVERLAPSIM_TRY(variants[static_cast<std::size_t>(v)](i * count + v));
      if (events) CUDA_CHECK(cudaEventRecord((*events)[slot * count + v].stop, ctx.compute_stream));
    }
    return Status::success();
  };
  for (int i = 0; i < warmup; ++i) OVERLAPSIM_TRY(run_iteration(i, nullptr, -1));
  OVERLAPSIM_TRY(wait_stream(ctx.comm, ctx.compute_stream, "warm-up"));
  int index = warmup;
  OVERLAPSIM_TRY(run_for(
      ctx, ctx.compute_stream, policy.warmup_s, index,
      [&](int i) { return run_iteration(i, nullptr, -1); }, &index));

  std::vector<std::vector<double>> of_variant(static_cast<std::size_t>(count));
  // Per variant the timed total must reach min_time_s: the batch size follows the variant
  // furthest from it.
  const auto more = [&]() {
    int batch = 0;
    for (const auto& v : of_variant)
      batch = std::max(
          batch, more_iterations_for(policy.min_time_s, sum_of(v), static_cast<int>(v.size())));
    return batch;
  };
  for (int batch = iterations; batch > 0; batch = more()) {
    Events events;
    OVERLAPSIM_TRY(events.create(batch * count));
    for (int i = 0; i < batch; ++i) OVERLAPSIM_TRY(run_iteration(index++, &events, i));
    OVERLAPSIM_TRY(wait_stream(ctx.comm, ctx.compute_stream, "timed iterations"));
    // Laid out [iteration][variant], reduced over ranks in one call.
    std::vector<double> seconds;
    OVERLAPSIM_TRY(read_reduced(ctx, events, batch * count, &seconds));
    for (int i = 0; i < batch; ++i)
      for (int v = 0; v < count; ++v)
        of_variant[static_cast<std::size_t>(v)].push_back(
            seconds[static_cast<std::size_t>(i * count + v)]);
  }
  timings->assign(static_cast<std::size_t>(count), Timing{});
  for (int v = 0; v < count; ++v)
    (*timings)[static_cast<std::size_t>(v)] = summarize(of_variant[static_cast<std::size_t>(v)]);
  return Status::success();
}

}  // namespace overlapsim::kernels::bench
