#pragma once
// `overlapsim plan`'s library call: search the parallelism space of a model on each
// cluster and node count, reject what does not fit in memory, pre-screen the rest
// analytically, time the survivors with the simulator on threads, and summarise cost and
// time (planning/plan_result.hpp). docs/plan.md describes the search and its outputs.
#include <string>
#include <vector>

#include "planning/plan_result.hpp"
#include "planning/ranks.hpp"
#include "planning/search_space.hpp"

namespace overlapsim::planning {

struct PlanOptions {
  std::string model_file;
  std::vector<std::string> cluster_files;
  std::vector<int> nodes;
  std::vector<std::string> designs;  // registry names
  PlanTarget target;
  SearchLimits limits;
  // Per cluster and node count, at most this many configurations (the lowest analytic
  // estimates first) are simulated; the rest are reported as pruned.
  int simulate_top = 4;
  // false: a configuration of many microbatches is timed from two short runs of it,
  // extrapolated (workloads/microbatch_sampling.hpp), and the background images of each
  // send start together, aggregated by class on the network
  // (CollectiveCostModel::launch_background). true: every configuration is simulated as
  // `overlapsim simulate` does.
  bool exact_simulation = false;
  // Sampled: both short runs simulated, where the first could be the second's less its
  // last period (workloads::Sampling::Runs rather than Periods; the same steps within
  // rounding where the pipeline is steady, at more events).
  bool sample_by_runs = false;
  // Configurations to simulate whatever the pre-screen and --simulate-top say (a layout to
  // compare against, e.g. the one in use), as planning/configuration_text.hpp reads them.
  std::vector<std::string> include;
  int threads = 1;
  std::string state_file;  // the resume file; empty: none
  bool resume = false;
  bool progress = false;
  // The ranks sharing the sweep; null: Ranks::world() (every rank of an mpirun launch, or
  // this process alone). Every rank returns the same result.
  const Ranks* ranks = nullptr;
};

// Throws config::ConfigError for bad input: unreadable files, an empty search space, a
// target without a price on some cluster, a target nothing meets (naming the best reached).
PlanResult run_plan(const PlanOptions& options);

// The inputs' fingerprint for the resume file: the model, cluster and profile files'
// contents and the designs.
std::string plan_fingerprint(const PlanOptions& options);

// Fills costs, target checks and the summaries (fastest, cheapest, Pareto front) of a
// result whose points are simulated; `target_tokens` > 0 adds the time to train.
void summarise(PlanResult& result);

}  // namespace overlapsim::planning
