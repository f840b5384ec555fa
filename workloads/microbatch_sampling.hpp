#pragma once
// A step of many microbatches simulated as two short steps of the same configuration and
// extrapolated (sim/scenario/extrapolate.hpp): the planner's way to time a configuration
// whose pipeline runs hundreds of microbatches, at a fraction of the events.
//
// The two runs take 2u and 3u microbatches, u = pp (interleaving needs multiples of pp;
// u = 1 without a pipeline): with u = pp every stage has left its warm-up and the
// per-microbatch increment is already the steady state's (at pp and 2pp it is not yet,
// with interleaving, by up to 1 % in the breakdown). Steps of at most 5u microbatches, DLRM
// steps (one microbatch) and the duty-cycle GEMM clock (a rerun scaled by the whole step's
// idle share) are simulated whole.
#include <cstdint>

#include "sim/scenario/scenario.hpp"
#include "workloads/cluster.hpp"
#include "workloads/model.hpp"

namespace overlapsim::workloads {

struct MicrobatchSample {
  std::int64_t microbatches = 0;  // the step's
  int first = 0, second = 0;      // the two runs' microbatches; 0: the step is run whole
  bool sampled() const { return first > 0; }
};

// Which runs a resolved model's step takes (resolve_for_world).
MicrobatchSample microbatch_sample(const ModelSpec& resolved);

// What the planner reads of a simulated configuration.
struct ModelRun {
  sim::ScenarioResult result;
  MicrobatchSample sample;
  double tokens_per_step = 0;
  double flops_per_step = 0;        // with recomputation
  double model_flops_per_step = 0;  // without
  double peak_flops_per_s = 0;
  int world_size = 0;
};

// Simulates `model` on `cluster` (its profile), whole or sampled as microbatch_sample says
// when `sample` is true. Throws what make_scenario_inputs and run_scenario throw.
ModelRun simulate_model(const ModelSpec& model, const ClusterSpec& cluster,
                        const sim::ScenarioOptions& options, bool sample);

}  // namespace overlapsim::workloads
