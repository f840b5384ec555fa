// The uncertainty band on steps whose breakdown is known by hand: a GEMM then its all-reduce
// on two ranks of one host (the all-reduce fully exposed, 10 us + bytes / 200 GB/s).
#include "sim/scenario/step_band.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "sim/scenario/scenario.hpp"
#include "tests/sim/scenario/scenario_test_util.hpp"

namespace overlapsim::sim {
namespace {

using testing::gemm_then_allreduce;
using testing::kCommS;
using testing::kGemmS;
using testing::profile_with_curve;
using testing::scenario_node;

ScenarioResult run(const Profile& profile, std::vector<std::string> designs = {"sequential"}) {
  static const StepGraph step = gemm_then_allreduce();
  static const Topology topo = scenario_node();
  ScenarioOptions o;
  o.designs = std::move(designs);
  return run_scenario({step, topo, profile, o});
}

TEST(StepBand, HeldOutErrorsTimesWhatEachClassMoves) {
  Profile p = profile_with_curve();
  p.validation.measurements = "heldout.csv";
  p.validation.by_kind["compute"] = {10, 0.03, 0.06};
  p.validation.by_kind["collective"] = {10, 0.04, 0.08};
  const ScenarioResult r = run(p);
  const StepResult& s = r.runs[0].result;
  EXPECT_NEAR(s.exposed_comm_s, kCommS, 1e-12);
  EXPECT_EQ(s.exposed_inter_host_s, 0);
  EXPECT_NEAR(s.exposed_paired_s, kCommS, 1e-12);  // the all-reduce is the GEMM's partner
  const StepBand& b = r.runs[0].band;
  ASSERT_EQ(b.terms.size(), 2u);
  EXPECT_EQ(b.terms[0].number_class, "compute");
  EXPECT_EQ(b.terms[0].basis, ErrorBasis::HeldOut);
  EXPECT_NEAR(b.terms[0].contribution_s, 0.03 * kGemmS, 1e-12);
  EXPECT_EQ(b.terms[1].number_class, "intra-host collectives");
  EXPECT_NEAR(b.terms[1].contribution_s, 0.04 * kCommS, 1e-12);
  const double half = std::hypot(0.03 * kGemmS, 0.04 * kCommS);
  EXPECT_NEAR(b.low_s, s.step_time_s - half, 1e-12);
  EXPECT_NEAR(b.high_s, s.step_time_s + half, 1e-12);
  EXPECT_EQ(b.dominant, kGemmS * 0.03 > kCommS * 0.04 ? "compute" : "intra-host collectives");
}

TEST(StepBand, WithoutValidationTheClassIsAssumedAndSaysSo) {
  const ScenarioResult r = run(profile_with_curve());
  const StepBand& b = r.runs[0].band;
  ASSERT_EQ(b.terms.size(), 2u);
  for (const auto& t : b.terms) {
    EXPECT_EQ(t.basis, ErrorBasis::Assumed) << t.number_class;
    EXPECT_DOUBLE_EQ(t.relative_error, 0.20);
  }
}

TEST(StepBand, AnOverlappingDesignChargesItsPairsToTheDesignClass) {
  Profile p = profile_with_curve();
  p.validation.measurements = "heldout.csv";
  p.validation.by_kind["compute"] = {10, 0.03, 0.06};
  p.validation.by_kind["collective"] = {10, 0.04, 0.08};
  p.validation.by_kind["decomposed"] = {10, 0.05, 0.09};
  const ScenarioResult r = run(p, {"sequential", "decomposed"});
  const DesignRun& d = r.runs[1];
  ASSERT_TRUE(d.paired);
  const BandTerm* design = nullptr;
  for (const auto& t : d.band.terms)
    if (t.number_class == "design pairs") design = &t;
  ASSERT_NE(design, nullptr);
  EXPECT_EQ(design->basis, ErrorBasis::HeldOut);
  EXPECT_NEAR(design->sensitivity_s, d.result.paired_compute_s + d.result.exposed_paired_s, 1e-12);
  // Every second of the step is in exactly one class: the GEMM and the all-reduce are paired.
  double total = 0;
  for (const auto& t : d.band.terms) total += t.sensitivity_s;
  EXPECT_NEAR(total, d.result.step_time_s, 1e-9);
}

}  // namespace
}  // namespace overlapsim::sim
