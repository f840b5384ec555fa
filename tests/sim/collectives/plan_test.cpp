// run_plan drives phases in order: start delay, each repetition's group, the delay after
// each repetition; canonical_transfers and merge_concurrent keep plans deterministic.
#include "sim/collectives/plan.hpp"

#include <gtest/gtest.h>

#include "tests/sim/collectives/analytic_network.hpp"

namespace overlapsim::sim::detail {
namespace {

using testing::AnalyticNetwork;

TEST(Plan, PhasesRepetitionsAndDelaysAddUp) {
  Simulator sim;
  AnalyticNetwork net(sim, 4, 1.0, 100.0);  // a group takes 1 s + max(bytes) / 100
  Plan plan;
  plan.start_delay_s = 0.5;
  Phase a;
  a.transfers = {{0, 1, 100}, {1, 2, 300}};  // 4 s per group
  a.repeat = 3;
  a.delay_after_s = 0.25;
  Phase b;
  b.transfers = {{2, 3, 200}};  // 3 s
  plan.phases = {a, b};
  double done = -1;
  run_plan(net, plan, [&] { done = sim.now(); });
  EXPECT_EQ(done, -1);  // nothing runs inside run_plan
  sim.run();
  EXPECT_DOUBLE_EQ(done, 0.5 + 3 * (4 + 0.25) + 3);
  EXPECT_EQ(net.groups().size(), 4u);
}

TEST(Plan, EmptyPlanCompletesAfterStartDelay) {
  Simulator sim;
  AnalyticNetwork net(sim, 2, 1.0, 1.0);
  Plan plan;
  plan.start_delay_s = 2e-6;
  double done = -1;
  run_plan(net, plan, [&] { done = sim.now(); });
  sim.run();
  EXPECT_DOUBLE_EQ(done, 2e-6);
}

TEST(Plan, CanonicalTransfersDropNothingTransfersAndSort) {
  const auto t = canonical_transfers({{3, 1, 5}, {0, 0, 9}, {1, 2, 0}, {0, 2, 1}, {3, 1, 7}});
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t[0].src_rank, 0);
  EXPECT_EQ(t[1].bytes, 5u);  // stable: channels over one pair stay separate, in order
  EXPECT_EQ(t[2].bytes, 7u);
}

TEST(Plan, MergeConcurrentConcatenatesAndKeepsTheLongestDelay) {
  Phase x, y;
  x.transfers = {{0, 1, 1}};
  x.delay_after_s = 1;
  y.transfers = {{2, 3, 1}, {3, 2, 1}};
  y.delay_after_s = 3;
  const Phase m = merge_concurrent({x, y});
  EXPECT_EQ(m.transfers.size(), 3u);
  EXPECT_EQ(m.delay_after_s, 3);
  y.repeat = 2;
  EXPECT_THROW(merge_concurrent({x, y}), std::logic_error);
}

}  // namespace
}  // namespace overlapsim::sim::detail
