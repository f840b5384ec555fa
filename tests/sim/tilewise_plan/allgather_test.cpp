// AllGather+GEMM's consumer timeline (sim/tilewise_plan/allgather.hpp) against hand-worked
// cases: a hidden transport, a stalled chunk, the stall carried to the chunks after it, the
// two push modes.
#include "sim/tilewise_plan/allgather.hpp"

#include <gtest/gtest.h>

namespace overlapsim::tilewise_plan {
namespace {

// 2 ranks, one chunk a block, 4 tiles on 1 CTA: waves of 1 s, each block 2 tiles.
AllGatherProblem two_ranks(double step_s) {
  AllGatherProblem p;
  p.world = 2;
  p.tiles = 4;
  p.ctas = 1;
  p.gemm_s = 4;
  p.step_s = step_s;
  return p;
}

TEST(TilewisePlanAllGather, HiddenTransportEndsWithTheGemm) {
  const AllGatherPlan plan = plan_allgather_consumer(two_ranks(1));
  ASSERT_EQ(plan.done_s.size(), 2u);
  EXPECT_DOUBLE_EQ(plan.arrival_s[0], 0);  // the own block
  EXPECT_DOUBLE_EQ(plan.arrival_s[1], 1);
  EXPECT_DOUBLE_EQ(plan.done_s[0], 2);
  EXPECT_DOUBLE_EQ(plan.end_s, 4);
}

TEST(TilewisePlanAllGather, LateBlockEndsItsTilesAfterArrival) {
  // The peer's block arrives at 3; its two tiles take 2 waves on the one CTA.
  EXPECT_DOUBLE_EQ(plan_allgather_consumer(two_ranks(3)).end_s, 5);
}

TEST(TilewisePlanAllGather, RotatedStepsArriveOneAfterAnotherAndStallsCarry) {
  // 4 ranks, 8 tiles on 2 CTAs: waves of 1 s, a block of 2 tiles = one wave.
  AllGatherProblem p;
  p.world = 4;
  p.tiles = 8;
  p.ctas = 2;
  p.gemm_s = 4;
  p.step_s = 1.5;  // arrivals 1.5, 3, 4.5
  const AllGatherPlan plan = plan_allgather_consumer(p);
  ASSERT_EQ(plan.done_s.size(), 4u);
  EXPECT_DOUBLE_EQ(plan.done_s[1], 2.5);
  EXPECT_DOUBLE_EQ(plan.done_s[2], 4);
  EXPECT_DOUBLE_EQ(plan.done_s[3], 5.5);
  EXPECT_DOUBLE_EQ(plan.end_s, 5.5);
  // A stream a peer: every block at 2; the GEMM then runs on unstalled after block 1.
  p.per_peer = true;
  p.step_s = 2;
  const AllGatherPlan par = plan_allgather_consumer(p);
  EXPECT_DOUBLE_EQ(par.arrival_s[3], 2);
  EXPECT_DOUBLE_EQ(par.done_s[1], 3);
  EXPECT_DOUBLE_EQ(par.end_s, 5);
}

TEST(TilewisePlanAllGather, ChunksLetTheGemmStartOnABlocksFirstRows) {
  // 2 ranks, 2 chunks a block, 8 tiles on 2 CTAs (waves of 1 s, a chunk = one wave); one
  // chunk step 1.5 s: peer chunks at 1.5 and 3.
  AllGatherProblem p;
  p.world = 2;
  p.chunks = 2;
  p.tiles = 8;
  p.ctas = 2;
  p.gemm_s = 4;
  p.step_s = 1.5;
  const AllGatherPlan plan = plan_allgather_consumer(p);
  ASSERT_EQ(plan.done_s.size(), 4u);
  EXPECT_DOUBLE_EQ(plan.done_s[2], 3);    // max(W 3, 2 + 1, 1.5 + 1)
  EXPECT_DOUBLE_EQ(plan.done_s[3], 4);    // max(W 4, 3 + 1, 3 + 1)
  EXPECT_DOUBLE_EQ(plan.end_s, 4);
}

TEST(TilewisePlanAllGather, NeverShorterThanTheTransport) {
  AllGatherProblem p = two_ranks(0);
  p.gemm_s = 0;
  p.step_s = 7;
  EXPECT_DOUBLE_EQ(plan_allgather_consumer(p).end_s, 7);
}

}  // namespace
}  // namespace overlapsim::tilewise_plan
