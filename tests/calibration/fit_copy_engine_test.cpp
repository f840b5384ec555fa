// The copy-engine fit stage against closed forms: the peer-copy line, the 1-D minimiser,
// which pair rows count as correct, and the stage writing the line with its provenance.
#include "calibration/fit_copy_engine.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

#include "tests/calibration/fit_stage_util.hpp"

namespace overlapsim::calibration {
namespace {

TEST(FitCopyLine, RecoversAnExactLine) {
  std::vector<std::pair<double, double>> points;
  for (double mib : {0.25, 1.0, 4.0, 16.0, 64.0, 256.0}) {
    const double bytes = mib * (1 << 20);
    points.emplace_back(bytes, 6e-6 + bytes / 385e9);
  }
  const CopyLine line = fit_copy_line(points);
  EXPECT_NEAR(line.latency_s, 6e-6, 1e-12);
  EXPECT_NEAR(line.Bps, 385e9, 1e3);
  EXPECT_NEAR(line.rel_rms, 0, 1e-9);
}

// Weighted by 1 / t: a 10 % miss on a small copy counts as much as on a large one. Two
// points, one 10 % high: the line passes between them, with equal relative misses.
TEST(FitCopyLine, MinimisesRelativeError) {
  const double b1 = 1e6, b2 = 1e8, bw = 1e11;
  const CopyLine line = fit_copy_line({{b1, b1 / bw * 1.1}, {b2, b2 / bw}});
  const double e1 = (line.latency_s + b1 / line.Bps) / (b1 / bw * 1.1) - 1;
  const double e2 = (line.latency_s + b2 / line.Bps) / (b2 / bw) - 1;
  EXPECT_NEAR(e1, e2, 1e-9);  // two points, two unknowns: both met exactly
  EXPECT_NEAR(e1, 0, 1e-9);
}

TEST(FitCopyLine, NegativeInterceptGoesThroughTheOrigin) {
  // Small copies relatively faster than large ones: the free line would start below 0.
  const CopyLine line = fit_copy_line({{1e6, 0.5e-5}, {1e8, 1e-3}});
  EXPECT_EQ(line.latency_s, 0);
  EXPECT_GT(line.Bps, 0);
}

TEST(FitCopyLine, NeedsTwoSizes) {
  EXPECT_THROW(fit_copy_line({{1e6, 1e-5}, {1e6, 1.1e-5}}), std::invalid_argument);
}

TEST(Minimise1d, FindsTheMinimumOnLinearAndLogScales) {
  EXPECT_NEAR(minimise_1d([](double x) { return (x - 0.3) * (x - 0.3); }, 0, 3, false), 0.3, 1e-6);
  const double at =
      minimise_1d([](double x) { return std::pow(std::log(x / 2e12), 2); }, 1e11, 1e14, true);
  EXPECT_NEAR(at / 2e12, 1, 1e-6);
  // At a bound when the function keeps falling.
  EXPECT_NEAR(minimise_1d([](double x) { return x; }, 0, 3, false), 0, 1e-9);
}

Measurement pair_row(const std::string& design, int world, std::uint64_t wrong) {
  Measurement m;
  m.op = "gemm+allreduce";
  m.design = design;
  m.world = world;
  m.wrong = wrong;
  return m;
}

// Fewer wrong elements than one 128 x 256 tile per rank: rounding, not a lost partial.
TEST(CopyEngineRowUsable, RoundingMissesOnMoreThanTwoRanksOnly) {
  const double tile = 128.0 * 256;
  EXPECT_TRUE(copy_engine_row_usable(pair_row("tilewise_ce", 8, 0), tile));
  EXPECT_TRUE(copy_engine_row_usable(pair_row("tilewise_ce", 8, 5104), tile));
  EXPECT_TRUE(copy_engine_row_usable(pair_row("tilewise_copy_engine", 4, 4 * 32768 - 1), tile));
  EXPECT_FALSE(copy_engine_row_usable(pair_row("tilewise_ce", 8, 8 * 32768), tile));
  EXPECT_FALSE(copy_engine_row_usable(pair_row("tilewise_ce", 2, 1), tile));  // bit-identical
  EXPECT_FALSE(copy_engine_row_usable(pair_row("sequential", 8, 1), tile));
}

// A peer_copy row of `design` at `world` ranks whose time lies on latency + moved / Bps,
// `moved` the row's bytes times `peers_counted`.
Measurement peer_copy_row(const char* file, int line, const char* design, int world, double mib,
                          double latency_s, double Bps, int peers_counted = 1) {
  Measurement m;
  m.file = file;
  m.line = line;
  m.op = "peer_copy";
  m.design = design;
  m.world = world;
  m.bytes = static_cast<std::uint64_t>(mib * (1 << 20));
  m.time_s = m.time_min_s = latency_s + peers_counted * static_cast<double>(m.bytes) / Bps;
  return m;
}

// fit_copy_engine's output on `data`: the profile it wrote and its comments.
using Fitted = testing::StageOutput;
Fitted fit(const FitData& data) { return testing::run_stage(fit_copy_engine, data); }

// The stage writes the peer-copy line with the rows it came from and its error, and stops
// there for a profile without the tile-wise design's tile size (no pair rows to fit).
TEST(FitCopyEngine, WritesTheLineWithProvenance) {
  FitData data;
  data.label = "calibration/data/x";
  int line = 2;
  for (double mib : {1.0, 16.0, 256.0})
    data.rows.push_back(
        peer_copy_row("calibration.csv", line++, "copy_engine", 8, mib, 5e-6, 390e9));
  const Fitted fitted = fit(data);
  const sim::Profile& profile = fitted.profile;
  const sim::Sourced* bw = profile.designs.find("tilewise", "copy_engine_bandwidth_Bps");
  const sim::Sourced* lat = profile.designs.find("tilewise", "copy_engine_latency_s");
  ASSERT_TRUE(bw && lat);
  EXPECT_NEAR(bw->value, 390e9, 390e9 * 1e-3);  // rounded to 4 digits
  EXPECT_NEAR(lat->value, 5e-6, 5e-9);
  EXPECT_EQ(bw->source.kind, sim::SourceKind::Measured);
  EXPECT_EQ(bw->source.citation, "calibration/data/x: calibration.csv:2-4");
  EXPECT_NEAR(bw->source.fit_error, 0, 1e-6);
  EXPECT_EQ(fitted.comments.count("designs.tilewise.copy_engine_latency_s"), 1u);
  EXPECT_EQ(profile.designs.find("tilewise", "epilogue_reduce_bandwidth_Bps"), nullptr);
  EXPECT_EQ(profile.designs.find("tilewise", "tail_kernel_bandwidth_Bps"), nullptr)
      << "no tail_kernel rows, no tail-kernel line";
}

// The all-reduce tail kernel's rows (peer_copy, design tail_kernel) give their own line,
// apart from the copy engines'; one size alone gives none.
TEST(FitCopyEngine, TailKernelRowsGiveTheirOwnLine) {
  FitData data;
  data.label = "benchmarks/results/y";
  int line = 2;
  const auto add = [&](const char* design, double mib, double latency_s, double Bps) {
    data.rows.push_back(peer_copy_row("tilewise.csv", line++, design, 2, mib, latency_s, Bps));
  };
  for (double mib : {1.0, 16.0, 64.0}) add("copy_engine", mib, 3e-6, 385e9);
  for (double mib : {1.0, 4.0, 16.0, 64.0}) add("tail_kernel", mib, 9e-6, 360e9);
  const Fitted fitted = fit(data);
  const sim::Profile& profile = fitted.profile;
  const sim::Sourced* bw = profile.designs.find("tilewise", "tail_kernel_bandwidth_Bps");
  const sim::Sourced* lat = profile.designs.find("tilewise", "tail_kernel_latency_s");
  ASSERT_TRUE(bw && lat);
  EXPECT_NEAR(bw->value, 360e9, 360e9 * 1e-3);
  EXPECT_NEAR(lat->value, 9e-6, 9e-9);
  EXPECT_EQ(bw->source.citation, "benchmarks/results/y: tilewise.csv:5-8");
  EXPECT_NEAR(profile.designs.find("tilewise", "copy_engine_latency_s")->value, 3e-6, 3e-9);
  EXPECT_NE(fitted.comments.at("designs.tilewise.tail_kernel_latency_s").find("tail_kernel rows"),
            std::string::npos);

  FitData one_size;
  one_size.rows = {data.rows.back()};
  EXPECT_EQ(fit(one_size).profile.designs.find("tilewise", "tail_kernel_bandwidth_Bps"), nullptr);
}

// A tail-kernel row of world w carries its bytes to each of w - 1 peers: rows of 2 and 4
// ranks on one line latency + (w - 1) bytes / bandwidth give that line, the form the
// simulator charges at n ranks.
TEST(FitCopyEngine, TailKernelRowsOfSeveralWorldsCountEveryPeer) {
  FitData data;
  data.label = "benchmarks/results/z";
  int line = 2;
  for (int world : {2, 4})
    for (double mib : {1.0, 4.0, 16.0, 64.0})
      data.rows.push_back(
          peer_copy_row("bench.csv", line++, "tail_kernel", world, mib, 12e-6, 330e9, world - 1));
  const Fitted fitted = fit(data);
  const sim::Profile& profile = fitted.profile;
  const sim::Sourced* bw = profile.designs.find("tilewise", "tail_kernel_bandwidth_Bps");
  const sim::Sourced* lat = profile.designs.find("tilewise", "tail_kernel_latency_s");
  ASSERT_TRUE(bw && lat);
  EXPECT_NEAR(bw->value, 330e9, 330e9 * 1e-3);
  EXPECT_NEAR(lat->value, 12e-6, 12e-9);
  EXPECT_NEAR(bw->source.fit_error, 0, 1e-6);
}

// A copy's stream operations: the 1 MiB copy with them less the same copy alone in the same
// case and world, the median over cases (7, 8 and 10 us: 8); a row without its plain copy
// counts for nothing.
TEST(FitCopyEngine, StreamOperationsAreTheMedianDifferenceOverCases) {
  FitData data;
  data.label = "calibration/data/w";
  int line = 2;
  const char* cases[] = {"a", "b", "c"};
  const double ops_us[] = {7, 10, 8};
  for (int i = 0; i < 3; ++i) {
    for (double mib : {1.0, 16.0}) {
      Measurement m = peer_copy_row("calibration.csv", line++, "copy_engine", 4, mib, 5e-6, 390e9);
      m.case_key = cases[i];
      data.rows.push_back(m);
    }
    Measurement w = peer_copy_row("calibration.csv", line++, "copy_engine_with_stream_ops", 4, 1.0,
                                  5e-6 + ops_us[i] * 1e-6, 390e9);
    w.case_key = cases[i];
    data.rows.push_back(w);
  }
  Measurement orphan =
      peer_copy_row("calibration.csv", line++, "copy_engine_with_stream_ops", 4, 1.0, 1e-3, 390e9);
  orphan.case_key = "d";
  data.rows.push_back(orphan);
  const Fitted fitted = fit(data);
  const sim::Sourced* ops = fitted.profile.designs.find("tilewise", "copy_engine_stream_ops_s");
  ASSERT_NE(ops, nullptr);
  EXPECT_NEAR(ops->value, 8e-6, 1e-12);
  EXPECT_EQ(ops->source.kind, sim::SourceKind::Measured);
  EXPECT_EQ(ops->source.citation, "calibration/data/w: calibration.csv:2,4-5,7-8,10");
  // Relative RMS of (-1, 2, 0) us about 8 us.
  EXPECT_NEAR(ops->source.fit_error, std::sqrt(5.0 / 3) / 8, 1e-4);
}

}  // namespace
}  // namespace overlapsim::calibration
