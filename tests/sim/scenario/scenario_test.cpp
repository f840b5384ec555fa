// The scenario library on a step a person can time by hand: two ranks, a GEMM then its
// all-reduce, the all-reduce timed by a measured curve (10 us + bytes / 200 GB/s on two
// ranks, whose bus-bandwidth factor 2(n-1)/n is 1).
#include "sim/scenario/scenario.hpp"

#include <gtest/gtest.h>

#include "tests/sim/scenario/scenario_test_util.hpp"

namespace overlapsim::sim {
namespace {

using testing::gemm_then_allreduce;
using testing::kBytes;
using testing::kCommS;
using testing::kGemmS;
using testing::profile_with_curve;
using testing::scenario_node;

TEST(Scenario, SequentialIsTheOpThenTheMeasuredCollective) {
  const StepGraph step = gemm_then_allreduce();
  const Topology topo = scenario_node();
  const Profile profile = profile_with_curve();
  const ScenarioResult r = run_scenario({step, topo, profile, ScenarioOptions{}});
  ASSERT_EQ(r.runs.size(), 1u);
  EXPECT_NEAR(r.runs[0].result.step_time_s, kGemmS + kCommS, 1e-12);
  EXPECT_EQ(r.runs[0].launches_by_path[static_cast<int>(CollectivePath::Curve)], 1);
  ASSERT_EQ(r.collective_classes.size(), 1u);
  EXPECT_EQ(r.collective_classes[0].label, "allreduce n=2 intra-host");
  EXPECT_FALSE(r.runs[0].paired);
  EXPECT_EQ(r.used_kinds, "datasheet");  // the unit profile's default source
}

TEST(Scenario, MeasuredTimesReplaceTheCurve) {
  const StepGraph step = gemm_then_allreduce();
  const Topology topo = scenario_node();
  const Profile profile = profile_with_curve();
  ScenarioOptions o;
  o.measured_times = {{kBytes / 2, 1e-3}, {kBytes * 2, 3e-3}};  // linear: 1.666... ms at kBytes
  const ScenarioResult r = run_scenario({step, topo, profile, o});
  EXPECT_NEAR(r.runs[0].result.step_time_s, kGemmS + 1e-3 + 2e-3 / 3, 1e-12);
}

TEST(Scenario, ADesignThatOverlapsNoPairReusesSequential) {
  // fused applies to GEMV, embedding and all-to-all pairs, not GEMM + AllReduce.
  const StepGraph step = gemm_then_allreduce();
  const Topology topo = scenario_node();
  const Profile profile = profile_with_curve();
  ScenarioOptions o;
  o.designs = {"sequential", "fused"};
  const ScenarioResult r = run_scenario({step, topo, profile, o});
  ASSERT_EQ(r.runs.size(), 2u);
  EXPECT_EQ(r.runs[1].result.design, "fused");
  EXPECT_EQ(r.runs[1].result.step_time_s, r.runs[0].result.step_time_s);
  EXPECT_EQ(r.runs[1].result.events, r.runs[0].result.events);
  EXPECT_EQ(r.runs[1].pairs.overlapped, 0);
  EXPECT_EQ(r.runs[1].pairs.sequential.size(), 1u);
  // Run for real instead, it gives the same step.
  o.reuse_sequential = false;
  const ScenarioResult again = run_scenario({step, topo, profile, o});
  EXPECT_EQ(again.runs[1].result.step_time_s, r.runs[0].result.step_time_s);
}

TEST(Scenario, DutyCycleRerunsAtTheBoostedGemmClock) {
  const StepGraph step = gemm_then_allreduce();
  const Topology topo = scenario_node();
  Profile profile = profile_with_curve();
  profile.compute.idle_clock_boost = Sourced{0.5, {SourceKind::Assumed, "test", -1}};
  ScenarioOptions o;
  o.gemm_clock = GemmClock::DutyCycle;
  const ScenarioResult r = run_scenario({step, topo, profile, o});
  const double idle = kCommS / (kGemmS + kCommS);
  EXPECT_NEAR(r.runs[0].idle_fraction, idle, 1e-12);
  EXPECT_NEAR(r.runs[0].gemm_clock_speedup, 1 + 0.5 * idle, 1e-12);
  EXPECT_NEAR(r.runs[0].result.step_time_s, kGemmS / (1 + 0.5 * idle) + kCommS, 1e-12);
}

TEST(Scenario, DutyCycleWithoutTheBoostIsRefused) {
  const StepGraph step = gemm_then_allreduce();
  const Topology topo = scenario_node();
  const Profile profile = profile_with_curve();
  ScenarioOptions o;
  o.gemm_clock = GemmClock::DutyCycle;
  EXPECT_THROW(run_scenario({step, topo, profile, o}), std::invalid_argument);
}

TEST(Scenario, TraceIsRecordedPerDesign) {
  const StepGraph step = gemm_then_allreduce();
  const Topology topo = scenario_node();
  const Profile profile = profile_with_curve();
  ScenarioOptions o;
  o.designs = {"sequential", "decomposed"};
  o.trace = true;
  o.trace_title = "pair on test";
  const ScenarioResult r = run_scenario({step, topo, profile, o});
  for (const auto& run : r.runs) {
    EXPECT_NE(run.trace_json.find("pair on test (" + run.result.design + ")"), std::string::npos);
    EXPECT_NE(run.trace_json.find("\"gemm"), std::string::npos);
  }
}

}  // namespace
}  // namespace overlapsim::sim
