// The shaped measurement's inputs (host only): its suite times every baseline on exactly
// the tile-wise acceptance shapes, and the design's names and pair support are what the
// runner and the summaries read.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "kernels/bench/bench_case.hpp"
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

}  // namespace
}  // namespace overlapsim::kernels::bench
