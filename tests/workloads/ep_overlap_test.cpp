// Megatron-Core's EP communication overlap (moe.ep_overlap): each microbatch's forward
// beside the previous one's backward, layer by layer, in TransformerLayerSchedulePlan.run's
// order. The same ops as the plain schedule, reordered; a step no slower where the token
// exchange is exposed; the planner's two sampled runs still land on the whole step.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "step_graph_util.hpp"
#include "tests/workloads/workloads_test_util.hpp"
#include "workloads/cluster.hpp"
#include "workloads/generator.hpp"
#include "workloads/memory_model.hpp"
#include "workloads/microbatch_sampling.hpp"

namespace overlapsim::workloads {
namespace ep_overlap_test {

using testing::edit;
using testing::for_each_op;
using testing::rel;

// kTinyMoe without a pipeline: dp 8 (ep 4) on 8 GPUs of one host, 4 microbatches a rank.
std::string tiny_moe(bool overlap) {
  std::string text = edit(testing::kTinyMoe, {{"pp: 2", "pp: 1"},
                                              {"dp: 4", "dp: 8"},
                                              {"global_batch: 16", "global_batch: 32"},
                                              {"top_k: 2", "top_k: 2\n  dispatcher: alltoall"}});
  if (overlap)
    text = edit(text, {{"dispatcher: alltoall", "dispatcher: alltoall\n  ep_overlap: true"}});
  return text;
}

ModelSpec model(bool overlap) { return load_model_string(tiny_moe(overlap), "tiny.yaml"); }

// The token exchanges of rank 0 in program order (all on the expert stream), as
// "L<layer>.mb<microbatch>.<phase>.<what>".
std::vector<std::string> exchanges(const sim::StepGraph& step) {
  std::vector<std::string> names;
  for_each_op(step.ranks[0], [&](sim::OpVertex, const sim::OpNode& op) {
    if (op.kind == sim::OpKind::Collective && op.stream == sim::StreamKind::ExpertComm)
      names.push_back(op.name);
  });
  return names;
}

// kTinyMoe in an interleaved pipeline: pp 2 x 2 chunks, dp 4 (ep 4), 8 microbatches a rank.
std::string tiny_moe_interleaved(bool overlap) {
  return edit(tiny_moe(overlap), {{"pp: 1", "pp: 2\n  virtual_stages: 2"}, {"dp: 8", "dp: 4"}});
}

TEST(EpOverlap, ExchangesFollowMegatronsCombinedOrder) {
  const sim::StepGraph step = generate_step(model(true), 8);
  const std::vector<std::string> x = exchanges(step);
  ASSERT_EQ(x.size(), 4u * 4 * 4);  // 4 microbatches x 4 layers x (2 forward + 2 backward)
  // The first forward alone.
  EXPECT_EQ(x[0], "L0.mb0.fwd.ep_dispatch");
  EXPECT_EQ(x[1], "L0.mb0.fwd.ep_combine");
  EXPECT_EQ(x[7], "L3.mb0.fwd.ep_combine");
  // Then forward layer i of microbatch 1 with backward layer 3 - i of microbatch 0:
  // combine backward | dispatch -> dispatch backward | combine.
  const std::vector<std::string> pair0 = {"L3.mb0.bwd.ep_combine.bwd", "L0.mb1.fwd.ep_dispatch",
                                          "L3.mb0.bwd.ep_dispatch.bwd", "L0.mb1.fwd.ep_combine"};
  for (std::size_t j = 0; j < pair0.size(); ++j) EXPECT_EQ(x[8 + j], pair0[j]);
  EXPECT_EQ(x[12], "L2.mb0.bwd.ep_combine.bwd");
  EXPECT_EQ(x[13], "L1.mb1.fwd.ep_dispatch");
  // The last backward alone.
  EXPECT_EQ(x[x.size() - 8], "L3.mb3.bwd.ep_combine.bwd");
  EXPECT_EQ(x.back(), "L0.mb3.bwd.ep_dispatch.bwd");
}

TEST(EpOverlap, SameOpsAsThePlainScheduleInAnotherOrder) {
  const sim::StepGraph plain = generate_step(model(false), 8);
  const sim::StepGraph overlap = generate_step(model(true), 8);
  std::map<std::string, int> a, b;
  for_each_op(plain.ranks[0], [&](sim::OpVertex, const sim::OpNode& op) { ++a[op.name]; });
  for_each_op(overlap.ranks[0], [&](sim::OpVertex, const sim::OpNode& op) { ++b[op.name]; });
  EXPECT_EQ(a, b);
  EXPECT_EQ(plain.flops_per_step, overlap.flops_per_step);
  EXPECT_NE(exchanges(plain), exchanges(overlap));
}

TEST(EpOverlap, HidesExchangeBehindTheOtherMicrobatch) {
  ClusterSpec cluster = load_cluster(std::string(OVERLAPSIM_SOURCE_DIR) +
                                     "/workloads/clusters/h200-128node-ndr.yaml");
  cluster.nodes = 1;
  sim::ScenarioOptions o;
  o.zero_wall_times = true;
  const sim::StepResult plain =
      simulate_model(model(false), cluster, o, Sampling::Whole).result.runs[0].result;
  const sim::StepResult overlap =
      simulate_model(model(true), cluster, o, Sampling::Whole).result.runs[0].result;
  ASSERT_GT(plain.exposed_comm_s, 0);
  EXPECT_LT(overlap.exposed_comm_s, plain.exposed_comm_s);
  EXPECT_LT(overlap.step_time_s, plain.step_time_s);
  // Hidden, not removed: the step is at least its compute.
  EXPECT_GE(overlap.step_time_s, overlap.compute_s);
}

// The planner's two sampled runs, extrapolated, against the whole step on one host.
void expect_sampled_equals_whole(const std::string& yaml) {
  ClusterSpec cluster = load_cluster(std::string(OVERLAPSIM_SOURCE_DIR) +
                                     "/workloads/clusters/h200-128node-ndr.yaml");
  cluster.nodes = 1;
  const ModelSpec m = load_model_string(yaml, "tiny.yaml");
  sim::ScenarioOptions o;
  o.zero_wall_times = true;
  const ModelRun whole = simulate_model(m, cluster, o, Sampling::Whole);
  const ModelRun sampled = simulate_model(m, cluster, o, Sampling::Periods);
  ASSERT_TRUE(sampled.sample.sampled());
  const double step = whole.result.runs[0].result.step_time_s;
  EXPECT_NEAR(sampled.result.runs[0].result.step_time_s, step, 1e-9 * step);
}

TEST(EpOverlap, SampledRunsEqualTheWholeStep) {
  expect_sampled_equals_whole(edit(tiny_moe(true), {{"global_batch: 32", "global_batch: 64"}}));
}

TEST(EpOverlap, HoldsOneLayerMoreThanAMicrobatch) {
  // 4 layers: after pair i the forward holds i + 1 layers and the backward 4 - i.
  EXPECT_DOUBLE_EQ(in_flight_microbatches(resolve_for_world(model(true), 8, 8), 0), 1.25);
  EXPECT_DOUBLE_EQ(in_flight_microbatches(resolve_for_world(model(false), 8, 8), 0), 1.0);
}

TEST(EpOverlap, InterleavedPipelineHoldsOneMoreForwardAndALayer) {
  // Stage 0 of pp 2 x 2 chunks of one layer, 8 microbatches: Megatron's warm-up of 4 chunk
  // passes, plus the one live at the first backward: 5 / 2. With the overlap: 5 in the
  // warm-up, plus the merged step's layer: 6 / 2.
  const auto at = [](bool overlap) {
    return in_flight_microbatches(
        resolve_for_world(load_model_string(tiny_moe_interleaved(overlap), "tiny.yaml"), 8, 8), 0);
  };
  EXPECT_DOUBLE_EQ(at(false), 2.5);
  EXPECT_DOUBLE_EQ(at(true), 3.0);
}

TEST(EpOverlap, InterleavedPipelineMergesEachSteadyForwardWithTheNextBackward) {
  const sim::StepGraph plain =
      generate_step(load_model_string(tiny_moe_interleaved(false), "tiny.yaml"), 8);
  const sim::StepGraph overlap =
      generate_step(load_model_string(tiny_moe_interleaved(true), "tiny.yaml"), 8);
  ASSERT_EQ(overlap.ranks.size(), 2u);
  for (std::size_t r = 0; r < overlap.ranks.size(); ++r) {
    std::map<std::string, int> a, b;
    for_each_op(plain.ranks[r], [&](sim::OpVertex, const sim::OpNode& op) { ++a[op.name]; });
    for_each_op(overlap.ranks[r], [&](sim::OpVertex, const sim::OpNode& op) { ++b[op.name]; });
    EXPECT_EQ(a, b) << "rank " << r;
  }
  // Stage 0 (layers 0 and 2, one a chunk): Megatron's warm-up of (2 - 0 - 1)·2 + (2 - 1)·2 = 4
  // chunk passes, one more with the overlap: forwards of microbatches 0, 1 (chunk 0), 0, 1
  // (chunk 1) and 2 (chunk 0). Then chunk 0's forward of microbatch 3 (layer 0) beside
  // chunk 1's backward of microbatch 0 (layer 2).
  std::vector<std::string> x = exchanges(overlap);
  ASSERT_GE(x.size(), 14u);
  EXPECT_EQ(x[0], "L0.mb0.fwd.ep_dispatch");
  EXPECT_EQ(x[9], "L0.mb2.fwd.ep_combine");
  const std::vector<std::string> pair = {"L2.mb0.bwd.ep_combine.bwd", "L0.mb3.fwd.ep_dispatch",
                                         "L2.mb0.bwd.ep_dispatch.bwd", "L0.mb3.fwd.ep_combine"};
  for (std::size_t j = 0; j < pair.size(); ++j) EXPECT_EQ(x[10 + j], pair[j]);
}

TEST(EpOverlap, InterleavedSampledRunsEqualTheWholeStep) {
  expect_sampled_equals_whole(
      edit(tiny_moe_interleaved(true), {{"global_batch: 32", "global_batch: 48"}}));
}

TEST(EpOverlap, RejectsWhatMegatronRejects) {
  const auto fails_on = [](const std::string& text, const std::string& key) {
    try {
      resolve_for_world(load_model_string(text, "tiny.yaml"), 8, 8);
    } catch (const config::ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
      return;
    }
    ADD_FAILURE() << "no error naming " << key;
  };
  // A pipeline without virtual stages, no expert parallelism, full recomputation.
  fails_on(edit(tiny_moe(true), {{"pp: 1", "pp: 2"}, {"dp: 8", "dp: 4"}}), "moe.ep_overlap");
  fails_on(edit(tiny_moe(true), {{"ep: 4", "ep: 1"}}), "moe.ep_overlap");
  fails_on(edit(tiny_moe(true), {{"global_batch: 32", "global_batch: 32\n  recompute: full"}}),
           "moe.ep_overlap");
}

}  // namespace ep_overlap_test
}  // namespace overlapsim::workloads
