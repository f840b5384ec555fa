#pragma once
// Timing of one variant on every rank: warm-up, then CUDA events around each iteration
// on the compute stream, then per iteration the max over ranks, then median, min, max
// over iterations. Iterations run back to back; each ends with its collective, which
// keeps the ranks in step.
#include <functional>

#include "kernels/common/status.hpp"
#include "kernels/harness/multi_gpu.hpp"

namespace overlapsim::kernels::bench {

struct Timing {
  double median_s = 0;
  double min_s = 0;
  double max_s = 0;
};

// `enqueue(i)` enqueues iteration i, starting and ending on ctx.compute_stream (work on
// the comm stream must be joined back). Input sets are rotated by the caller via i.
using EnqueueIteration = std::function<Status(int iteration)>;

Status time_iterations(RankContext& ctx, int warmup, int iterations,
                       const EnqueueIteration& enqueue, Timing* timing);

}  // namespace overlapsim::kernels::bench
