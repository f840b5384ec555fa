// Extrapolating two runs to a longer step, on results whose fields are written by hand as
// straight lines in the microbatch count: the projection must land on the line exactly.
#include "sim/scenario/extrapolate.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

namespace overlapsim::sim {
namespace {

// A result at m microbatches: intercept + slope x m for every time, counts of 1000 x m.
DesignRun run_at(int m) {
  DesignRun run;
  StepResult& r = run.result;
  r.design = "sequential";
  r.step_time_s = 2.0 + 0.5 * m;
  r.compute_s = 1.0 + 0.4 * m;
  r.exposed_comm_s = 0.25 + 0.05 * m;
  r.bubble_s = 0.75 + 0.05 * m;
  r.exposed_inter_host_s = 0.1 + 0.01 * m;
  r.events = 1000u * static_cast<unsigned>(m);
  RankResult rank;
  rank.rank = 3;
  rank.step_time_s = r.step_time_s;
  rank.compute_s = r.compute_s;
  r.ranks = {rank};
  run.band.terms = {
      BandTerm{"compute", r.compute_s + r.bubble_s, 0.03, ErrorBasis::HeldOut, "c", 0},
      BandTerm{"inter-host collectives", r.exposed_inter_host_s, 0.094, ErrorBasis::Published, "n",
               0}};
  return run;
}

ScenarioResult result_at(int m) {
  ScenarioResult s;
  s.runs = {run_at(m)};
  return s;
}

TEST(Extrapolate, TwoRunsOnALineGiveTheLineFurtherOn) {
  // From 8 and 12 microbatches to 100: t = (100 - 12) / (12 - 8) = 22.
  const ScenarioResult out = extrapolate_result(result_at(8), result_at(12), 22.0);
  const StepResult& r = out.runs[0].result;
  EXPECT_NEAR(r.step_time_s, 2.0 + 0.5 * 100, 1e-12);
  EXPECT_NEAR(r.compute_s, 1.0 + 0.4 * 100, 1e-12);
  EXPECT_NEAR(r.exposed_comm_s, 0.25 + 0.05 * 100, 1e-12);
  EXPECT_NEAR(r.bubble_s, 0.75 + 0.05 * 100, 1e-12);
  ASSERT_EQ(r.ranks.size(), 1u);
  EXPECT_EQ(r.ranks[0].rank, 3);
  EXPECT_NEAR(r.ranks[0].step_time_s, 52.0, 1e-12);
  EXPECT_EQ(r.events, 20000u);  // the work the two runs took, not the long step's
}

TEST(Extrapolate, BandIsRecomputedFromExtrapolatedSensitivities) {
  const ScenarioResult out = extrapolate_result(result_at(8), result_at(12), 22.0);
  const StepBand& b = out.runs[0].band;
  ASSERT_EQ(b.terms.size(), 2u);
  const double compute = (1.0 + 0.4 * 100) + (0.75 + 0.05 * 100);  // 46.75 s
  const double inter = 0.1 + 0.01 * 100;                           // 1.1 s
  EXPECT_NEAR(b.terms[0].sensitivity_s, compute, 1e-12);
  EXPECT_NEAR(b.terms[1].sensitivity_s, inter, 1e-12);
  const double half = std::hypot(0.03 * compute, 0.094 * inter);
  EXPECT_NEAR(b.low_s, 52.0 - half, 1e-12);
  EXPECT_NEAR(b.high_s, 52.0 + half, 1e-12);
  EXPECT_EQ(b.dominant, "compute");
}

TEST(Extrapolate, ZeroStepsAheadIsTheLongerRun) {
  const ScenarioResult out = extrapolate_result(result_at(8), result_at(12), 0.0);
  EXPECT_DOUBLE_EQ(out.runs[0].result.step_time_s, result_at(12).runs[0].result.step_time_s);
}

TEST(Extrapolate, RefusesRunsThatAreNotTheSame) {
  ScenarioResult other = result_at(12);
  other.runs[0].result.design = "tilewise";
  EXPECT_THROW(extrapolate_result(result_at(8), other, 1.0), std::invalid_argument);
  other = result_at(12);
  other.runs[0].result.ranks[0].rank = 4;
  EXPECT_THROW(extrapolate_result(result_at(8), other, 1.0), std::invalid_argument);
  other = result_at(12);
  other.runs.push_back(run_at(12));
  EXPECT_THROW(extrapolate_result(result_at(8), other, 1.0), std::invalid_argument);
}

// Two ranks with their period marks written by hand: each loses what it gained between its
// marks, and the step's breakdown is the slower rank's after that.
StepResult marked_run() {
  StepResult b;
  b.design = "sequential";
  RankResult r0, r1;
  r0.rank = 0;
  r0.step_time_s = 10.0;
  r0.compute_s = 7.0;
  r0.bubble_s = 2.0;
  r0.compute_by_kind.gemm_s = 5.0;
  r1.rank = 8;
  r1.step_time_s = 9.9;
  r1.compute_s = 8.0;
  r1.bubble_s = 1.0;
  b.ranks = {r0, r1};
  b.step_time_s = 10.0;
  RankResult s0 = r0, e0 = r0, s1 = r1, e1 = r1;
  s0.step_time_s = 3.0, e0.step_time_s = 5.0;  // period 2 s
  s0.compute_s = 2.0, e0.compute_s = 3.0;
  s0.bubble_s = 0.5, e0.bubble_s = 1.5;
  s0.compute_by_kind.gemm_s = 1.0, e0.compute_by_kind.gemm_s = 1.8;
  s1.step_time_s = 3.5, e1.step_time_s = 5.5;  // period 2 s
  s1.compute_s = 2.0, e1.compute_s = 3.9;
  s1.bubble_s = 0.5, e1.bubble_s = 0.6;
  b.period_start = {s0, s1};
  b.period_end = {e0, e1};
  return b;
}

TEST(BeforeLastPeriod, EachRankLosesItsOwnPeriod) {
  const StepResult a = before_last_period(marked_run());
  ASSERT_EQ(a.ranks.size(), 2u);
  EXPECT_DOUBLE_EQ(a.ranks[0].step_time_s, 8.0);
  EXPECT_DOUBLE_EQ(a.ranks[0].compute_s, 6.0);
  EXPECT_DOUBLE_EQ(a.ranks[0].bubble_s, 1.0);
  EXPECT_DOUBLE_EQ(a.ranks[0].compute_by_kind.gemm_s, 4.2);
  EXPECT_DOUBLE_EQ(a.ranks[1].step_time_s, 7.9);
  EXPECT_DOUBLE_EQ(a.ranks[1].compute_s, 6.1);
  EXPECT_DOUBLE_EQ(a.ranks[1].bubble_s, 0.9);
  EXPECT_EQ(a.critical_rank, 0);
  EXPECT_DOUBLE_EQ(a.step_time_s, 8.0);
  EXPECT_DOUBLE_EQ(a.compute_s, 6.0);
  EXPECT_EQ(a.events, 0u);  // nothing was simulated for it
  EXPECT_TRUE(a.period_start.empty());
}

TEST(BeforeLastPeriod, TheSlowerRankAfterwardsGivesTheBreakdown) {
  StepResult b = marked_run();
  b.period_start[1].step_time_s = 3.9;  // rank 8's period 1.6 s: it ends at 8.3 s
  const StepResult a = before_last_period(b);
  EXPECT_EQ(a.critical_rank, 8);
  EXPECT_DOUBLE_EQ(a.step_time_s, 8.3);
  EXPECT_DOUBLE_EQ(a.compute_s, 6.1);
}

TEST(BeforeLastPeriod, SpreadOfThePeriodsAndRunsWithoutMarks) {
  StepResult b = marked_run();
  EXPECT_DOUBLE_EQ(period_spread(b), 0.0);
  b.period_start[1].step_time_s = 3.9;  // periods 2.0 and 1.6 s
  EXPECT_DOUBLE_EQ(period_spread(b), 0.4 / 2.0);
  b.period_end.pop_back();
  EXPECT_DOUBLE_EQ(period_spread(b), 1.0);
  EXPECT_THROW(before_last_period(b), std::invalid_argument);
}

}  // namespace
}  // namespace overlapsim::sim
