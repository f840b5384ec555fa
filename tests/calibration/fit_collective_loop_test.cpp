// collectives.*.in_compute_loop_factor (calibration/fit_collective_loop.cpp and its use in
// fit_collectives.cpp): synthetic calibrate data whose pair-loop collectives run a known
// factor slower than the same collectives alone.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>

#include "calibration/fit.hpp"
#include "sim/profile/profile_load.hpp"
#include "tests/calibration/calib_test_util.hpp"

namespace overlapsim::calibration {
namespace {

namespace fs = std::filesystem;
using namespace overlapsim::calibration::testing;

// allreduce alone at 4 KiB .. 1 GiB (x2) on the truth's bands; inside pair loops
// (`designs` section) `loop_factor` times slower at 32 MiB (also measured alone) and at four
// sizes measured only there; the GEMM grid of synthetic_csv so the compute stages fit.
fs::path loop_data(const std::string& name, double loop_factor, int loop_sizes = 5) {
  const Truth t;
  const fs::path dir =
      fs::temp_directory_path() / ("overlapsim_fit_loop_test_" + name + std::to_string(::getpid()));
  fs::remove_all(dir);
  std::string csv(kBenchHeader);
  csv.pop_back();
  csv += ",ctas,case\n";
  for (unsigned long long b = 4096; b <= (1ull << 30); b *= 2)
    csv += case_row("allreduce", "nccl", 0, 0, 0, b, allreduce_s(t, static_cast<double>(b)),
                    "collectives/allreduce/ctas0/4096..1073741824");
  for (long m : {1024, 4096})
    for (long n : {1024, 4096})
      for (long k : {1024, 8192})
        csv += case_row("gemm", "cublas", m, n, k, 0, gemm_s(t, m, n, k), "gemm/gemm/cublas/grid");
  const unsigned long long loop_bytes[] = {32ull << 20, 24ull << 20, 48ull << 20, 96ull << 20,
                                           192ull << 20};
  for (int i = 0; i < loop_sizes; ++i) {
    const unsigned long long b = loop_bytes[i];
    csv += case_row("allreduce", "nccl", 4096, 4096, 1024 * (i + 1), b,
                    loop_factor * allreduce_s(t, static_cast<double>(b)),
                    "designs/gemm+allreduce/sequential/shapes");
  }
  write_text(dir / "manifest.yaml", manifest_yaml("NVIDIA H200", {"bench.csv"}));
  write_text(dir / "bench.csv", csv);
  return dir;
}

const sim::CollectiveCurve& allreduce_curve(const sim::Profile& p) {
  const sim::CollectiveCurve* c = p.collectives.find(
      sim::CollectiveOp::AllReduce, sim::Algorithm::Auto, sim::CommScope::IntraNode, 2, 0);
  EXPECT_NE(c, nullptr);
  return *c;
}

TEST(FitInComputeLoopFactor, RecoversAKnownFactorWithinOnePercent) {
  const fs::path dir = loop_data("known", 1.06);
  const FitResult r = fit_profile(dir.string());
  const sim::CollectiveCurve& c = allreduce_curve(r.profile);
  ASSERT_TRUE(c.in_compute_loop_factor.has_value());
  EXPECT_NEAR(c.in_loop_factor(), 1.06, 0.01 * 1.06);
  EXPECT_EQ(c.in_compute_loop_factor->source.kind, sim::SourceKind::Measured);
  EXPECT_GE(c.in_compute_loop_factor->source.fit_error, 0);
  // The factor cites the loop rows (bench.csv: the header, 19 alone rows, 8 GEMMs, then the
  // loop rows on lines 29-33).
  EXPECT_NE(c.in_compute_loop_factor->source.citation.find("bench.csv:29-33"), std::string::npos)
      << c.in_compute_loop_factor->source.citation;
  // The curve is the alone one: its time at an alone size is the truth.
  const Truth t;
  EXPECT_NEAR(c.time_s(256ull << 20, 2), allreduce_s(t, 256.0 * 1048576),
              1e-3 * allreduce_s(t, 256.0 * 1048576));
  EXPECT_NE(r.yaml.find("in_compute_loop_factor: {value: "), std::string::npos);
  // Two fits of the same data are the same bytes.
  EXPECT_EQ(fit_profile(dir.string()).yaml, r.yaml);
  fs::remove_all(dir);
}

TEST(FitInComputeLoopFactor, CollectivesAsFastInTheLoopGetNoFactor) {
  const fs::path dir = loop_data("none", 1.0);
  const FitResult r = fit_profile(dir.string());
  const sim::CollectiveCurve& c = allreduce_curve(r.profile);
  EXPECT_NEAR(c.in_loop_factor(), 1.0, 1e-3);
  fs::remove_all(dir);
}

TEST(FitInComputeLoopFactor, OneLoopRowIsTooFewAndSaysSo) {
  const fs::path dir = loop_data("one", 1.06, 1);
  const FitResult r = fit_profile(dir.string());
  const sim::CollectiveCurve& c = allreduce_curve(r.profile);
  ASSERT_TRUE(c.in_compute_loop_factor.has_value());
  EXPECT_EQ(c.in_loop_factor(), 1.0);
  EXPECT_EQ(c.in_compute_loop_factor->source.kind, sim::SourceKind::Assumed);
  EXPECT_NE(c.in_compute_loop_factor->source.citation.find("not measured"), std::string::npos);
  fs::remove_all(dir);
}

// The factor alone, against a given curve: the geometric mean of measured / curve, and 1
// where leaving each row out says a factor predicts worse than none.
TEST(FitInComputeLoopFactor, GeometricMeanAndLeaveOneOut) {
  sim::CollectiveCurve curve;
  curve.op = sim::CollectiveOp::AllReduce;
  curve.ranks = 2;
  curve.segments = {{0, 0.0, 1e9}};  // 1 ns per byte
  std::vector<Measurement> rows(3);
  const double ratios[] = {1.02, 1.05, 1.08};
  for (int i = 0; i < 3; ++i) {
    rows[i].file = "x.csv";
    rows[i].line = i + 2;
    rows[i].bytes = 1000000ull * (i + 1);
    rows[i].time_s = ratios[i] * 1e-9 * static_cast<double>(rows[i].bytes);
  }
  std::vector<const Measurement*> ptrs = {&rows[0], &rows[1], &rows[2]};
  const InLoopFactorFit f = fit_in_compute_loop_factor(curve, ptrs, "d");
  EXPECT_NEAR(f.factor.value, std::cbrt(1.02 * 1.05 * 1.08), 5e-4);  // written to 4 digits
  EXPECT_NE(f.factor.source.citation.find("x.csv:2-4"), std::string::npos)
      << f.factor.source.citation;
  // Ratios on both sides of 1: any factor fitted from two of them misses the third by more
  // than 1 does.
  rows[0].time_s = 0.97e-9 * 1e6;
  rows[1].time_s = 1.03e-9 * 2e6;
  rows[2].time_s = 1.00e-9 * 3e6;
  const InLoopFactorFit g = fit_in_compute_loop_factor(curve, ptrs, "d");
  EXPECT_EQ(g.factor.value, 1.0);
  EXPECT_EQ(g.factor.source.kind, sim::SourceKind::Measured);
}

}  // namespace
}  // namespace overlapsim::calibration
