#pragma once
// Runs many scenarios (configurations x designs) on a pool of threads: the capacity
// planner's inner loop. Each scenario is independent (its own engine, network and cost
// model), so results do not depend on the thread count or on scheduling: result i is
// run_scenario(scenarios[i]), exactly as a serial loop gives it.
#include <cstddef>
#include <functional>
#include <vector>

#include "sim/scenario/scenario.hpp"

namespace overlapsim::planning {

struct SweepOptions {
  int threads = 1;  // worker threads (>= 1); more than scenarios are not started
};

// Calls fn(i) for every i in [0, n) on up to `threads` threads (the caller's among them);
// each index exactly once. Rethrows the exception of the lowest index that failed, after
// every worker has stopped.
void parallel_for(std::size_t n, int threads, const std::function<void(std::size_t)>& fn);

// Rethrows the exception of the lowest-indexed scenario that failed, after every worker
// has stopped (no result is returned then).
std::vector<sim::ScenarioResult> run_sweep(const std::vector<sim::Scenario>& scenarios,
                                           const SweepOptions& options = {});

}  // namespace overlapsim::planning
