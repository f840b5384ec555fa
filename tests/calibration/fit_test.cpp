#include "calibration/fit.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "calibration/fit_alpha_beta.hpp"
#include "sim/profile/profile_load.hpp"
#include "config/error.hpp"
#include "tests/calibration/calib_test_util.hpp"

namespace overlapsim::calibration {
namespace {

namespace fs = std::filesystem;
using namespace overlapsim::calibration::testing;

fs::path fresh_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("overlapsim_fit_test_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

fs::path synthetic_dir(const std::string& name, const Truth& t) {
  const fs::path dir = fresh_dir(name);
  write_text(dir / "manifest.yaml", manifest_yaml("NVIDIA H200", {"bench.csv"}));
  write_text(dir / "bench.csv", synthetic_csv(t));
  return dir;
}

TEST(FitAlphaBeta, RecoversTwoBandsExactly) {
  const Truth t;
  std::vector<SizedTime> pts;
  for (std::uint64_t b = 4096; b <= (1ull << 30); b *= 4)
    pts.push_back({b, allreduce_s(t, static_cast<double>(b))});
  const auto bands = fit_alpha_beta(pts);
  ASSERT_EQ(bands.size(), 2u);
  EXPECT_EQ(bands[0].min_bytes, 0u);
  // Between 1 MiB (last of band 1) and 4 MiB (first of band 2) the switch is where the
  // two lines cross: the faster one holds on each side.
  const double cross_bytes =
      (t.alpha2_s - t.alpha1_s) / (1 / t.busbw1_Bps - 1 / t.busbw2_Bps);   // 1.2 MB
  EXPECT_NEAR(static_cast<double>(bands[1].min_bytes), cross_bytes, 2.0);  // fitted lines
  EXPECT_NEAR(bands[0].alpha_s, t.alpha1_s, 1e-9);
  EXPECT_NEAR(1 / bands[0].beta_s_per_byte, t.busbw1_Bps, 1e-6 * t.busbw1_Bps);
  EXPECT_NEAR(bands[1].alpha_s, t.alpha2_s, 1e-9);
  EXPECT_NEAR(1 / bands[1].beta_s_per_byte, t.busbw2_Bps, 1e-6 * t.busbw2_Bps);
}

TEST(FitAlphaBeta, FasterLineRuleKeepsTheFasterBandAcrossTheGap) {
  // Band 1: 10 us + b / 100 GB/s up to 512 KiB; band 2: 25 us + b / 300 GB/s from 2 MiB.
  // Band 1's line stays below band 2's over the whole gap (at 2 MiB 31.0 vs 32.0 us), so
  // band 2 starts at its first measured size.
  AlphaBetaOptions faster;
  faster.switch_rule = SwitchRule::FasterLine;
  std::vector<SizedTime> pts;
  for (std::uint64_t b = 4096; b <= 524288; b *= 2) pts.push_back({b, 10e-6 + b / 100e9});
  for (std::uint64_t b = 2097152; b <= (1ull << 30); b *= 2) pts.push_back({b, 25e-6 + b / 300e9});
  const auto bands = fit_alpha_beta(pts, faster);
  ASSERT_EQ(bands.size(), 2u);
  EXPECT_EQ(bands[1].min_bytes, 2097152u);
  EXPECT_NEAR(alpha_beta_time_s(bands, 1048576), 10e-6 + 1048576 / 100e9, 1e-9);
  // The geometric-mean rule puts the same switch at sqrt(512 KiB * 2 MiB) = 1 MiB.
  AlphaBetaOptions middle;
  middle.switch_rule = SwitchRule::GeometricMean;
  EXPECT_EQ(fit_alpha_beta(pts, middle)[1].min_bytes, 1048576u);
  // Band 2's line below band 1's across the gap: band 2 starts just after band 1's last size.
  std::vector<SizedTime> fast;
  for (std::uint64_t b = 4096; b <= 524288; b *= 2) fast.push_back({b, 10e-6 + b / 20e9});
  for (std::uint64_t b = 2097152; b <= (1ull << 30); b *= 2) fast.push_back({b, 12e-6 + b / 300e9});
  const auto fb = fit_alpha_beta(fast, faster);
  ASSERT_EQ(fb.size(), 2u);
  EXPECT_EQ(fb[1].min_bytes, 524289u);
}

TEST(FitAlphaBeta, CrossValidationPicksTheRuleThatPredictsLeftOutSizes) {
  // Times that follow the faster of two lines (switch at their crossing, ~429 kB): leaving
  // out 256 KiB, the geometric mean of its neighbours' gap (256 KiB) would put it on the
  // slow line (+34 %), the faster-line rule keeps it exact.
  std::vector<SizedTime> pts;
  for (std::uint64_t b = 4096; b <= (1ull << 30); b *= 2)
    pts.push_back({b, std::min(10e-6 + b / 20e9, 30e-6 + b / 300e9)});
  AlphaBetaChoice choice;
  const auto bands = fit_alpha_beta(pts, {}, &choice);
  ASSERT_EQ(bands.size(), 2u);
  EXPECT_EQ(choice.rule, SwitchRule::FasterLine);
  EXPECT_LT(choice.faster_line_cost, 1e-12);
  EXPECT_GT(choice.geometric_mean_cost, 0.1);
  // A given rule is used as is, without cross-validation.
  AlphaBetaOptions middle;
  middle.switch_rule = SwitchRule::GeometricMean;
  fit_alpha_beta(pts, middle, &choice);
  EXPECT_EQ(choice.rule, SwitchRule::GeometricMean);
  EXPECT_EQ(choice.geometric_mean_cost, 0);
}

TEST(FitAlphaBeta, TooFewSizesOrNoValidBand) {
  EXPECT_TRUE(fit_alpha_beta({{1024, 1e-5}}).empty());
  // Time falling with size: no band has beta > 0.
  EXPECT_TRUE(fit_alpha_beta({{1024, 2e-5}, {4096, 1e-5}}).empty());
}

TEST(FitAlphaBeta, NegativeInterceptPinsLatencyAtZero) {
  // t = bytes / 1e9 - 1 us would need alpha < 0: the fit holds alpha at 0.
  const auto bands = fit_alpha_beta({{1000000, 999e-6}, {2000000, 1999e-6}, {4000000, 3999e-6}});
  ASSERT_EQ(bands.size(), 1u);
  EXPECT_EQ(bands[0].alpha_s, 0);
  EXPECT_GT(bands[0].beta_s_per_byte, 0);
}

TEST(Fit, RecoversKnownCollectiveGemmAndDesignParameters) {
  const Truth t;
  const FitResult r = fit_profile(synthetic_dir("recover", t).string());
  // Collectives: one allreduce curve on 2 ranks, two bands within 1%.
  ASSERT_EQ(r.profile.collectives.curves.size(), 1u);
  const sim::CollectiveCurve& c = r.profile.collectives.curves[0];
  EXPECT_EQ(c.op, sim::CollectiveOp::AllReduce);
  EXPECT_EQ(c.ranks, 2);
  ASSERT_EQ(c.segments.size(), 2u);
  EXPECT_NEAR(c.segments[0].latency_s, t.alpha1_s, 0.01 * t.alpha1_s);
  EXPECT_NEAR(c.segments[0].bus_bandwidth_Bps, t.busbw1_Bps, 0.01 * t.busbw1_Bps);
  EXPECT_NEAR(c.segments[1].latency_s, t.alpha2_s, 0.01 * t.alpha2_s);
  EXPECT_NEAR(c.segments[1].bus_bandwidth_Bps, t.busbw2_Bps, 0.01 * t.busbw2_Bps);
  EXPECT_LT(c.source.fit_error, 0.01);
  EXPECT_EQ(c.source.kind, sim::SourceKind::Measured);
  EXPECT_NE(c.source.citation.find("bench.csv:2-"), std::string::npos) << c.source.citation;
  // GEMM model (the form cross-validation chose, fit_compute_test.cpp has both): the
  // measured rates within 1%.
  const sim::GemmTable& g = r.profile.compute.gemm_tables.at(sim::Precision::BF16);
  for (double m : {1024.0, 4096.0})
    for (double n : {1024.0, 4096.0})
      for (double k : {1024.0, 8192.0})
        EXPECT_NEAR(g.rate_flops_per_s(m, n, k), t.rate(m, n, k), 0.01 * t.rate(m, n, k))
            << m << "x" << n << "x" << k;
  EXPECT_LT(g.source.fit_error, 0.01);
  // Decomposed per-chunk overhead.
  const sim::Sourced* o = r.profile.designs.find("decomposed", "per_chunk_overhead_s");
  ASSERT_NE(o, nullptr);
  EXPECT_NEAR(o->value, t.per_chunk_overhead_s, 0.01 * t.per_chunk_overhead_s);
  // Carried numbers keep their source.
  EXPECT_EQ(r.profile.compute.peak_flops_per_s.at(sim::Precision::BF16).source.kind,
            sim::SourceKind::Datasheet);
  EXPECT_EQ(r.profile.device.nccl, "2.28.3");
}

TEST(Fit, OutputIsByteIdenticalAcrossRunsAndLoadsBack) {
  const Truth t;
  const fs::path dir = synthetic_dir("determinism", t);
  const std::string a = fit_profile(dir.string()).yaml;
  const std::string b = fit_profile(dir.string()).yaml;
  EXPECT_EQ(a, b);
  const fs::path out = dir / "p.yaml";
  write_text(out, a);
  const sim::Profile p = sim::load_profile(out.string());
  EXPECT_EQ(p.collectives.curves.size(), 1u);
}

std::string fit_error(const fs::path& dir) {
  try {
    fit_profile(dir.string());
  } catch (const config::ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(Fit, RowsFromAnotherGpuAreAnError) {
  const fs::path dir = fresh_dir("other_gpu");
  write_text(dir / "manifest.yaml", manifest_yaml("NVIDIA H200", {"bench.csv"}));
  write_text(dir / "bench.csv", synthetic_csv(Truth{}, "NVIDIA A100-SXM4-80GB"));
  const std::string err = fit_error(dir);
  EXPECT_NE(
      err.find("bench.csv:2:1: gpu 'NVIDIA A100-SXM4-80GB' is not the manifest's 'NVIDIA H200'"),
      std::string::npos)
      << err;
}

TEST(Fit, ManifestOfAnotherGpuThanTheBaseProfileIsAnError) {
  const fs::path dir = fresh_dir("other_base");
  write_text(dir / "manifest.yaml", manifest_yaml("NVIDIA H200", {"bench.csv"}));
  write_text(dir / "bench.csv", synthetic_csv(Truth{}));
  FitOptions o;
  o.base_profile = "calibration/profiles/datasheet-a100.yaml";
  try {
    fit_profile(dir.string(), o);
    FAIL() << "expected an error";
  } catch (const config::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("is not the measured GPU 'NVIDIA H200'"),
              std::string::npos)
        << e.what();
  }
}

TEST(Fit, TruncatedRowAndMissingColumnAreErrors) {
  const fs::path dir = fresh_dir("truncated");
  write_text(dir / "manifest.yaml", manifest_yaml("NVIDIA H200", {"bench.csv"}));
  std::string csv = synthetic_csv(Truth{});
  csv.resize(csv.size() - 20);  // cut the last row short
  write_text(dir / "bench.csv", csv);
  EXPECT_NE(fit_error(dir).find("a truncated row"), std::string::npos) << fit_error(dir);
  write_text(dir / "bench.csv", "gpu,driver,cuda,nccl,world,op,design\n");
  EXPECT_NE(fit_error(dir).find("missing column 'dtype'"), std::string::npos) << fit_error(dir);
  write_text(dir / "manifest.yaml", "format: 1\ngpu: x\n");
  EXPECT_NE(fit_error(dir).find("gpus"), std::string::npos) << fit_error(dir);
}

TEST(Fit, HeldOutKeysAreLeftOut) {
  const Truth t;
  const fs::path dir = fresh_dir("heldout");
  write_text(dir / "manifest.yaml", manifest_yaml("NVIDIA H200", {"bench.csv"}, "heldout.csv"));
  write_text(dir / "bench.csv", synthetic_csv(t));
  const std::string held = make_heldout_csv(dir.string());
  write_text(dir / "heldout.csv", held);
  const FitData d = load_fit_data(dir.string());
  EXPECT_FALSE(d.heldout_rows.empty());
  for (const auto& h : d.heldout_rows)
    for (const auto& r : d.rows) EXPECT_NE(split_key(h), split_key(r)) << h.where();
  // The allreduce sizes 4 KiB .. 1 GiB: sorted, every third from the second is held out.
  EXPECT_NE(held.find(",allreduce,nccl,bf16,0,0,0,16384,"), std::string::npos) << held;
  EXPECT_EQ(held.find(",allreduce,nccl,bf16,0,0,0,4096,"), std::string::npos) << held;
}

// A fit whose base profile holds curves the data did not measure keeps them (cited as
// carried): every curve at another rank count, and at the measured rank count those of
// other ops; it replaces the measured op's curves at the measured count.
TEST(Fit, CarriesBaseCurvesAtOtherRankCounts) {
  const Truth t;
  const fs::path dir = synthetic_dir("carry_ranks", t);
  FitOptions o;
  o.base_profile = "calibration/profiles/h200-nvswitch-4gpu.yaml";
  const FitResult r = fit_profile(dir.string(), o);
  const sim::Profile base = sim::load_profile(o.base_profile);
  const std::string carried = "[carried from " + o.base_profile + "]";
  std::size_t base_four = 0, base_two_other = 0, four = 0, two_other = 0, two_allreduce = 0;
  for (const auto& c : base.collectives.curves) {
    base_four += c.ranks == 4;
    base_two_other += c.ranks == 2 && c.op != sim::CollectiveOp::AllReduce;
  }
  for (const auto& c : r.profile.collectives.curves) {
    const bool is_carried = c.source.citation.find(carried) != std::string::npos;
    if (c.ranks == 4) {
      ++four;
      EXPECT_TRUE(is_carried) << c.source.citation;
    } else if (c.ranks == 2 && c.op != sim::CollectiveOp::AllReduce) {
      ++two_other;
      EXPECT_TRUE(is_carried) << c.source.citation;
    } else if (c.ranks == 2) {
      ++two_allreduce;
      EXPECT_FALSE(is_carried) << c.source.citation;
    }
  }
  EXPECT_GT(base_four, 0u);
  EXPECT_EQ(four, base_four);
  EXPECT_GT(base_two_other, 0u);
  EXPECT_EQ(two_other, base_two_other);
  EXPECT_EQ(two_allreduce, 1u);  // the synthetic data's one measured allreduce curve
}

}  // namespace
}  // namespace overlapsim::calibration
