#include "workloads/reference_run.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <iterator>

#include "config/config_node.hpp"
#include "config/error.hpp"
#include "sim/overlap/registry.hpp"
#include "sim/profile/profile.hpp"
#include "workloads/microbatch_sampling.hpp"
#include "workloads/scenario_inputs.hpp"

namespace overlapsim::workloads {
namespace {

namespace fs = std::filesystem;

std::string beside(const fs::path& dir, const std::string& relative) {
  return (dir / relative).lexically_normal().string();
}

}  // namespace

ReferenceRun load_reference_run(const std::string& run_yaml) {
  const config::ConfigNode root = config::ConfigNode::load_file(run_yaml);
  if (!root.is_map()) root.fail("expected a reference-run map (workloads/reference/README.md)");
  root.check_keys(std::vector<std::string>{"format", "name", "description", "model", "cluster",
                                           "profile", "design", "images", "published",
                                           "gaps"});
  if (const auto format = root.get_int("format"); format != 1)
    root.fail_key("format", fmt::format("{} is not supported (expected 1)", format));
  const fs::path dir = fs::path(run_yaml).parent_path();
  ReferenceRun run;
  run.file = run_yaml;
  run.name = root.get_string("name");
  run.description = root.get_string("description", "");
  run.model_file = beside(dir, root.get_string("model"));
  run.cluster_file = beside(dir, root.get_string("cluster"));
  if (root.has("profile")) run.profile_file = beside(dir, root.get_string("profile"));
  run.design = root.get_enum("design", sim::design_names(), "sequential");
  run.images = *sim::background_images_named(
      root.get_enum("images",
                    std::vector<std::string>(std::begin(sim::kBackgroundImagesNames),
                                             std::end(sim::kBackgroundImagesNames)),
                    "inter-host"));
  const config::ConfigNode pub = root.child("published");
  pub.check_keys(std::vector<std::string>{"step_time", "source", "citation", "derivation"});
  run.published.step_time_s = pub.get_duration_s("step_time");
  if (!(run.published.step_time_s > 0))
    pub.fail_key("step_time", "not positive (expected a duration such as 13.75s)");
  run.published.source = pub.get_enum("source", {"paper", "mlperf", "framework", "vendor"});
  run.published.citation = pub.get_string("citation");
  run.published.derivation = pub.get_string("derivation");
  run.gaps = root.get_string("gaps", "");
  for (const auto* f : {&run.model_file, &run.cluster_file})
    if (!fs::exists(*f))
      throw config::ConfigError(
          fmt::format("{}: {}: '{}' does not exist (expected a path relative to the run file)",
                      run_yaml, f == &run.model_file ? "model" : "cluster", *f));
  return run;
}

std::vector<ReferenceRun> load_reference_runs(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw config::ConfigError(
        fmt::format("{}: not a folder (expected workloads/reference/ or another folder of "
                    "<name>/run.yaml)",
                    dir));
  std::vector<std::string> files;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.is_directory() && fs::exists(entry.path() / "run.yaml"))
      files.push_back((entry.path() / "run.yaml").string());
  std::sort(files.begin(), files.end());
  if (files.empty())
    throw config::ConfigError(
        fmt::format("{}: no <name>/run.yaml in it (expected at least one "
                    "reference run; workloads/reference/README.md)",
                    dir));
  std::vector<ReferenceRun> runs;
  for (const auto& f : files) runs.push_back(load_reference_run(f));
  return runs;
}

ReferenceOutcome predict_reference_run(const ReferenceRun& run, bool zero_wall_times,
                                       Sampling sampling) {
  ScenarioRequest request;
  request.model_file = run.model_file;
  request.cluster_file = run.cluster_file;
  const ScenarioSpecs specs = load_scenario_specs(request);
  const ClusterSpec& cluster = specs.cluster;
  sim::ScenarioOptions options;
  options.designs = {run.design};
  options.images = run.images;
  options.zero_wall_times = zero_wall_times;
  options.aggregate_images = sampling != Sampling::Whole;
  const ModelRun predicted =
      simulate_model(specs.model, cluster, options, sampling, run.profile_file);
  const sim::DesignRun& design = predicted.result.runs.front();

  ReferenceOutcome out;
  out.run = run;
  out.gpus = cluster.num_gpus();
  out.system = fmt::format("{} x {} {}", cluster.num_gpus() / cluster.gpus_per_node,
                           cluster.gpus_per_node, predicted.device_name);
  const Parallelism& p = predicted.model.parallelism;
  out.parallelism = fmt::format(
      "tp {} pp {} dp {} cp {} ep {}{}{}, {}", p.tp, p.pp, p.dp, p.cp, p.ep,
      p.virtual_stages > 1 ? fmt::format(" vp {}", p.virtual_stages) : "",
      p.sequence_parallel ? " sp" : "", sim::to_string(predicted.model.training.precision));
  out.predicted_s = design.result.step_time_s;
  out.error = (out.predicted_s - run.published.step_time_s) / run.published.step_time_s;
  out.band = design.band;
  out.sim_wall_s = design.result.sim_wall_s;
  return out;
}

}  // namespace overlapsim::workloads
