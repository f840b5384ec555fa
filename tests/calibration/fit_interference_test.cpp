// compute.concurrent_comm_slowdown: the median, over the interference pairs measured at
// NCCL's default CTAs, of a GEMM burst's time beside the collectives over its time alone;
// rows at a CTA limit, and the collectives' own rows, do not enter it.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "calibration/fit.hpp"
#include "tests/calibration/fit_stage_util.hpp"

namespace overlapsim::calibration {
namespace fit_interference_test {

Measurement row(int line, const std::string& design, long m, std::uint64_t bytes, int ctas,
                double time_s) {
  Measurement r;
  r.file = "calibration.csv";
  r.line = line;
  r.op = "interference";
  r.design = design;
  r.dtype = "bf16";
  r.m = m;
  r.n = 8192;
  r.k = 4096;
  r.bytes = bytes;
  r.chunks = ctas;
  r.time_s = r.time_min_s = r.time_max_s = time_s;
  return r;
}

testing::StageOutput fit(const FitData& data) {
  return testing::run_stage(fit_concurrent_comm_slowdown, data);
}

TEST(FitConcurrentCommSlowdown, MedianOfTheGemmRatiosAtTheDefaultCtas) {
  FitData data;
  data.label = "calibration/data/x";
  int line = 2;
  // Default CTAs: ratios 1.02, 1.10, 1.06 (median 1.06).
  const std::vector<std::pair<const char*, double>> pairs = {
      {"allreduce", 1.02}, {"alltoall", 1.10}, {"allreduce", 1.06}};
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    const std::string other = pairs[i].first;
    const long m = 4096 * static_cast<long>(i + 1);
    data.rows.push_back(row(line++, "gemm|" + other + ":alone", m, 1 << 20, 0, 1e-3));
    data.rows.push_back(
        row(line++, "gemm|" + other + ":beside", m, 1 << 20, 0, pairs[i].second * 1e-3));
    // The collective as the victim, and the GEMM at a CTA limit: not this factor.
    data.rows.push_back(row(line++, other + "|gemm:alone", m, 1 << 20, 0, 1e-4));
    data.rows.push_back(row(line++, other + "|gemm:beside", m, 1 << 20, 0, 9e-4));
    data.rows.push_back(row(line++, "gemm|" + other + ":alone", m, 1 << 20, 8, 1e-3));
    data.rows.push_back(row(line++, "gemm|" + other + ":beside", m, 1 << 20, 8, 2e-3));
  }
  const testing::StageOutput f = fit(data);
  ASSERT_TRUE(f.profile.compute.concurrent_comm_slowdown.has_value());
  const sim::Sourced& s = *f.profile.compute.concurrent_comm_slowdown;
  EXPECT_DOUBLE_EQ(s.value, 1.06);
  EXPECT_EQ(s.source.kind, sim::SourceKind::Measured);
  EXPECT_NE(s.source.citation.find("median of 3 pairs"), std::string::npos) << s.source.citation;
  EXPECT_NE(s.source.citation.find("calibration/data/x: calibration.csv:"), std::string::npos);
  EXPECT_EQ(f.comments.count("compute.concurrent_comm_slowdown"), 1u);
}

TEST(FitConcurrentCommSlowdown, TooFewPairsLeaveTheBaseValue) {
  FitData data;
  data.label = "calibration/data/x";
  data.rows.push_back(row(2, "gemm|allreduce:alone", 4096, 1 << 20, 0, 1e-3));
  data.rows.push_back(row(3, "gemm|allreduce:beside", 4096, 1 << 20, 0, 1.1e-3));
  EXPECT_FALSE(fit(data).profile.compute.concurrent_comm_slowdown.has_value());
}

// One GEMM shape (m rows) alone in `alone_s`, with its ratio beside an all-reduce and
// beside an all-to-all.
struct ShapePairs {
  long m;
  double alone_s, r_allreduce, r_alltoall;
};

FitData shapes_data(std::initializer_list<ShapePairs> shapes) {
  FitData data;
  data.label = "calibration/data/x";
  int line = 2;
  for (const ShapePairs& sp : shapes)
    for (const auto& [other, r] : {std::pair<const char*, double>{"allreduce", sp.r_allreduce},
                                   {"alltoall", sp.r_alltoall}}) {
      const std::string gemm = std::string("gemm|") + other;
      data.rows.push_back(row(line++, gemm + ":alone", sp.m, 1 << 20, 0, sp.alone_s));
      data.rows.push_back(row(line++, gemm + ":beside", sp.m, 1 << 20, 0, r * sp.alone_s));
    }
  return data;
}

TEST(FitConcurrentCommGemmSlowdown, PerShapeMediansMadeNonIncreasingInKernelTime) {
  // Kernel times 10, 20, 40, 100 us, 1 and 2 ms; shape medians 1.8, 2.0, 1.9, 1.4, 1.05,
  // 1.05.
  const testing::StageOutput f = fit(shapes_data({{1024, 10e-6, 1.7, 1.9},
                                                  {2048, 20e-6, 2.0, 2.0},
                                                  {4096, 40e-6, 1.8, 2.0},
                                                  {8192, 100e-6, 1.4, 1.4},
                                                  {16384, 1e-3, 1.04, 1.06},
                                                  {32768, 2e-3, 1.05, 1.05}}));
  const sim::LogCurve& c = f.profile.compute.concurrent_comm_gemm_slowdown;
  // Pool adjacent violators: 1.8 < 2.0 pools to 1.9 (equal weights), then 1.9 joins them;
  // the flat run 10-40 us keeps its ends.
  ASSERT_EQ(c.points.size(), 5u);
  EXPECT_DOUBLE_EQ(c.points[0].first, 10e-6);
  EXPECT_NEAR(c.points[0].second, 1.9, 1e-12);
  EXPECT_DOUBLE_EQ(c.points[1].first, 40e-6);
  EXPECT_NEAR(c.points[1].second, 1.9, 1e-12);
  EXPECT_NEAR(c.points[2].second, 1.4, 1e-12);
  EXPECT_NEAR(c.points[3].second, 1.05, 1e-12);
  EXPECT_NEAR(c.points[4].second, 1.05, 1e-12);
  EXPECT_EQ(c.source.kind, sim::SourceKind::Measured);
  EXPECT_NE(c.source.citation.find("6 shapes, 12 pairs"), std::string::npos) << c.source.citation;
  // The factor: the pairs of kernels of 500 us or more alone (1.04, 1.06, 1.05, 1.05).
  ASSERT_TRUE(f.profile.compute.concurrent_comm_slowdown.has_value());
  EXPECT_NEAR(f.profile.compute.concurrent_comm_slowdown->value, 1.05, 1e-12);
}

TEST(FitConcurrentCommGemmSlowdown, TwoShapesMakeNoCurve) {
  const FitData data = shapes_data({{1024, 10e-6, 1.7, 1.9}, {2048, 1e-3, 1.1, 1.1}});
  EXPECT_TRUE(fit(data).profile.compute.concurrent_comm_gemm_slowdown.empty());
}

}  // namespace fit_interference_test
}  // namespace overlapsim::calibration
