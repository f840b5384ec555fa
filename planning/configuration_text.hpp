#pragma once
// A planned configuration as one line of text, "n16 tp8 pp8 v1 cp1 ep1 dp2 mb1 sp0 full":
// the plan's key without its cluster index (PlanConfig::key() is "c<i> " + this). The plan's
// reports list it, and `overlapsim simulate --configuration` reads it back, so that any
// point of a plan can be simulated alone (with a trace, unfolded, or whole instead of
// sampled) on the very model the planner timed (configure below).
#include <string>
#include <string_view>

#include "planning/plan_result.hpp"
#include "workloads/cluster.hpp"
#include "workloads/model.hpp"

namespace overlapsim::planning {

std::string configuration_text(const PlanConfig& config);

// Reads the text back, with or without the leading "c<i>" of results.json's keys: the
// result's cluster is that index, or -1 without one (`simulate` ignores it: -c names the
// cluster; `plan --include` takes it as the plan's i-th cluster, -1 as every cluster), and
// its gpus 0 (configure sets them). Throws config::ConfigError naming `flag`, the bad token
// and the expected form.
PlanConfig parse_configuration_text(std::string_view text, std::string_view flag);

// The model and cluster that `config` stands for, as the planner builds them
// (configured_cluster, configured_model), with config.gpus set from the cluster. Throws
// config::ConfigError where the model's rules refuse the layout or its dp is not the one the
// GPUs leave.
struct ConfiguredSpecs {
  workloads::ModelSpec model;  // resolved for the cluster's GPUs
  workloads::ClusterSpec cluster;
};
ConfiguredSpecs configure(const workloads::ModelSpec& model, const workloads::ClusterSpec& cluster,
                          PlanConfig& config, std::string_view flag);

}  // namespace overlapsim::planning
