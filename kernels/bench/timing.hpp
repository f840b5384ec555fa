#pragma once
// Timing of one variant on every rank: warm-up, then CUDA events around each iteration
// on the compute stream, then per iteration the max over ranks, then median, min, max
// over iterations. Iterations run back to back; each ends with its collective, which
// keeps the ranks in step.
#include <functional>
#include <vector>

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

// Several variants timed in one loop, so all see the same clock and power state (a GEMM
// timed in a loop of its own ran under a different, power-limited clock than the pair it
// was compared with: issue 4). Iteration i times every variant once, each with its own
// events, starting with variant i mod V so no variant always follows the same one; before
// each timed variant `align(i)` (untimed, may be empty) runs on the compute stream, e.g. a
// tiny collective that lines the ranks up again so a variant's time does not include the
// previous variant's skew between ranks. `timings` gets one entry per variant.
Status time_interleaved(RankContext& ctx, int warmup, int iterations,
                        const std::vector<EnqueueIteration>& variants,
                        const EnqueueIteration& align, std::vector<Timing>* timings);

}  // namespace overlapsim::kernels::bench
