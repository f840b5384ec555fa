// Where the experts' weight gradients run relative to the dispatch's backward exchange
// (moe.delay_wgrad). By default Transformer Engine's grouped linear computes them with the
// data gradients, so the exchange waits for them; delayed (Megatron-Core
// --delay-wgrad-compute), they are issued after the exchange and run beside it.
#include <gtest/gtest.h>

#include <string>

#include "step_graph_util.hpp"
#include "tests/workloads/workloads_test_util.hpp"
#include "workloads/cluster.hpp"
#include "workloads/generator.hpp"

namespace overlapsim::workloads {
namespace expert_wgrad_order_test {

using testing::edit;
using testing::for_each_op;

// kTinyMoe without a pipeline, the all-to-all dispatcher: dp 8 (ep 4) on one host.
std::string tiny_moe(bool delay) {
  std::string text = edit(testing::kTinyMoe, {{"pp: 2", "pp: 1"},
                                              {"dp: 4", "dp: 8"},
                                              {"top_k: 2", "top_k: 2\n  dispatcher: alltoall"}});
  if (delay) text = edit(text, {{"dispatcher: alltoall", "dispatcher: alltoall\n  delay_wgrad: true"}});
  return text;
}

struct Order {
  sim::OpVertex wgrad = 0, exchange = 0;
  bool exchange_waits_for_wgrad = false;
};

// Layer 0, microbatch 0 of rank 0: the fc1 weight gradient and the dispatch's backward.
Order layer0_order(bool delay) {
  const sim::StepGraph step =
      generate_step(load_model_string(tiny_moe(delay), "tiny.yaml"), 8);
  const sim::OpGraph& g = step.ranks[0].graph;
  Order o;
  for_each_op(step.ranks[0], [&](sim::OpVertex v, const sim::OpNode& op) {
    if (op.name == "L0.mb0.bwd.experts.fc1.wgrad") o.wgrad = v;
    if (op.name == "L0.mb0.bwd.ep_dispatch.bwd") o.exchange = v;
  });
  o.exchange_waits_for_wgrad = boost::edge(o.wgrad, o.exchange, g).second;
  return o;
}

TEST(ExpertWgradOrder, ByDefaultTheDispatchBackwardWaitsForTheWeightGradients) {
  const Order o = layer0_order(false);
  EXPECT_LT(o.wgrad, o.exchange);  // program order
  EXPECT_TRUE(o.exchange_waits_for_wgrad);
}

TEST(ExpertWgradOrder, DelayedTheyAreIssuedAfterTheExchangeAndRunBesideIt) {
  const Order o = layer0_order(true);
  EXPECT_GT(o.wgrad, o.exchange);
  EXPECT_FALSE(o.exchange_waits_for_wgrad);
}

// Both orders simulated on one H200 host under `designs`.
struct BothOrders {
  sim::ScenarioResult plain, delayed;
};

BothOrders simulate_both(const std::vector<std::string>& designs) {
  ClusterSpec cluster = load_cluster(std::string(OVERLAPSIM_SOURCE_DIR) +
                                     "/workloads/clusters/h200-128node-ndr.yaml");
  cluster.nodes = 1;
  sim::ScenarioOptions o;
  o.zero_wall_times = true;
  o.designs = designs;
  const auto run = [&](bool delay) {
    return simulate_model(load_model_string(tiny_moe(delay), "tiny.yaml"), cluster, o,
                          Sampling::Whole)
        .result;
  };
  return {run(false), run(true)};
}

TEST(ExpertWgradOrder, DelayingHidesPartOfTheExchangeOnlyAsItReorders) {
  const BothOrders r = simulate_both({"sequential"});
  const sim::StepResult& plain = r.plain.runs[0].result;
  const sim::StepResult& delayed = r.delayed.runs[0].result;
  // The same work in another order: the exchange moves data beside the weight gradients.
  const sim::StepGraph a = generate_step(load_model_string(tiny_moe(false), "tiny.yaml"), 8);
  const sim::StepGraph b = generate_step(load_model_string(tiny_moe(true), "tiny.yaml"), 8);
  EXPECT_EQ(a.flops_per_step, b.flops_per_step);
  ASSERT_GT(plain.exposed_comm_s, 0);
  EXPECT_LT(delayed.exposed_comm_s, plain.exposed_comm_s);
  EXPECT_LT(delayed.step_time_s, plain.step_time_s);
}

TEST(ExpertWgradOrder, AnOverlapDesignsPairStartsTheExchangeFromTheDataGradient) {
  const BothOrders r = simulate_both({"sequential", "decomposed"});
  // decomposed overlaps the fc1 data gradient with the exchange in both: the same step.
  ASSERT_EQ(r.plain.runs[1].result.design, "decomposed");
  EXPECT_GT(r.plain.runs[1].pairs.overlapped, 0);
  EXPECT_DOUBLE_EQ(r.plain.runs[1].result.step_time_s, r.delayed.runs[1].result.step_time_s);
  EXPECT_NE(r.plain.runs[0].result.step_time_s, r.delayed.runs[0].result.step_time_s);
}

TEST(ExpertWgradOrder, RejectsANonBoolean) {
  const std::string msg = testing::error_of([] {
    load_model_string(edit(tiny_moe(false), {{"dispatcher: alltoall",
                                               "dispatcher: alltoall\n  delay_wgrad: later"}}),
                      "tiny.yaml");
  });
  EXPECT_NE(msg.find("moe.delay_wgrad"), std::string::npos) << msg;
}

}  // namespace expert_wgrad_order_test
}  // namespace overlapsim::workloads
