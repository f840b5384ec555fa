// The scenario library on a step a person can time by hand: two ranks, a GEMM then its
// all-reduce, the all-reduce timed by a measured curve (10 us + bytes / 200 GB/s on two
// ranks, whose bus-bandwidth factor 2(n-1)/n is 1).
#include "sim/scenario/scenario.hpp"

#include <gtest/gtest.h>

#include "sim/overlap/pair_simulation.hpp"
#include "sim/topology/builders.hpp"
#include "tests/sim/overlap/overlap_test_util.hpp"

namespace overlapsim::sim {
namespace {

constexpr std::uint64_t kBytes = 64ull << 20;
constexpr double kGemmS = 2.0 * 8192 * 8192 * 8192 / 1e15;  // unit profile: FLOPs / 1e15
const double kCommS = 10e-6 + static_cast<double>(kBytes) / 200e9;

Profile profile_with_curve() {
  Profile p = testing::design_profile(false);
  CollectiveCurve c;
  c.op = CollectiveOp::AllReduce;
  c.ranks = 2;
  c.segments = {{0, 10e-6, 200e9}};
  c.source = {SourceKind::Measured, "test rows", 0.01};
  p.collectives.curves.push_back(c);
  return p;
}

// GEMM -> all-reduce on each of two ranks, paired (a producer pair).
StepGraph gemm_then_allreduce() {
  PairCase pc;
  pc.compute = testing::gemm_op("gemm", 8192, 8192, 8192);
  pc.comm_bytes = kBytes;
  return pair_step(pc);
}

Topology two_gpu_node() { return build_nvswitch_node({2, 400e9, 0.0}); }

TEST(Scenario, SequentialIsTheOpThenTheMeasuredCollective) {
  const StepGraph step = gemm_then_allreduce();
  const Topology topo = two_gpu_node();
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
  const Topology topo = two_gpu_node();
  const Profile profile = profile_with_curve();
  ScenarioOptions o;
  o.measured_times = {{kBytes / 2, 1e-3}, {kBytes * 2, 3e-3}};  // linear: 1.666... ms at kBytes
  const ScenarioResult r = run_scenario({step, topo, profile, o});
  EXPECT_NEAR(r.runs[0].result.step_time_s, kGemmS + 1e-3 + 2e-3 / 3, 1e-12);
}

TEST(Scenario, ADesignThatOverlapsNoPairReusesSequential) {
  // fused applies to GEMV, embedding and all-to-all pairs, not GEMM + AllReduce.
  const StepGraph step = gemm_then_allreduce();
  const Topology topo = two_gpu_node();
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
  const Topology topo = two_gpu_node();
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
  const Topology topo = two_gpu_node();
  const Profile profile = profile_with_curve();
  ScenarioOptions o;
  o.gemm_clock = GemmClock::DutyCycle;
  EXPECT_THROW(run_scenario({step, topo, profile, o}), std::invalid_argument);
}

TEST(Scenario, TraceIsRecordedPerDesign) {
  const StepGraph step = gemm_then_allreduce();
  const Topology topo = two_gpu_node();
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
