#include "workloads/microbatch_sampling.hpp"

#include <algorithm>
#include <utility>

#include "sim/scenario/extrapolate.hpp"
#include "workloads/generator.hpp"
#include "workloads/scenario_inputs.hpp"

namespace overlapsim::workloads {

namespace {

// The model with `microbatches` per step, everything else kept.
ModelSpec with_microbatches(const ModelSpec& resolved, int microbatches) {
  ModelSpec m = resolved;
  const std::int64_t per_microbatch =
      static_cast<std::int64_t>(resolved.training.micro_batch) * resolved.parallelism.dp;
  m.training.global_batch = per_microbatch * microbatches;
  return m;
}

ModelRun from_inputs(const ScenarioInputs& in, sim::ScenarioResult result) {
  ModelRun run;
  run.result = std::move(result);
  run.tokens_per_step = in.step.tokens_per_step;
  run.flops_per_step = in.step.flops_per_step;
  run.model_flops_per_step = in.step.model_flops_per_step;
  run.peak_flops_per_s = in.peak_flops_per_s;
  run.world_size = in.step.world_size;
  run.model = in.model;
  run.device_name = in.profile.device.name;
  return run;
}

}  // namespace

MicrobatchSample microbatch_sample(const ModelSpec& resolved) {
  if (resolved.kind == ModelKind::Dlrm || resolved.training.micro_batch <= 0) return {};
  return microbatch_sample(microbatch_count(resolved), resolved.parallelism.pp,
                           resolved.parallelism.virtual_stages);
}

MicrobatchSample microbatch_sample(std::int64_t microbatches, int pipeline_stages,
                                   int virtual_stages) {
  MicrobatchSample s;
  s.microbatches = microbatches;
  const int pp = std::max(1, pipeline_stages);
  // Plain 1F1B: every stage is in its steady state from pp microbatches on. Interleaved: the
  // first stage's warm-up alone is 2(pp - 1) + (v - 1) pp model chunks, so only from 2 pp on.
  // Without a pipeline: the first microbatch gathers the parameters and the last reduces the
  // gradients, so from 2 on.
  const bool plain = pp > 1 && virtual_stages <= 1;
  const std::int64_t first = plain ? pp : 2LL * pp;
  const std::int64_t second = first + pp;
  if (s.microbatches <= first + second) return s;
  s.first = static_cast<int>(first);
  s.second = static_cast<int>(second);
  // A plain 1F1B pipeline is left out: there a rank's period between the marks can be its
  // own stage's pace while the step's drain still grows at the pipeline's slower one (a
  // bottleneck last stage taking up the slack of the fill), so the longer run less one
  // period is not the shorter run.
  s.by_periods = pp == 1 || virtual_stages > 1;
  return s;
}

namespace {

// The first run's inputs: from the profile file, or from the profile already loaded.
ScenarioInputs first_inputs(const ModelSpec& model, const ClusterSpec& cluster,
                            const std::string& profile_file, const sim::Profile* loaded) {
  return loaded ? make_scenario_inputs(model, cluster, *loaded)
                : make_scenario_inputs(model, cluster, profile_file);
}

ModelRun simulate_model_with(const ModelSpec& model, const ClusterSpec& cluster,
                             const sim::ScenarioOptions& options, Sampling sampling,
                             const std::string& profile_file, const sim::Profile* loaded) {
  const ModelSpec resolved = resolve_for_world(model, cluster.num_gpus(), cluster.gpus_per_node);
  MicrobatchSample s = microbatch_sample(resolved);
  if (sampling == Sampling::Whole || options.trace || options.gemm_clock != sim::GemmClock::Steady)
    s.first = s.second = 0;
  if (sampling != Sampling::Periods) s.by_periods = false;
  if (!s.sampled()) {
    const ScenarioInputs in = first_inputs(model, cluster, profile_file, loaded);
    ModelRun run = from_inputs(in, simulate_inputs(in, options));
    run.sample = s;
    return run;
  }
  const ScenarioInputs a =
      first_inputs(with_microbatches(resolved, s.first), cluster, profile_file, loaded);
  const ScenarioInputs b =
      make_scenario_inputs(with_microbatches(resolved, s.second), cluster, profile_file, a);
  // The longer run marked where the shorter run's last forward chunk begins and where its
  // own does: the shorter run is the longer one less that period where the pipeline is
  // steady (ScenarioResult::before_period); else it is simulated.
  sim::ScenarioOptions marked = options;
  if (s.by_periods) {
    const int chunks = std::max(1, resolved.parallelism.virtual_stages);
    marked.period_chunks[0] = s.first * chunks - 1;
    marked.period_chunks[1] = s.second * chunks - 1;
  }
  sim::ScenarioResult rb = simulate_inputs(b, marked);
  sim::ScenarioResult ra;
  if (s.by_periods && rb.before_period.size() == rb.runs.size()) {
    ra.runs = std::move(rb.before_period);  // no collectives of its own: counts are b's
  } else {
    s.by_periods = false;
    ra = simulate_inputs(a, options);
  }
  rb.before_period.clear();
  const double t = static_cast<double>(s.microbatches - s.second) / (s.second - s.first);
  ModelRun run = from_inputs(b, sim::extrapolate_result(ra, rb, t));
  run.sample = s;
  run.model = resolved;
  // Tokens are exactly microbatches x tokens per microbatch; FLOPs grow by the same ops per
  // microbatch, with the optimizer's once per step in the intercept.
  run.tokens_per_step = b.step.tokens_per_step / s.second * static_cast<double>(s.microbatches);
  run.flops_per_step = b.step.flops_per_step + t * (b.step.flops_per_step - a.step.flops_per_step);
  run.model_flops_per_step =
      b.step.model_flops_per_step + t * (b.step.model_flops_per_step - a.step.model_flops_per_step);
  return run;
}

}  // namespace

ModelRun simulate_model(const ModelSpec& model, const ClusterSpec& cluster,
                        const sim::ScenarioOptions& options, Sampling sampling,
                        const std::string& profile_file) {
  return simulate_model_with(model, cluster, options, sampling, profile_file, nullptr);
}

ModelRun simulate_model(const ModelSpec& model, const ClusterSpec& cluster,
                        const sim::ScenarioOptions& options, Sampling sampling,
                        const sim::Profile& profile) {
  return simulate_model_with(model, cluster, options, sampling, "", &profile);
}

}  // namespace overlapsim::workloads
