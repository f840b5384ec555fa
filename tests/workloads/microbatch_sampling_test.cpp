// The planner's sampled steps against the same steps simulated whole: a pipeline in its
// steady state adds the same work per microbatch, so two short runs extrapolated must land
// on the long run, for every design, across hosts (pipeline sends and their images on the
// network) and with MoE all-to-alls. The sampled runs also aggregate each send's images,
// as the planner does; images of one send are symmetric, so that must change nothing.
#include "workloads/microbatch_sampling.hpp"

#include <gtest/gtest.h>

#include <string>

#include "tests/workloads/workloads_test_util.hpp"
#include "workloads/cluster.hpp"
#include "workloads/model.hpp"

namespace overlapsim::workloads {
namespace {

using testing::edit;
using testing::rel;

// 8 layers, tp 2 x pp 2 (interleaved, 2 chunks a stage) x dp 4: 16 GPUs on 2 hosts.
constexpr const char* kSampledDense = R"(name: tiny-dense
kind: transformer
transformer:
  layers: 8
  hidden: 512
  ffn_hidden: 2048
  vocab: 1000
  attention:
    heads: 8
training:
  seq_len: 256
  global_batch: 48
  micro_batch: 1
  grad_sync: distributed_optimizer
  overlap_grad_reduce: true
parallelism:
  dp: 4
  tp: 2
  sequence_parallel: true
  pp: 2
  virtual_stages: 2
)";

ClusterSpec sampling_cluster() {
  ClusterSpec c = load_cluster(std::string(OVERLAPSIM_SOURCE_DIR) +
                               "/workloads/clusters/h200-128node-ndr.yaml");
  c.nodes = 2;
  return c;
}

ModelSpec sampling_model(const std::string& text) { return load_model_string(text, "tiny.yaml"); }

void expect_sampled_equals_whole(const ModelRun& whole, const ModelRun& sampled, bool by_periods);

// `by_periods`: whether the first run must come from the second's period marks.
void expect_sampled_equals_whole(const ModelSpec& m, const ClusterSpec& cluster, bool by_periods) {
  sim::ScenarioOptions o;
  o.designs = {"sequential", "decomposed", "tilewise", "fused", "shaped"};
  o.zero_wall_times = true;
  const ModelRun whole = simulate_model(m, cluster, o, Sampling::Whole);
  o.aggregate_images = true;  // the planner's way: each send's images as one group
  for (const Sampling sampling : {Sampling::Runs, Sampling::Periods}) {
    SCOPED_TRACE(sampling == Sampling::Runs ? "runs" : "periods");
    expect_sampled_equals_whole(whole, simulate_model(m, cluster, o, sampling),
                                sampling == Sampling::Periods && by_periods);
  }
}

void expect_sampled_equals_whole(const ModelRun& whole, const ModelRun& sampled, bool by_periods) {
  ASSERT_FALSE(whole.sample.sampled());
  ASSERT_TRUE(sampled.sample.sampled());
  EXPECT_EQ(sampled.sample.by_periods, by_periods);
  EXPECT_LT(sampled.result.runs[0].result.events, whole.result.runs[0].result.events);
  EXPECT_GT(whole.result.runs[0].result.background_collectives, 0u) << "no images to aggregate";
  EXPECT_DOUBLE_EQ(sampled.tokens_per_step, whole.tokens_per_step);
  EXPECT_LT(rel(sampled.model_flops_per_step, whole.model_flops_per_step), 1e-12);
  EXPECT_LT(rel(sampled.flops_per_step, whole.flops_per_step), 1e-12);
  ASSERT_EQ(sampled.result.runs.size(), whole.result.runs.size());
  for (std::size_t i = 0; i < whole.result.runs.size(); ++i) {
    const sim::DesignRun& w = whole.result.runs[i];
    const sim::DesignRun& s = sampled.result.runs[i];
    SCOPED_TRACE(w.result.design);
    // Rounding of the clock over a long step, not a model difference: 1e-9 of the step.
    const double tol = 1e-9 * w.result.step_time_s;
    EXPECT_NEAR(s.result.step_time_s, w.result.step_time_s, tol);
    EXPECT_NEAR(s.result.compute_s, w.result.compute_s, tol);
    EXPECT_NEAR(s.result.exposed_comm_s, w.result.exposed_comm_s, tol);
    EXPECT_NEAR(s.result.bubble_s, w.result.bubble_s, tol);
    EXPECT_NEAR(s.band.low_s, w.band.low_s, tol);
    EXPECT_NEAR(s.band.high_s, w.band.high_s, tol);
    EXPECT_EQ(s.band.dominant, w.band.dominant);
  }
}

TEST(MicrobatchSample, PipelineDepthsPastTheWarmUpOnlyWhereThatIsShorter) {
  ModelSpec m = resolve_for_world(sampling_model(kSampledDense), 16, 8);  // 12 microbatches, pp 2
  MicrobatchSample s = microbatch_sample(m);
  EXPECT_EQ(s.microbatches, 12);
  EXPECT_EQ(s.first, 4);
  EXPECT_EQ(s.second, 6);
  EXPECT_TRUE(s.by_periods) << "interleaved: the first run from the second's period marks";
  m = resolve_for_world(
      sampling_model(edit(kSampledDense, {{"global_batch: 48", "global_batch: 40"}})), 16, 8);
  EXPECT_FALSE(microbatch_sample(m).sampled()) << "10 = 5 pp microbatches: run whole";
  m = resolve_for_world(
      sampling_model(edit(kSampledDense, {{"virtual_stages: 2", "virtual_stages: 1"}})), 16, 8);
  s = microbatch_sample(m);  // plain 1F1B: steady from pp microbatches on
  EXPECT_EQ(s.first, 2);
  EXPECT_EQ(s.second, 4);
  EXPECT_FALSE(s.by_periods) << "plain 1F1B: both runs simulated";
  m = resolve_for_world(
      sampling_model(edit(kSampledDense, {{"pp: 2", "pp: 1"},
                                          {"virtual_stages: 2", "virtual_stages: 1"},
                                          {"dp: 4", "dp: 8"},
                                          {"global_batch: 48", "global_batch: 64"}})),
      16, 8);
  s = microbatch_sample(m);  // no pipeline: 8 microbatches of gradient accumulation
  EXPECT_EQ(s.first, 2);
  EXPECT_EQ(s.second, 3);
  EXPECT_TRUE(s.by_periods);
}

TEST(MicrobatchSampling, InterleavedPipelineOverTwoHostsEqualsTheWholeStep) {
  expect_sampled_equals_whole(sampling_model(kSampledDense), sampling_cluster(), true);
}

TEST(MicrobatchSampling, PlainPipelineOverTwoHostsEqualsTheWholeStep) {
  expect_sampled_equals_whole(
      sampling_model(edit(kSampledDense, {{"virtual_stages: 2", "virtual_stages: 1"}})),
      sampling_cluster(), false);
}

TEST(MicrobatchSampling, GradientAccumulationWithoutPipelineEqualsTheWholeStep) {
  expect_sampled_equals_whole(
      sampling_model(edit(kSampledDense, {{"pp: 2", "pp: 1"},
                                          {"virtual_stages: 2", "virtual_stages: 1"},
                                          {"dp: 4", "dp: 8"},
                                          {"global_batch: 48", "global_batch: 64"}})),
      sampling_cluster(), true);
}

TEST(MicrobatchSampling, MoePipelineEqualsTheWholeStep) {
  // dp 8 (ep 4) x pp 2 on 16 GPUs, 16 microbatches.
  expect_sampled_equals_whole(
      sampling_model(
          edit(testing::kTinyMoe, {{"global_batch: 16", "global_batch: 128"}, {"dp: 4", "dp: 8"}})),
      sampling_cluster(), false);
}

}  // namespace
}  // namespace overlapsim::workloads
