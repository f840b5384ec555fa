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

}  // namespace fit_interference_test
}  // namespace overlapsim::calibration
