#pragma once
// Published training runs the simulator is checked against (workloads/reference/README.md):
// each folder's run.yaml names the model, cluster and profile that describe the run, the
// overlap design closest to what it used, and the step time that was published.
// `overlapsim validate-steps` loads them here and predicts each through the scenario library.
#include <string>
#include <vector>

#include "sim/exec/comm_images.hpp"
#include "sim/scenario/step_band.hpp"
#include "workloads/microbatch_sampling.hpp"

namespace overlapsim::workloads {

struct PublishedStep {
  double step_time_s = 0;
  std::string source;  // paper | mlperf | framework | vendor
  std::string citation;
  std::string derivation;  // how the step time follows from the published figure
};

struct ReferenceRun {
  std::string name;
  std::string description;
  std::string file;  // the run.yaml
  // Paths resolved against the run.yaml's folder; profile_file empty: the cluster's.
  std::string model_file, cluster_file, profile_file;
  std::string design = "sequential";
  // The folded ranks' background traffic (simulate --images): `none` where it cannot meet
  // the representatives' flows and costs most of the run's time.
  sim::BackgroundImages images = sim::BackgroundImages::InterHost;
  PublishedStep published;
  std::string gaps;  // what the run used that the simulator does not model
};

// Throws config::ConfigError naming the file and key.
ReferenceRun load_reference_run(const std::string& run_yaml);
// Every <dir>/<name>/run.yaml, by name. Throws config::ConfigError when there is none.
std::vector<ReferenceRun> load_reference_runs(const std::string& dir);

struct ReferenceOutcome {
  ReferenceRun run;
  std::string system;  // "128 x 8 GPUs, NVIDIA H100 SXM5 80GB"
  int gpus = 0;
  std::string parallelism;  // "tp 8 pp 8 dp 16 cp 1 ep 1, vp 3, bf16"
  double predicted_s = 0;
  double error = 0;  // (predicted - published) / published
  sim::StepBand band;
  double sim_wall_s = 0;
  bool in_band() const {
    return run.published.step_time_s >= band.low_s && run.published.step_time_s <= band.high_s;
  }
};

// Sampled (long steps from short runs, each send's images aggregated, as the planner does;
// workloads/microbatch_sampling.hpp) unless `sampling` is Whole: as simulate does. Both short
// runs simulated by default: the published-run comparison keeps the sampling checked
// against whole steps on every kind of pipeline, at a few seconds more.
ReferenceOutcome predict_reference_run(const ReferenceRun& run, bool zero_wall_times = false,
                                       Sampling sampling = Sampling::Runs);

}  // namespace overlapsim::workloads
