// The uncertainty band on steps whose breakdown is known by hand: a GEMM then its all-reduce
// on two ranks of one host (the all-reduce fully exposed, 10 us + bytes / 200 GB/s).
#include "sim/scenario/step_band.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

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
  p.validation.measurements = {"heldout.csv"};
  p.validation.by_kind["compute"] = {10, 0.03, 0.06};
  p.validation.by_kind["collective"] = {10, 0.04, 0.08};
  const ScenarioResult r = run(p);
  const StepResult& s = r.runs[0].result;
  EXPECT_NEAR(s.exposed_comm_s, kCommS, 1e-12);
  EXPECT_EQ(s.exposed_inter_host_s, 0);
  EXPECT_NEAR(s.exposed_paired_s, kCommS, 1e-12);  // the all-reduce is the GEMM's partner
  const StepBand& b = r.runs[0].band;
  ASSERT_EQ(b.terms.size(), 2u);
  EXPECT_EQ(b.terms[0].number_class, "GEMMs");
  EXPECT_EQ(b.terms[0].basis, ErrorBasis::HeldOut);
  EXPECT_NEAR(b.terms[0].contribution_s, 0.03 * kGemmS, 1e-12);
  EXPECT_EQ(b.terms[1].number_class, "intra-host collectives");
  EXPECT_NEAR(b.terms[1].contribution_s, 0.04 * kCommS, 1e-12);
  const double half = std::hypot(0.03 * kGemmS, 0.04 * kCommS);
  EXPECT_NEAR(b.low_s, s.step_time_s - half, 1e-12);
  EXPECT_NEAR(b.high_s, s.step_time_s + half, 1e-12);
  EXPECT_EQ(b.dominant, kGemmS * 0.03 > kCommS * 0.04 ? "GEMMs" : "intra-host collectives");
}

// A rank's compute split by kind of kernel, each at its own error: GEMMs at the held-out error
// of the step's input type, attention and memory-bound kernels at the fit errors of the
// numbers that timed them, the bubble at the three errors weighted by their times.
TEST(StepBand, ComputeKindsTakeTheirOwnErrors) {
  Profile p = profile_with_curve();
  p.validation.measurements = {"heldout.csv"};
  p.validation.by_kind["compute_bf16"] = {10, 0.03, 0.06};
  p.validation.by_kind["compute_fp8"] = {10, 0.05, 0.09};
  StepResult r;
  r.compute_by_kind = {4.0, 2.0, 1.0};  // GEMMs, attention, memory-bound
  r.compute_s = 7.0;
  r.bubble_s = 0.5;
  r.step_time_s = 7.5;
  const std::vector<CollectiveClassUse> classes;
  Provenance attention{SourceKind::Measured, "grid", 0.08};
  Provenance memory{SourceKind::Measured, "roofline", 0.10};
  Provenance memory_less{SourceKind::Measured, "roofline", 0.04};
  const std::vector<SourceEntry> used = {{"compute.attention_table", attention},
                                         {"compute.efficiency.memory", memory},
                                         {"compute.efficiency.embedding", memory_less}};
  const StepBand b =
      step_band(r, BandInputs{p, "sequential", false, {}, Precision::BF16, classes, used});
  ASSERT_EQ(b.terms.size(), 4u);
  const double mix = (4.0 * 0.03 + 2.0 * 0.08 + 1.0 * 0.10) / 7.0;
  const double want[][2] = {{4.0, 0.03}, {2.0, 0.08}, {1.0, 0.10}, {0.5, mix}};
  const char* names[] = {"GEMMs", "attention", "memory-bound kernels", "bubble"};
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(b.terms[i].number_class, names[i]);
    EXPECT_DOUBLE_EQ(b.terms[i].sensitivity_s, want[i][0]) << names[i];
    EXPECT_DOUBLE_EQ(b.terms[i].relative_error, want[i][1]) << names[i];
  }
  EXPECT_EQ(b.terms[0].basis, ErrorBasis::HeldOut);
  EXPECT_EQ(b.terms[2].basis, ErrorBasis::Fit);
  EXPECT_EQ(b.terms[3].basis, ErrorBasis::Fit);  // the weakest of the mix
  EXPECT_NE(b.terms[2].error_source.find("compute.efficiency.memory"), std::string::npos);
  EXPECT_EQ(b.dominant, "attention");  // 0.16 s against GEMMs' 0.12 and memory's 0.10
  const double half = std::sqrt(0.12 * 0.12 + 0.16 * 0.16 + 0.1 * 0.1 + 0.25 * mix * mix);
  EXPECT_NEAR(b.high_s - r.step_time_s, half, 1e-12);
  // The fp8 step takes the fp8 rows; with no attention number, attention is assumed.
  const std::vector<SourceEntry> memory_only = {{"compute.efficiency.memory", memory}};
  const StepBand f =
      step_band(r, BandInputs{p, "sequential", false, {}, Precision::FP8, classes, memory_only});
  EXPECT_DOUBLE_EQ(f.terms[0].relative_error, 0.05);
  EXPECT_EQ(f.terms[1].basis, ErrorBasis::Assumed);
  EXPECT_DOUBLE_EQ(f.terms[1].relative_error, 0.20);
  EXPECT_DOUBLE_EQ(f.terms[3].relative_error, (4.0 * 0.05 + 2.0 * 0.20 + 1.0 * 0.10) / 7.0);
  EXPECT_EQ(f.terms[3].basis, ErrorBasis::Assumed);
  // A curve through its own points (a fit error under the run-to-run spread) is no evidence
  // of the sizes between them.
  const Provenance exact{SourceKind::Measured, "three gemv rows", 3.6e-5};
  const std::vector<SourceEntry> interpolated = {{"compute.attention_table", attention},
                                                 {"compute.efficiency.memory", exact}};
  const StepBand z =
      step_band(r, BandInputs{p, "sequential", false, {}, Precision::BF16, classes, interpolated});
  EXPECT_EQ(z.terms[2].basis, ErrorBasis::Assumed);
  EXPECT_DOUBLE_EQ(z.terms[2].relative_error, 0.20);
  // Held-out GEMVs and embedding bags come before any fit.
  p.validation.by_kind["memory_bound"] = {38, 0.09, 0.49};
  const StepBand h =
      step_band(r, BandInputs{p, "sequential", false, {}, Precision::BF16, classes, used});
  EXPECT_EQ(h.terms[2].basis, ErrorBasis::HeldOut);
  EXPECT_DOUBLE_EQ(h.terms[2].relative_error, 0.09);
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
  p.validation.measurements = {"heldout.csv"};
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

// `best` takes the design class's error from the designs it ran: the held-out kind of the
// design it ran on every pair, else the worst of its class winners' kinds; a winner without
// held-out pairs leaves the class assumed.
TEST(StepBand, BestTakesTheErrorOfTheDesignsItRan) {
  Profile p = profile_with_curve();
  p.validation.measurements = {"heldout.csv"};
  p.validation.by_kind["compute"] = {10, 0.03, 0.06};
  p.validation.by_kind["collective"] = {10, 0.04, 0.08};
  const std::map<std::string, double> error = {
      {"decomposed", 0.05}, {"tilewise", 0.07}, {"shaped", 0.06}};
  for (const auto& [kind, e] : error) p.validation.by_kind[kind] = {10, e, 2 * e};
  auto design_term = [](const DesignRun& run) -> const BandTerm* {
    for (const auto& t : run.band.terms)
      if (t.number_class == "design pairs") return &t;
    return nullptr;
  };
  const ScenarioResult r = run(p, {"sequential", "best"});
  const DesignRun& best = r.runs[1];
  ASSERT_TRUE(best.paired) << best.best_basis;
  std::vector<std::string> ran;
  if (!best.best_every_pair.empty())
    ran = {best.best_every_pair};
  else
    for (const auto& c : best.best_classes)
      if (c.winner != "sequential") ran.push_back(c.winner);
  ASSERT_FALSE(ran.empty());
  double expected = 0;
  for (const std::string& d : ran) expected = std::max(expected, error.at(d));
  const BandTerm* t = design_term(best);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->basis, ErrorBasis::HeldOut) << best.best_basis;
  EXPECT_DOUBLE_EQ(t->relative_error, expected) << best.best_basis;
  // Without held-out pairs of a design it ran, the class is assumed.
  p.validation.by_kind.erase(ran.front());
  const ScenarioResult without = run(p, {"sequential", "best"});
  const BandTerm* u = design_term(without.runs[1]);
  ASSERT_NE(u, nullptr);
  EXPECT_EQ(u->basis, ErrorBasis::Assumed);
  EXPECT_DOUBLE_EQ(u->relative_error, 0.20);
}

}  // namespace
}  // namespace overlapsim::sim
