#include "workloads/scenario_inputs.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "config/error.hpp"
#include "sim/profile/profile_load.hpp"
#include "workloads/generator.hpp"
#include "workloads/rank_builder.hpp"

namespace overlapsim::workloads {

sim::CollectiveTimingOptions collective_timing(const ClusterSpec& c, const sim::Profile& profile,
                                               const std::string& profile_path) {
  sim::CollectiveTimingOptions t;
  if (c.intra_node.kind == IntraNodeKind::NvSwitch) {
    t.nvlink_Bps = c.intra_node.gpu_bandwidth_Bps;
    t.nvlink_citation = fmt::format("{} intra_node.gpu_bandwidth_Bps", c.file);
    // A send/recv inside the host runs at the rate NCCL's grouped point-to-point reaches
    // there, its all-to-all curve's (docs/redistribution.md, "Timing plans on a cluster").
    t.sendrecv_from_alltoall = true;
  }
  if (profile.device.nccl_nvlink_bandwidth_Bps && t.nvlink_Bps > 0) {
    t.nccl_nvlink_Bps = profile.device.nccl_nvlink_bandwidth_Bps->value;
    t.nccl_nvlink_citation =
        fmt::format("{} device.nccl_nvlink_bandwidth_Bps, {}", profile_path,
                    sim::to_string(profile.device.nccl_nvlink_bandwidth_Bps->source.kind));
  }
  return t;
}

void infer_representatives(sim::StepGraph& step) {
  if (!step.representative.empty()) return;
  bool folded = false;
  for (const auto& p : step.ranks) folded = folded || p.multiplicity > 1;
  if (!folded) return;
  std::vector<int> simulated;
  for (const auto& p : step.ranks) simulated.push_back(p.rank);
  std::vector<int> rep(static_cast<std::size_t>(step.world_size), -1);
  const sim::CommGroup* primary = nullptr;
  for (const auto& g : step.groups)
    if (g.family == "pp" &&
        std::find(g.ranks.begin(), g.ranks.end(), simulated.front()) != g.ranks.end())
      primary = &g;
  if (primary) {
    for (const auto& g : step.groups)
      if (g.family == "pp" && g.ranks.size() == primary->ranks.size())
        for (std::size_t i = 0; i < g.ranks.size(); ++i) rep[g.ranks[i]] = primary->ranks[i];
  } else if (simulated.size() == 1) {
    std::fill(rep.begin(), rep.end(), simulated.front());
  }
  for (int r : simulated)
    if (rep[r] != r) return;  // not the expected shape: no background images
  for (int v : rep)
    if (v < 0) return;
  step.representative = std::move(rep);
}

ScenarioSpecs load_scenario_specs(const ScenarioRequest& req) {
  // The cluster loads before the model, so a broken cluster file is reported first.
  ScenarioSpecs s{ModelSpec{}, load_cluster(req.cluster_file)};
  s.model = load_model(req.model_file);
  if (req.tp) s.model.parallelism.tp = req.tp;
  if (req.pp) s.model.parallelism.pp = req.pp;
  if (req.dp) s.model.parallelism.dp = req.dp;
  if (req.cp) s.model.parallelism.cp = req.cp;
  if (req.ep) s.model.parallelism.ep = req.ep;
  return s;
}

ScenarioInputs load_scenario_inputs(const ScenarioRequest& req) {
  const ScenarioSpecs s = load_scenario_specs(req);
  return make_scenario_inputs(s.model, s.cluster, req.profile_file, req.fold);
}

namespace {

// `like` (a run of the same cluster) or `loaded` gives the profile when not null.
ScenarioInputs make_inputs(const ModelSpec& spec, const ClusterSpec& cluster,
                           const std::string& profile_file, bool fold, const ScenarioInputs* like,
                           const sim::Profile* loaded = nullptr) {
  ScenarioInputs in;
  in.cluster = cluster;
  validate_model(spec);
  const int world = in.cluster.num_gpus();
  in.model = resolve_for_world(spec, world, in.cluster.gpus_per_node);

  std::string profile_path = loaded ? loaded->path : profile_file;
  if (profile_path.empty() && in.cluster.gpu) profile_path = in.cluster.gpu->profile_path;
  if (profile_path.empty())
    throw config::ConfigError(
        fmt::format("{}: gpu.profile: missing (expected a profile path such as "
                    "calibration/profiles/datasheet-h200.yaml, or pass --profile)",
                    in.cluster.file));
  in.profile = like ? like->profile : loaded ? *loaded : sim::load_profile(profile_path);
  const sim::Precision precision = in.model.training.precision;
  const auto peak = in.profile.compute.peak_flops_per_s.find(precision);
  if (peak == in.profile.compute.peak_flops_per_s.end())
    throw config::ConfigError(fmt::format(
        "{}: compute.peak_flops_per_s: no {} rate for the model's precision (expected a "
        "profile of a GPU with {} support)",
        profile_path, sim::to_string(precision), sim::to_string(precision)));
  in.peak_flops_per_s = peak->second.value;

  in.topology = like ? like->topology : build_topology(in.cluster);
  GenerateOptions gen;
  gen.fold = fold;
  gen.gpus_per_node = in.cluster.gpus_per_node;
  try {
    in.step = generate_step(spec, world, gen);
  } catch (const StepGraphTooLarge& e) {
    throw config::ConfigError(fmt::format("{}: {}", spec.source_file, e.what()));
  }
  infer_representatives(in.step);
  in.timing = collective_timing(in.cluster, in.profile, profile_path);
  return in;
}

}  // namespace

ScenarioInputs make_scenario_inputs(const ModelSpec& spec, const ClusterSpec& cluster,
                                    const std::string& profile_file, bool fold) {
  return make_inputs(spec, cluster, profile_file, fold, nullptr);
}

ScenarioInputs make_scenario_inputs(const ModelSpec& spec, const ClusterSpec& cluster,
                                    const std::string& profile_file, const ScenarioInputs& like) {
  return make_inputs(spec, cluster, profile_file, true, &like);
}

ScenarioInputs make_scenario_inputs(const ModelSpec& spec, const ClusterSpec& cluster,
                                    const sim::Profile& profile) {
  return make_inputs(spec, cluster, "", true, nullptr, &profile);
}

sim::ScenarioResult simulate_inputs(const ScenarioInputs& in, sim::ScenarioOptions options) {
  options.timing = in.timing;
  options.precision = in.model.training.precision;
  if (options.trace_title.empty())
    options.trace_title = fmt::format("{} on {}", in.step.workload, in.cluster.name);
  return sim::run_scenario(sim::Scenario{in.step, in.topology, in.profile, std::move(options)});
}

}  // namespace overlapsim::workloads
