// The shaped measurement's inputs (host only): its suite times every baseline on exactly
// the tile-wise acceptance shapes, the design's names and pair support are what the
// runner and the summaries read, and the paired loop's interval is the order-statistic one.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "kernels/bench/bench_case.hpp"
#include "kernels/bench/flags.hpp"
#include "kernels/bench/shaped_runner.hpp"
#include "kernels/bench/suite.hpp"
#include "kernels/designs/shaped.hpp"

namespace overlapsim::kernels::bench {
namespace {

const std::string kSuites = std::string(OVERLAPSIM_SOURCE_DIR) + "/benchmarks/suites/";

TEST(ShapedSuite, TimesEveryBaselineOnTheTileWiseShapes) {
  const BenchPlan shaped = load_suite(kSuites + "shaped.yaml");
  const BenchPlan tilewise = load_suite(kSuites + "tilewise_ce.yaml");
  ASSERT_EQ(shaped.cases.size(), tilewise.cases.size());
  for (std::size_t i = 0; i < shaped.cases.size(); ++i) {
    const BenchCase& s = shaped.cases[i];
    const BenchCase& t = tilewise.cases[i];
    EXPECT_EQ(s.op, t.op);
    for (const char* design : {"sequential", "decomposed", "shaped", "tilewise"})
      EXPECT_NE(std::find(s.designs.begin(), s.designs.end(), design), s.designs.end())
          << s.op << " lacks " << design;
    ASSERT_EQ(s.shapes.size(), t.shapes.size()) << s.op;
    for (std::size_t j = 0; j < s.shapes.size(); ++j) {
      EXPECT_EQ(s.shapes[j].m, t.shapes[j].m);
      EXPECT_EQ(s.shapes[j].n, t.shapes[j].n);
      EXPECT_EQ(s.shapes[j].k, t.shapes[j].k);
    }
    EXPECT_EQ(s.ctas, (std::vector<int>{4, 8, 16, 32})) << s.op;
    EXPECT_EQ(s.chunks, (std::vector<int>{2, 4})) << s.op;
    EXPECT_TRUE(s.parts) << s.op;
    EXPECT_GE(s.iterations, 20) << s.op;
  }
}

TEST(ShapedSuite, DesignNamedForTheGemmPairsItRuns) {
  for (const char* op : {"gemm+allreduce", "gemm+reducescatter", "gemm+alltoall"}) {
    const auto& designs = designs_for(CaseKind::Pair, op);
    EXPECT_NE(std::find(designs.begin(), designs.end(), "shaped"), designs.end()) << op;
    EXPECT_TRUE(ShapedDesign::supports(*parse_pair_op(op))) << op;
  }
  EXPECT_FALSE(ShapedDesign::supports(PairOp::AllGatherGemm));
  EXPECT_FALSE(ShapedDesign::supports(PairOp::GemvAllReduce));
  EXPECT_FALSE(ShapedDesign::supports(PairOp::EmbeddingAllToAll));
}

TEST(ShapedSuite, ConfigNameIsTheCsvSuffix) {
  EXPECT_EQ((ShapedConfig{16, 8, 4}).name(), "s16:c8:k4");
  EXPECT_EQ((ShapedConfig{}).name(), "s0:c0:k1");
}

// The fallbacks are named for the baseline they run, so the summary can say so.
TEST(ShapedSuite, ChoiceNamesTheBaselineItRuns) {
  PairKernels pair;
  DecomposedDesign decomposed;
  const ShapedChoice d = ShapedChoice::decomposed(pair, decomposed, 4);
  EXPECT_EQ(d.kind(), ShapedChoice::Kind::Decomposed);
  EXPECT_EQ(d.name(), "decomposed");
  EXPECT_EQ(d.chunks(), 4);
  EXPECT_EQ(d.design(), nullptr);
  const ShapedChoice s = ShapedChoice::sequential(pair);
  EXPECT_EQ(s.kind(), ShapedChoice::Kind::Sequential);
  EXPECT_EQ(s.name(), "sequential");
  EXPECT_EQ(s.chunks(), 1);
}

TEST(ShapedSuite, PairedFileIsAFlag) {
  const EnvLookup none = [](const char*) -> std::optional<std::string> { return std::nullopt; };
  EXPECT_TRUE(
      parse_flags({"--op", "gemm+allreduce", "--shapes", "8x8x8"}, none).shaped_paired.empty());
  EXPECT_EQ(
      parse_flags({"--op", "gemm+allreduce", "--shapes", "8x8x8", "--shaped-paired", "p.csv"}, none)
          .shaped_paired,
      "p.csv");
  EXPECT_THROW(
      parse_flags({"--op", "gemm+allreduce", "--shapes", "8x8x8", "--shaped-paired"}, none),
      std::invalid_argument);
}

// Order statistics of the binomial(n, 1/2): n = 200 gives x(86) and x(115) (P(B <= 85) =
// 0.0200, P(B <= 86) = 0.0284); n = 10 gives x(2) and x(9) (P(B <= 1) = 11/1024).
TEST(ShapedSuite, MedianIntervalIsTheOrderStatisticOne) {
  std::vector<double> v;
  for (int i = 200; i >= 1; --i) v.push_back(i);  // unsorted on purpose
  const MedianInterval q = median_interval(v);
  EXPECT_EQ(q.count, 200);
  EXPECT_DOUBLE_EQ(q.median, 100.5);
  EXPECT_DOUBLE_EQ(q.low, 86);
  EXPECT_DOUBLE_EQ(q.high, 115);
  EXPECT_NEAR(q.coverage, 1 - 2 * 0.0200, 0.0005);
  EXPECT_GE(q.coverage, 0.95);

  std::vector<double> ten{10, 9, 8, 7, 6, 5, 4, 3, 2, 1};
  const MedianInterval t = median_interval(ten);
  EXPECT_DOUBLE_EQ(t.median, 5.5);
  EXPECT_DOUBLE_EQ(t.low, 2);
  EXPECT_DOUBLE_EQ(t.high, 9);
  EXPECT_NEAR(t.coverage, 1 - 2 * 11.0 / 1024, 1e-12);

  // Too few for 95 %: [min, max], and the coverage says so.
  const MedianInterval f = median_interval({3, 1, 2});
  EXPECT_DOUBLE_EQ(f.median, 2);
  EXPECT_DOUBLE_EQ(f.low, 1);
  EXPECT_DOUBLE_EQ(f.high, 3);
  EXPECT_NEAR(f.coverage, 0.75, 1e-12);
  EXPECT_EQ(median_interval({}).count, 0);
}

}  // namespace
}  // namespace overlapsim::kernels::bench
