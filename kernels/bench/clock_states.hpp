#pragma once
// Variants timed each in a loop of its own in the two clock states PyTorch's peers are timed
// in (benchmarks/peers/torch_overlap.py --warmup-ms / --idle-s): a GEMM's speed follows the
// GPU's clock, which runs at its boost after an idle spell and drops to the power-limited one
// after some 100 ms of back-to-back GEMMs (18-19 % slower at 8192^3 on an H200), so a design
// and PyTorch's are compared only in the same state.
//   steady: kSteadyWarmup_s back to back untimed, then the case's iterations;
//   burst:  kBurstIdle_s of idle GPU (every rank drained, then met), 5 warm-up calls and 20
//           timed.
// Row names: <name>_steady and <name>_burst, emitted by the caller.
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "kernels/bench/bench_case.hpp"
#include "kernels/bench/bench_env.hpp"
#include "kernels/bench/timing.hpp"

namespace overlapsim::kernels::bench {

inline constexpr double kSteadyWarmup_s = 1.0;
inline constexpr double kBurstIdle_s = 0.5;
inline constexpr int kBurstWarmup = 5;
inline constexpr int kBurstIterations = 20;

// Every variant steady (in order), then every variant burst, each burst behind its own idle
// spell; `emit(name + "_steady" or "_burst", index, timing)` after each.
Status time_clock_states(
    BenchEnv& env, const BenchCase& c,
    const std::vector<std::pair<std::string, EnqueueIteration>>& variants,
    const std::function<void(const std::string& row, std::size_t index, const Timing& t)>& emit);

// Every rank's streams drained, kBurstIdle_s with nothing enqueued, then the ranks meet
// again, so that they start the burst together.
Status idle_gpu(BenchEnv& env);

}  // namespace overlapsim::kernels::bench
