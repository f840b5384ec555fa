#pragma once
// A step of many microbatches simulated as two short steps of the same configuration and
// extrapolated (sim/scenario/extrapolate.hpp): the planner's way to time a configuration
// whose pipeline runs hundreds of microbatches, at a fraction of the events.
//
// The two runs take pp and 2 pp microbatches for a plain 1F1B pipeline, and 2u and 3u,
// u = pp, for an interleaved one (whose first stage is still in its warm-up at pp: there the
// per-microbatch increment of the breakdown is off by up to 1 %; interleaving also needs
// multiples of pp) or u = 1 without a pipeline (the first microbatch gathers parameters, the
// last reduces gradients). Steps no longer than the two runs together, DLRM steps (one
// microbatch) and the duty-cycle GEMM clock (a rerun scaled by the whole step's idle share)
// are simulated whole.
//
// Where the pipeline is interleaved or absent, only the second run is simulated: the
// first run is identical to it up to each rank's last forward chunk of the first, and in
// the steady state what follows (one more period, then the drain) is the first run's drain
// one period later. So the first run is the second less the period between its ranks'
// marks at those two chunks, where every rank's period agrees (sim::period_spread); else
// the first run is simulated too.
#include <cstdint>

#include "sim/scenario/scenario.hpp"
#include "workloads/cluster.hpp"
#include "workloads/model.hpp"

namespace overlapsim::workloads {

struct MicrobatchSample {
  std::int64_t microbatches = 0;  // the step's
  int first = 0, second = 0;      // the two runs' microbatches; 0: the step is run whole
  // The first run is the second one less its last period (one run simulated, marked at
  // both runs' last forward chunks; sim/scenario/extrapolate.hpp before_last_period)
  // rather than a run of its own: without a pipeline or with an interleaved one, where the
  // second run's period is steady. ModelRun::sample says what was done.
  bool by_periods = false;
  bool sampled() const { return first > 0; }
};

// How simulate_model runs a step of many microbatches.
enum class Sampling {
  Whole,    // every microbatch
  Runs,     // two short runs, both simulated, extrapolated
  Periods,  // the same, the first taken from the second's period marks where it may be
};

// Which runs a resolved model's step takes (resolve_for_world).
MicrobatchSample microbatch_sample(const ModelSpec& resolved);
// The same from the step's shape: `microbatches` of a pipeline of `pp` stages with
// `virtual_stages` model chunks each (a transformer or MoE step).
MicrobatchSample microbatch_sample(std::int64_t microbatches, int pp, int virtual_stages);

// What the planner and validate-steps read of a simulated configuration.
struct ModelRun {
  sim::ScenarioResult result;
  MicrobatchSample sample;
  ModelSpec model;          // resolved for the cluster (the step's microbatches)
  std::string device_name;  // the profile's device
  double tokens_per_step = 0;
  double flops_per_step = 0;        // with recomputation
  double model_flops_per_step = 0;  // without
  double peak_flops_per_s = 0;
  int world_size = 0;
};

// Simulates `model` on `cluster` (with `profile_file`, or the cluster's profile when
// empty), whole or sampled as microbatch_sample says unless `sampling` is Whole. Throws
// what make_scenario_inputs and run_scenario throw.
ModelRun simulate_model(const ModelSpec& model, const ClusterSpec& cluster,
                        const sim::ScenarioOptions& options, Sampling sampling,
                        const std::string& profile_file = "");
// The same with the cluster's profile already loaded (copied into the runs, not read).
ModelRun simulate_model(const ModelSpec& model, const ClusterSpec& cluster,
                        const sim::ScenarioOptions& options, Sampling sampling,
                        const sim::Profile& profile);

}  // namespace overlapsim::workloads
