// The GEMM model fit: synthetic times from a known wave-quantised model are recovered
// (tile shape chosen by cross-validation, coefficients within 1 %), and the chosen model
// survives the profile YAML round trip.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "calibration/fit.hpp"
#include "calibration/fit_gemm_model.hpp"
#include "calibration/split.hpp"
#include "config/error.hpp"
#include "sim/profile/gemm_table.hpp"
#include "sim/profile/profile_load.hpp"
#include "tests/calibration/calib_test_util.hpp"

namespace overlapsim::calibration {
namespace {

namespace fs = std::filesystem;
using namespace overlapsim::calibration::testing;

constexpr double kLaunch_s = 1.03e-6;  // datasheet-h200.yaml's launch_overhead_s

sim::GemmWaveModel truth() {
  sim::GemmWaveModel w;
  w.fixed_s = 6e-6;
  w.output_s_per_element = 1.5e-13;
  w.mainloop_flops_per_s = 8e14;
  w.tile_m = 128;
  w.tile_n = 256;
  w.sms = 132;
  return w;
}

// Shapes off the power-of-two grid, where whole waves of 128x256 tiles differ from the other
// candidates' (and from m * n); some below one wave (unrounded).
std::vector<GemmShapeTimes> synthetic_shapes(const sim::GemmWaveModel& w) {
  std::vector<GemmShapeTimes> out;
  for (std::int64_t m : {1000, 2500, 5000, 9000})
    for (std::int64_t n : {1536, 4000, 7168})
      for (std::int64_t k : {512, 2048, 8192}) {
        const double t = kLaunch_s + w.time_s(static_cast<double>(m), static_cast<double>(n),
                                              static_cast<double>(k));
        out.push_back({{m, n, k}, {t}, t});
      }
  return out;
}

void expect_near_rel(double got, double want, double rel, const char* what) {
  EXPECT_NEAR(got, want, rel * std::abs(want)) << what;
}

TEST(GemmWaveModel, ChargesWholeWavesFromOneFullWaveOn) {
  const sim::GemmWaveModel w = truth();
  // 1000 x 1536: 8 x 6 = 48 tiles < 132 SMs: not rounded (K is split there).
  EXPECT_DOUBLE_EQ(w.charged_outputs(1000, 1536), 1000.0 * 1536);
  // 2500 x 4000: 20 x 16 = 320 tiles -> 3 waves of 132 tiles of 128 x 256.
  EXPECT_DOUBLE_EQ(w.charged_outputs(2500, 4000), 3.0 * 132 * 128 * 256);
  EXPECT_DOUBLE_EQ(w.time_s(2500, 4000, 1000),
                   6e-6 + 3.0 * 132 * 128 * 256 * (1.5e-13 + 2 * 1000 / 8e14));
  sim::GemmWaveModel plain = w;
  plain.tile_m = plain.tile_n = 0;
  EXPECT_DOUBLE_EQ(plain.charged_outputs(2500, 4000), 2500.0 * 4000);
}

// A kernel that never splits K (our own GEMM) pays a whole wave for a partial one.
TEST(GemmWaveModel, WholeTilesBelowOneWaveChargeTheFullWave) {
  sim::GemmWaveModel w = truth();
  w.whole_tiles_below_one_wave = true;
  // 1000 x 1536: 48 tiles of 128 x 256 on 132 SMs: one wave, as long as 132 tiles.
  EXPECT_DOUBLE_EQ(w.charged_outputs(1000, 1536), 132.0 * 128 * 256);
  EXPECT_DOUBLE_EQ(w.time_s(1000, 1536, 4096),
                   6e-6 + 132.0 * 128 * 256 * (1.5e-13 + 2 * 4096 / 8e14));
  // From one full wave on, the same as splitting K below it.
  EXPECT_DOUBLE_EQ(w.charged_outputs(2500, 4000), 3.0 * 132 * 128 * 256);
  w.validate();
  sim::GemmWaveModel no_tile = w;
  no_tile.tile_m = no_tile.tile_n = 0;
  EXPECT_THROW(no_tile.validate(), std::invalid_argument);
}

TEST(FitGemmWaveModel, RecoversWholeTileCoefficientsBelowOneWave) {
  sim::GemmWaveModel w = truth();
  w.whole_tiles_below_one_wave = true;
  const sim::GemmWaveModel fit =
      fit_gemm_wave_model(synthetic_shapes(w), kLaunch_s, 128, 256, 132, true);
  ASSERT_FALSE(fit.empty());
  EXPECT_TRUE(fit.whole_tiles_below_one_wave);
  expect_near_rel(fit.fixed_s, w.fixed_s, 0.01, "fixed_s");
  expect_near_rel(fit.mainloop_flops_per_s, w.mainloop_flops_per_s, 0.01, "mainloop");
}

TEST(FitGemmWaveModel, RecoversKnownCoefficientsWithTheTrueTile) {
  const sim::GemmWaveModel w = truth();
  const sim::GemmWaveModel fit = fit_gemm_wave_model(synthetic_shapes(w), kLaunch_s, 128, 256, 132);
  ASSERT_FALSE(fit.empty());
  expect_near_rel(fit.fixed_s, w.fixed_s, 0.01, "fixed_s");
  expect_near_rel(fit.output_s_per_element, w.output_s_per_element, 0.01, "output_s_per_element");
  expect_near_rel(fit.mainloop_flops_per_s, w.mainloop_flops_per_s, 0.01, "mainloop_flops_per_s");
  EXPECT_EQ(fit.tile_m, 128);
  EXPECT_EQ(fit.tile_n, 256);
}

TEST(FitGemmWaveModel, CoefficientsStayNonNegative) {
  // Times falling with the output area at fixed K need a negative per-output cost: the fit
  // drops that term instead.
  std::vector<GemmShapeTimes> shapes;
  for (std::int64_t m : {1024, 2048, 4096}) {
    const double t = kLaunch_s + 2.0 * m * 1024 * 1024 / 5e14 * (1 - 0.1 * std::log2(m / 1024.0));
    shapes.push_back({{m, 1024, 1024}, {t}, t});
  }
  const sim::GemmWaveModel fit = fit_gemm_wave_model(shapes, kLaunch_s, 0, 0, 132);
  ASSERT_FALSE(fit.empty());
  EXPECT_GE(fit.fixed_s, 0);
  EXPECT_GE(fit.output_s_per_element, 0);
  EXPECT_GT(fit.mainloop_flops_per_s, 0);
}

TEST(LeaveOneShapeOut, ExactModelHasNoErrorAndQuantilesAreLinear) {
  const sim::GemmWaveModel w = truth();
  const auto shapes = synthetic_shapes(w);
  const CrossValidation cv =
      leave_one_shape_out(shapes, kLaunch_s, [&](const std::vector<GemmShapeTimes>& s) {
        sim::GemmTable t;
        t.waves = fit_gemm_wave_model(s, kLaunch_s, 128, 256, 132);
        return t;
      });
  ASSERT_EQ(cv.rel_errors.size(), shapes.size());
  EXPECT_LT(cv.max_abs, 1e-4);
  // Without the tile the same data is not a wave model any more.
  const CrossValidation plain =
      leave_one_shape_out(shapes, kLaunch_s, [&](const std::vector<GemmShapeTimes>& s) {
        sim::GemmTable t;
        t.waves = fit_gemm_wave_model(s, kLaunch_s, 0, 0, 132);
        return t;
      });
  EXPECT_GT(plain.score(), 0.01);
  EXPECT_DOUBLE_EQ(abs_quantile({-4, 1, 2, 3}, 0.5), 2.5);
  EXPECT_DOUBLE_EQ(abs_quantile({-4, 1, 2, 3}, 0.9), 3.7);
  EXPECT_DOUBLE_EQ(abs_quantile({-4, 1, 2, 3}, 1.0), 4);
}

// `design` cublas fits compute.gemm_tables, own compute.own_gemm_tables.
fs::path synthetic_gemm_dir(const std::string& name, const sim::GemmWaveModel& w,
                            const std::string& design = "cublas") {
  const fs::path dir = fs::temp_directory_path() / ("overlapsim_fit_compute_test_" + name);
  fs::remove_all(dir);
  std::string csv = kBenchHeader;
  for (const auto& s : synthetic_shapes(w)) {
    const auto [m, n, k] = s.shape;
    csv += bench_row("gemm", design, m, n, k, 0, 1, s.median_s);
  }
  write_text(dir / "bench.csv", csv);
  write_text(dir / "manifest.yaml", manifest_yaml("NVIDIA H200", {"bench.csv"}));
  return dir;
}

// One kernel with a fixed tile (our own GEMM's rows): cross-validation finds that tile.
TEST(FitCompute, ChoosesTheOwnGemmsTileByCrossValidationAndRoundTrips) {
  sim::GemmWaveModel w = truth();
  w.whole_tiles_below_one_wave = true;  // our GEMM never splits K
  const fs::path dir = synthetic_gemm_dir("waves_own", w, "own");
  const FitResult r = fit_profile(dir.string());
  EXPECT_TRUE(r.profile.compute.gemm_tables.empty());  // no cuBLAS rows
  const sim::GemmTable& t = r.profile.compute.own_gemm_tables.at(sim::Precision::BF16);
  ASSERT_TRUE(t.is_wave_model());
  EXPECT_EQ(t.waves.tile_m, 128);
  EXPECT_EQ(t.waves.tile_n, 256);
  EXPECT_FALSE(t.waves.tile_per_shape);
  EXPECT_EQ(t.waves.sms, 132);
  expect_near_rel(t.waves.fixed_s, w.fixed_s, 0.01, "fixed_s");
  expect_near_rel(t.waves.output_s_per_element, w.output_s_per_element, 0.01, "per output");
  expect_near_rel(t.waves.mainloop_flops_per_s, w.mainloop_flops_per_s, 0.01, "main loop");
  EXPECT_LT(t.source.fit_error, 0.001);
  EXPECT_EQ(t.source.kind, sim::SourceKind::Measured);
  EXPECT_NE(r.yaml.find("own_gemm_tables:"), std::string::npos);
  EXPECT_NE(r.yaml.find("tile: [128, 256]"), std::string::npos);
  EXPECT_TRUE(t.waves.whole_tiles_below_one_wave);
  EXPECT_NE(r.yaml.find("below_one_wave: whole_tiles"), std::string::npos);
  // The written profile loads back to the same model, and the fit is byte-identical.
  const sim::Profile back = sim::load_profile_string(r.yaml, "fitted.yaml");
  const sim::GemmTable& b = back.compute.own_gemm_tables.at(sim::Precision::BF16);
  ASSERT_TRUE(b.is_wave_model());
  EXPECT_EQ(b.waves.fixed_s, t.waves.fixed_s);
  EXPECT_EQ(b.waves.output_s_per_element, t.waves.output_s_per_element);
  EXPECT_EQ(b.waves.mainloop_flops_per_s, t.waves.mainloop_flops_per_s);
  EXPECT_EQ(b.waves.tile_n, 256);
  EXPECT_TRUE(b.waves.whole_tiles_below_one_wave);
  EXPECT_EQ(fit_profile(dir.string()).yaml, r.yaml);
}

// cuBLAS picks its tile per shape: the least-rounded of its tiles, by hand, and a vendor
// table fitted from such times recovers that form and round-trips as `tile: per_shape`.
TEST(FitCompute, VendorGemmQuantisesByTheBestTilePerShape) {
  sim::GemmWaveModel w = truth();
  w.tile_m = w.tile_n = 0;
  w.tile_per_shape = true;
  // 2048 x 4608: 128x128 576 tiles -> 5 waves; 128x256 / 256x128 288 -> 3 waves (x 32768);
  // 256x256 144 -> 2 waves (x 65536): the least area is 5 x 132 x 16384.
  EXPECT_DOUBLE_EQ(w.charged_outputs(2048, 4608), 5.0 * 132 * 16384);
  sim::GemmWaveModel fixed = truth();
  fixed.tile_m = fixed.tile_n = 256;
  EXPECT_DOUBLE_EQ(fixed.charged_outputs(2048, 4608), 2.0 * 132 * 65536);
  // Below one wave of every tile: not rounded.
  EXPECT_DOUBLE_EQ(w.charged_outputs(1000, 1536), 1000.0 * 1536);
  const fs::path dir = synthetic_gemm_dir("waves_vendor", w);
  const FitResult r = fit_profile(dir.string());
  const sim::GemmTable& t = r.profile.compute.gemm_tables.at(sim::Precision::BF16);
  ASSERT_TRUE(t.is_wave_model());
  EXPECT_TRUE(t.waves.tile_per_shape);
  expect_near_rel(t.waves.mainloop_flops_per_s, w.mainloop_flops_per_s, 0.01, "main loop");
  EXPECT_NE(r.yaml.find("tile: per_shape"), std::string::npos);
  const sim::Profile back = sim::load_profile_string(r.yaml, "fitted.yaml");
  EXPECT_TRUE(back.compute.gemm_tables.at(sim::Precision::BF16).waves.tile_per_shape);
  EXPECT_THROW(
      {
        sim::GemmWaveModel both = w;
        both.tile_m = both.tile_n = 128;
        both.validate();
      },
      std::invalid_argument);
}

// Times from a known best-of model (tiles with their own efficiencies, split-K and
// stream-K) on shapes between the grid points: the fit predicts every shape within 1 %.
TEST(FitGemmWaveModel, BestOfChoicesFitReproducesItsTruth) {
  sim::GemmWaveModel w;
  w.fixed_s = 4e-6;
  w.output_s_per_element = 2e-13;
  w.mainloop_flops_per_s = 7.5e14;
  w.sms = 132;
  w.max_split_k = 4;
  w.choices = {{128, 128, 1.0}, {128, 256, 1.04}, {256, 128, 1.04}, {256, 256, 1.0}, {0, 0, 0.96}};
  std::vector<GemmShapeTimes> shapes;
  for (std::int64_t m : {768, 2048, 3072, 5120, 8192})
    for (std::int64_t n : {1280, 2816, 4608, 7168})
      for (std::int64_t k : {1536, 4096, 11008}) {
        const double t = kLaunch_s + w.time_s(static_cast<double>(m), static_cast<double>(n),
                                              static_cast<double>(k));
        shapes.push_back({{m, n, k}, {t}, t});
      }
  const sim::GemmWaveModel fit = fit_gemm_best_of_model(shapes, kLaunch_s, 132, 4, true);
  ASSERT_FALSE(fit.empty());
  fit.validate();
  ASSERT_EQ(fit.choices.size(), 5u);
  EXPECT_EQ(fit.choices[0].efficiency, 1.0);
  EXPECT_TRUE(fit.choices[4].stream_k());
  for (const auto& s : shapes) {
    const auto [m, n, k] = s.shape;
    expect_near_rel(kLaunch_s + fit.time_s(static_cast<double>(m), static_cast<double>(n),
                                           static_cast<double>(k)),
                    s.median_s, 0.01, "time");
  }
  // Cross-validation picks it over the one-tile models, and the written model reloads to
  // the same times.
  const fs::path dir = synthetic_gemm_dir("best_of", w);
  const FitResult r = fit_profile(dir.string());
  const sim::GemmTable& f = r.profile.compute.gemm_tables.at(sim::Precision::BF16);
  ASSERT_TRUE(f.waves.best_of_choices()) << r.yaml;
  EXPECT_NE(r.yaml.find("      tile: best\n      sms: 132\n      choices: [[128, 128, 1], "),
            std::string::npos)
      << r.yaml;
  const sim::Profile back = sim::load_profile_string(r.yaml, "fitted.yaml");
  const sim::GemmTable& b = back.compute.gemm_tables.at(sim::Precision::BF16);
  for (double k : {1024.0, 5000.0})
    EXPECT_EQ(b.compute_s(3000, 5000, k), f.compute_s(3000, 5000, k));
}

// A suite's section named *_heldout is held out whole, and its shapes take no part in the
// every-third rule over the others.
TEST(Split, HeldOutSectionsAreHeldOutWhole) {
  std::vector<Measurement> rows;
  const auto add = [&](const char* section, std::int64_t m) {
    Measurement r;
    r.op = "gemm";
    r.design = "cublas";
    r.dtype = "bf16";
    r.m = m;
    r.n = r.k = 1024;
    r.case_key = std::string(section) + "/gemm/cublas/x..y";
    rows.push_back(r);
  };
  for (std::int64_t m : {1024, 2048, 4096, 8192, 16384}) add("gemm", m);
  add("gemm_offgrid_heldout", 3072);
  add("gemm_offgrid_heldout", 6144);
  const std::set<std::string> keys = heldout_keys(rows);
  EXPECT_EQ(keys, (std::set<std::string>{"3072x1024x1024", "6144x1024x1024", "2048x1024x1024",
                                         "16384x1024x1024"}));
  EXPECT_TRUE(in_heldout_section(rows[5]));
  EXPECT_FALSE(in_heldout_section(rows[0]));
}

TEST(FitGemmWaveModel, CorrectionGridHoldsMeasuredOverModelled) {
  // Wave-model times with every shape of k = 2048 made 5 % slower (a kernel the wave model
  // cannot know about): the correction is exactly that ratio at every measured shape.
  const sim::GemmWaveModel w = truth();
  std::vector<GemmShapeTimes> shapes = synthetic_shapes(w);
  for (auto& s : shapes)
    if (std::get<2>(s.shape) == 2048) {
      const double slow = kLaunch_s + 1.05 * (s.median_s - kLaunch_s);
      s.times_s = {slow};
      s.median_s = slow;
    }
  const sim::GemmTable t = with_time_correction(w, shapes, kLaunch_s);
  t.validate();
  ASSERT_EQ(t.time_factor.size(), 4u * 3u * 3u);
  for (const auto& s : shapes) {
    const auto [m, n, k] = s.shape;
    const double got = kLaunch_s + t.compute_s(static_cast<double>(m), static_cast<double>(n),
                                               static_cast<double>(k));
    EXPECT_NEAR(got, s.median_s, 1e-5 * s.median_s) << m << "x" << n << "x" << k;
  }
  // Between k = 512 and 2048 (log-midpoint 1024) the factor is the geometric mean.
  const double mid = t.compute_s(2500, 4000, 1024) / w.time_s(2500, 4000, 1024);
  EXPECT_NEAR(mid, std::sqrt(1.05), 1e-5);
}

TEST(FitCompute, CorrectedWaveModelRoundTripsThroughYaml) {
  // Synthetic data with a per-K slowdown the wave terms cannot express: the fit writes a
  // correction grid, and the profile reloads to the same model.
  const sim::GemmWaveModel w = truth();
  const fs::path dir = fs::temp_directory_path() / "overlapsim_fit_compute_test_corrected";
  fs::remove_all(dir);
  std::string csv = kBenchHeader;
  for (const auto& s : synthetic_shapes(w)) {
    const auto [m, n, k] = s.shape;
    const double slow = k == 2048 ? 1.08 : 1.0;
    csv += bench_row("gemm", "cublas", m, n, k, 0, 1, kLaunch_s + slow * (s.median_s - kLaunch_s));
  }
  write_text(dir / "bench.csv", csv);
  write_text(dir / "manifest.yaml", manifest_yaml("NVIDIA H200", {"bench.csv"}));
  const FitResult r = fit_profile(dir.string());
  const sim::GemmTable& t = r.profile.compute.gemm_tables.at(sim::Precision::BF16);
  ASSERT_TRUE(t.is_wave_model());
  ASSERT_FALSE(t.time_factor.empty()) << r.yaml;
  EXPECT_NE(r.yaml.find("      correction:\n        m: [1000, 2500, 5000, 9000]"),
            std::string::npos);
  const sim::Profile back = sim::load_profile_string(r.yaml, "fitted.yaml");
  const sim::GemmTable& b = back.compute.gemm_tables.at(sim::Precision::BF16);
  EXPECT_EQ(b.time_factor, t.time_factor);
  EXPECT_EQ(b.k_values, t.k_values);
  for (double k : {512.0, 1024.0, 2048.0, 8192.0})
    EXPECT_EQ(b.compute_s(3000, 5000, k), t.compute_s(3000, 5000, k));
}

TEST(FitCompute, RateGridBelowTheMeasuredShapesFollowsTheBaseCurve) {
  // Three shapes: too few for the wave model's leave-one-out, so the rate grid is written:
  // measured rates at the measured nodes, and at the added /4 and /16 axis values the base
  // efficiency curve scaled to the measured level.
  const Truth truth_rates;
  const fs::path dir = fs::temp_directory_path() / "overlapsim_fit_compute_test_grid";
  fs::remove_all(dir);
  std::string csv = kBenchHeader;
  const long shapes[3][3] = {{1024, 1024, 1024}, {4096, 1024, 1024}, {4096, 4096, 8192}};
  for (const auto& s : shapes)
    csv +=
        bench_row("gemm", "cublas", s[0], s[1], s[2], 0, 1, gemm_s(truth_rates, s[0], s[1], s[2]));
  write_text(dir / "bench.csv", csv);
  write_text(dir / "manifest.yaml", manifest_yaml("NVIDIA H200", {"bench.csv"}));
  const FitResult r = fit_profile(dir.string());
  const sim::GemmTable& g = r.profile.compute.gemm_tables.at(sim::Precision::BF16);
  ASSERT_FALSE(g.is_wave_model());
  EXPECT_EQ(g.m_values, (std::vector<double>{64, 256, 1024, 4096}));
  for (const auto& s : shapes) {
    const double m = static_cast<double>(s[0]), n = static_cast<double>(s[1]),
                 k = static_cast<double>(s[2]);
    EXPECT_NEAR(g.rate_flops_per_s(m, n, k), truth_rates.rate(m, n, k),
                1e-5 * truth_rates.rate(m, n, k));
  }
  const sim::Profile base = sim::load_profile("calibration/profiles/datasheet-h200.yaml");
  const double peak = base.compute.peak_flops_per_s.at(sim::Precision::BF16).value;
  const sim::LogCurve& curve = base.compute.gemm_efficiency.at(sim::Precision::BF16);
  double log_scale = 0;
  for (const auto& s : shapes) {
    const double flops = 2.0 * s[0] * s[1] * s[2];
    const double measured = flops / (gemm_s(truth_rates, s[0], s[1], s[2]) - truth_rates.launch_s);
    log_scale += std::log(measured / (peak * curve.at(flops))) / 3;
  }
  const double small = std::exp(log_scale) * peak * curve.at(2.0 * 64 * 64 * 64);
  EXPECT_NEAR(g.rate_flops_per_s(64, 64, 64), small, 1e-5 * small);
}

TEST(FitCompute, ProfilesWrittenBeforeTheWaveModelStillLoad) {
  // A grid profile (the fit keeps the grid for the session-1 data) has no model key;
  // `model: table` reads the same.
  const std::string yaml = fit_profile("calibration/data/h200x2-session1").yaml;
  const sim::Profile p = sim::load_profile_string(yaml, "grid.yaml");
  const sim::GemmTable& grid = p.compute.gemm_tables.at(sim::Precision::BF16);
  ASSERT_FALSE(grid.is_wave_model());
  std::string tagged = yaml;
  const auto at = tagged.find("      m: [");
  ASSERT_NE(at, std::string::npos);
  tagged.insert(at, "      model: table\n");
  const sim::Profile q = sim::load_profile_string(tagged, "tagged.yaml");
  const sim::GemmTable& same = q.compute.gemm_tables.at(sim::Precision::BF16);
  EXPECT_EQ(same.achieved_flops_per_s, grid.achieved_flops_per_s);
  EXPECT_EQ(same.compute_s(8192, 8192, 8192), grid.compute_s(8192, 8192, 8192));
}

std::string load_error(const std::string& yaml) {
  try {
    sim::load_profile_string(yaml, "p.yaml");
  } catch (const config::ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(FitCompute, BadWaveModelInAProfileIsAnError) {
  const FitResult r = fit_profile(synthetic_gemm_dir("bad", truth()).string());
  std::string yaml = r.yaml;
  const auto at = yaml.find("mainloop_flops_per_s: ");
  ASSERT_NE(at, std::string::npos);
  const auto end = yaml.find('\n', at);
  yaml.replace(at, end - at, "mainloop_flops_per_s: 0");
  EXPECT_NE(load_error(yaml).find("bf16.mainloop_flops_per_s: '0' must be positive"),
            std::string::npos)
      << load_error(yaml);
  std::string no_sms = r.yaml;
  no_sms.erase(no_sms.find("      sms: 132\n"), 15);
  EXPECT_NE(load_error(no_sms).find("sms"), std::string::npos) << load_error(no_sms);
}

}  // namespace
}  // namespace overlapsim::calibration
