#pragma once
// What a scenario needs from the files a user names: the model resolved for the cluster, the
// cluster and its topology, the profile (the cluster's, or another), the step graph, the
// GPU's peak rate for the model's precision and how the cluster's links time collectives.
// `overlapsim simulate` and the planner load through here and then call sim::run_scenario.
#include <string>

#include "sim/collectives/collective_cost_model.hpp"
#include "sim/graph/op_graph.hpp"
#include "sim/profile/profile.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/topology/topology.hpp"
#include "workloads/cluster.hpp"
#include "workloads/model.hpp"

namespace overlapsim::workloads {

struct ScenarioRequest {
  std::string model_file;
  std::string cluster_file;
  std::string profile_file;  // empty: the one the cluster file names
  // Parallelism overrides; 0: as the model file says.
  int tp = 0, pp = 0, dp = 0, cp = 0, ep = 0;
  bool fold = true;  // one simulated rank per identical class (workloads/generator.hpp)
};

struct ScenarioInputs {
  ModelSpec model;  // resolved for the cluster's GPU count
  ClusterSpec cluster;
  sim::Profile profile;
  sim::Topology topology;
  sim::StepGraph step;
  double peak_flops_per_s = 0;  // the profile's peak for the model's precision
  sim::CollectiveTimingOptions timing;
};

// The request's files read (the cluster first, so a broken cluster file is reported
// first) and its parallelism overrides applied, nothing generated yet.
struct ScenarioSpecs {
  ModelSpec model;
  ClusterSpec cluster;
};
ScenarioSpecs load_scenario_specs(const ScenarioRequest& request);

// Throws config::ConfigError naming the file and key for unreadable or inconsistent inputs.
ScenarioInputs load_scenario_inputs(const ScenarioRequest& request);

// The same from a model and cluster already in memory (the planner's configurations):
// `model` with its parallelism set (dp 0: derived) is validated and resolved for the
// cluster's GPU count; `profile_file` empty: the one the cluster names.
ScenarioInputs make_scenario_inputs(const ModelSpec& model, const ClusterSpec& cluster,
                                    const std::string& profile_file, bool fold = true);
// The same with the profile and topology of `like`, inputs made for the same cluster and
// profile file (a sampled step's second run): copied, not read and built again.
ScenarioInputs make_scenario_inputs(const ModelSpec& model, const ClusterSpec& cluster,
                                    const std::string& profile_file, const ScenarioInputs& like);
// The same with `profile` already loaded (the planner reads each cluster's profile once
// rather than once per configuration): copied, not read again.
ScenarioInputs make_scenario_inputs(const ModelSpec& model, const ClusterSpec& cluster,
                                    const sim::Profile& profile);

// Runs the loaded scenario: `options` with the inputs' collective timing and precision.
sim::ScenarioResult simulate_inputs(const ScenarioInputs& inputs, sim::ScenarioOptions options);

// How the cluster's intra-node links time collectives the profile measured at another size:
// NVLink-class hosts (NVSwitch) get the efficiency path at their per-GPU NVLink rate, and
// the flows of collectives the profile never measured run at the rate NCCL's kernels reach
// on those links where the profile has it (device.nccl_nvlink_bandwidth_Bps, cited with
// `profile_path`). Every command that times collectives takes its options from here.
sim::CollectiveTimingOptions collective_timing(const ClusterSpec& cluster,
                                               const sim::Profile& profile,
                                               const std::string& profile_path);

// Fills step.representative where the generator folded identical ranks and left it empty,
// from the "pp" communicators: rank r at position i of its pipeline stands with the
// simulated rank at position i.
void infer_representatives(sim::StepGraph& step);

}  // namespace overlapsim::workloads
