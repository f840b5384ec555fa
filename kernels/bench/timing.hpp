#pragma once
// Timing of one variant on every rank: warm-up, then CUDA events around each iteration
// on the compute stream, then per iteration the max over ranks, then median, min, max
// over iterations. Iterations run back to back; each ends with its collective, which
// keeps the ranks in step.
//
// Steady state (TimingPolicy): `warmup_s` runs the work for that long before timing, so
// the GPU reaches its power-limited clock first (docs/kernels/log.md: 50 back-to-back GEMMs
// fell from ~1.39 to ~1.55 ms once the clock dropped), and `min_time_s` keeps adding
// iterations (at least the requested count) until that much work has been timed. Every
// decision uses times already reduced over ranks, so all ranks run the same iterations.
#include <functional>
#include <vector>

#include "kernels/common/status.hpp"
#include "kernels/harness/multi_gpu.hpp"

namespace overlapsim::kernels::bench {

struct Timing {
  double median_s = 0;
  double min_s = 0;
  double max_s = 0;
  int iterations = 0;  // samples behind the three numbers
};

struct TimingPolicy {
  double min_time_s = 0;  // timed work per measurement, at least; 0: just the iterations
  double warmup_s = 0;    // untimed work before timing, after the counted warm-up
};

// The policy of the calling rank thread. overlap-bench sets it per case (ScopedTimingPolicy
// in main), so every runner — including ones that only call time_iterations — follows
// the case's settings without each passing them through.
const TimingPolicy& timing_policy();
class ScopedTimingPolicy {
 public:
  explicit ScopedTimingPolicy(const TimingPolicy& policy);
  ~ScopedTimingPolicy();
  ScopedTimingPolicy(const ScopedTimingPolicy&) = delete;
  ScopedTimingPolicy& operator=(const ScopedTimingPolicy&) = delete;

 private:
  TimingPolicy previous_;
};

// Most timed iterations one measurement may take, whatever min_time_s asks.
inline constexpr int kMaxTimedIterations = 20000;

// Next batch size so the timed total reaches `min_time_s`: 0 when it has (or the cap is
// reached), else the iterations still missing at the mean time so far (at least 1).
// Pure, so the host tests check it.
int more_iterations_for(double min_time_s, double timed_s, int timed_iterations);
// Iterations of length `iteration_s` that fill `seconds` (0 when either is <= 0), capped.
int iterations_for(double seconds, double iteration_s);
// Median, min and max of samples (empty: zeros).
Timing summarize(std::vector<double> seconds);

// `enqueue(i)` enqueues iteration i, starting and ending on ctx.compute_stream (work on
// the comm stream must be joined back). Input sets are rotated by the caller via i.
using EnqueueIteration = std::function<Status(int iteration)>;

Status time_iterations(RankContext& ctx, int warmup, int iterations,
                       const EnqueueIteration& enqueue, Timing* timing);

// Runs `enqueue(first), enqueue(first + 1), ...` for about `seconds` on `stream` (one
// iteration timed first, its max over ranks sets the count) and waits for them. Nothing
// when seconds <= 0. Returns the index after the last iteration run in *next.
Status run_for(RankContext& ctx, cudaStream_t stream, double seconds, int first,
               const EnqueueIteration& enqueue, int* next);

// Several variants timed in one loop, so all see the same clock and power state (a GEMM
// timed in a loop of its own ran under a different, power-limited clock than the pair it
// was compared with). Iteration i times every variant once, each with its own
// events, starting with variant i mod V so no variant always follows the same one; before
// each timed variant `align(i)` (untimed, may be empty) runs on the compute stream, e.g. a
// tiny collective that lines the ranks up again so a variant's time does not include the
// previous variant's skew between ranks. `timings` gets one entry per variant.
Status time_interleaved(RankContext& ctx, int warmup, int iterations,
                        const std::vector<EnqueueIteration>& variants,
                        const EnqueueIteration& align, std::vector<Timing>* timings);

}  // namespace overlapsim::kernels::bench
