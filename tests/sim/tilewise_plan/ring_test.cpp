// The ring route's timeline (sim/tilewise_plan/ring.hpp) against hand-worked cases: the
// running sum's hops, a stall carried along the ring, the all-reduce's phase 2 by copy
// engines (one stream, own streams, contention) and by the tail kernel, row chunks, the slab
// order (plain and skewed).
#include "sim/tilewise_plan/ring.hpp"

#include <gtest/gtest.h>

namespace overlapsim::tilewise_plan {
namespace {

// 3 ranks, one group a part, one tile a part on one CTA: waves of 1 s; 1 byte a group and a
// copy of `copy_s_per_byte` s a byte, no fixed costs.
RingProblem three_ranks(Collective op, double copy_s_per_byte) {
  RingProblem p;
  p.op = op;
  p.world = 3;
  p.tiles = 3;
  p.ctas = 1;
  p.gemm_s = 3;
  p.bytes = 3;
  p.copy_s = linear_time(0, 1 / copy_s_per_byte);
  return p;
}

TEST(TilewisePlanRing, HiddenHopsEndWithTheGemm) {
  // Part 0 done at 1, copied by 2; part 1 done at 2 (its sum arrived at 2), copied by 3;
  // the own part done at 3 with its sum there at 3.
  const RingPlan plan = plan_ring(three_ranks(Collective::ReduceScatter, 1));
  EXPECT_DOUBLE_EQ(plan.gemm_end_s, 3);
  EXPECT_DOUBLE_EQ(plan.comm_end_s, 3);
  EXPECT_DOUBLE_EQ(plan.stall_s, 0);
  EXPECT_DOUBLE_EQ(plan.end_s, 3);
}

TEST(TilewisePlanRing, SlowHopsStallEachLaterPart) {
  // Copies of 2 s: part 1's sum arrives at 3 (ready at 2: 1 s stall), is passed on by 5;
  // the own part, ready at 4, waits for it: 1 s more.
  const RingPlan plan = plan_ring(three_ranks(Collective::ReduceScatter, 2));
  EXPECT_DOUBLE_EQ(plan.stall_s, 2);
  EXPECT_DOUBLE_EQ(plan.end_s, 5);
}

TEST(TilewisePlanRing, AllReducePhaseTwoByCopyEngines) {
  RingProblem p = three_ranks(Collective::AllReduce, 1);
  // The own part reduced at 3, then two copies of 1 s on the comm stream.
  EXPECT_DOUBLE_EQ(plan_ring(p).end_s, 5);
  // Every rank copying to every peer at once: each copy x (1 + 0.5 (3 - 2)).
  p.phase2_contention = 0.5;
  EXPECT_DOUBLE_EQ(plan_ring(p).end_s, 6);
  // On streams of their own: the same here (nothing else waits on the comm stream).
  p.phase2_contention = 0;
  p.phase2_own_streams = true;
  const RingPlan own = plan_ring(p);
  EXPECT_DOUBLE_EQ(own.phase2_end_s, 5);
  EXPECT_DOUBLE_EQ(own.comm_end_s, 2 + 1);
}

TEST(TilewisePlanRing, TailKernelCarriesTheLastOwnGroupAfterTheGemm) {
  // 2 groups a part, 6 tiles on one CTA (waves of 1 s), copies free: the GEMM ends at 6.
  RingProblem p = three_ranks(Collective::AllReduce, 1);
  p.groups_per_part = 2;
  p.tiles = 6;
  p.gemm_s = 6;
  p.bytes = 6;
  p.copy_s = linear_time(0, 1e300);
  p.phase2 = Phase2::TailKernel;
  p.tail_s = linear_time(0.5, 1);  // 0.5 s + 1 s a byte, with every peer at once
  // Own group 0 by the copy engines (free), the last one (1 byte) by the kernel at 6.
  EXPECT_DOUBLE_EQ(plan_ring(p).end_s, 6 + 1.5);
  // The whole own part (2 bytes) by the kernel.
  p.tail_whole_part = true;
  EXPECT_DOUBLE_EQ(plan_ring(p).end_s, 6 + 2.5);
}

TEST(TilewisePlanRing, RowChunksOverlapPhaseTwoWithTheNextChunk) {
  // 6 tiles on one CTA, 2 row chunks of 3 tiles (one a part), 1 byte a group, copies 1 s.
  RingProblem p = three_ranks(Collective::AllReduce, 1);
  p.tiles = 6;
  p.gemm_s = 6;
  p.bytes = 6;
  p.row_chunks = 2;
  // Chunk 0 as above ends at 3, its phase 2 holds the comm stream to 5; chunk 1's first
  // hop waits for it (copied 5 to 6), its part 1 stalls to 6, passed on by 7, own part at 7,
  // phase 2 to 9.
  EXPECT_DOUBLE_EQ(plan_ring(p).end_s, 9);
  // Phase 2 on its own streams leaves the comm stream to chunk 1's hops: 6, then 2 s.
  p.phase2_own_streams = true;
  EXPECT_DOUBLE_EQ(plan_ring(p).end_s, 8);
}

TEST(TilewisePlanRing, RowChunksPayTheirPartialLastWaves) {
  // 6 tiles on 2 CTAs: 3 waves of 1 s whole; a chunk of 3 tiles takes 2 waves.
  RingProblem p = three_ranks(Collective::AllReduce, 1);
  p.tiles = 6;
  p.ctas = 2;
  p.gemm_s = 3;
  p.bytes = 6;
  p.copy_s = linear_time(0, 1e300);
  EXPECT_DOUBLE_EQ(plan_ring(p).end_s, 3);
  p.row_chunks = 2;
  EXPECT_DOUBLE_EQ(plan_ring(p).end_s, 4);
}

// 6 tiles on one CTA (waves of 1 s), 2 slabs of 3 sub-slabs of one tile, 1 byte a group and
// copies of 1 s: the units (slab, position) in visiting order.
RingProblem two_slabs(bool skew) {
  RingProblem p = three_ranks(Collective::AllReduce, 1);
  p.tiles = 6;
  p.gemm_s = 6;
  p.bytes = 6;
  p.slabs = 2;
  p.slab_skew = skew;
  return p;
}

TEST(TilewisePlanRing, SlabOrderRunsPhaseTwoUnderTheNextSlab) {
  // (0, 0) at 1, hop 1-2; (0, 1) at 2, hop 2-3; own (0, 2) at 3, phase 2 on the comm stream
  // 3-5. (1, 0) at 4, its hop waits for phase 2: 5-6; (1, 1) stalls 5 -> 6, hop 6-7; own
  // (1, 2) at 7, phase 2 7-9.
  RingProblem p = two_slabs(false);
  RingPlan plan = plan_ring(p);
  EXPECT_DOUBLE_EQ(plan.stall_s, 1);
  EXPECT_DOUBLE_EQ(plan.gemm_end_s, 7);
  EXPECT_DOUBLE_EQ(plan.end_s, 9);
  // Phase 2 on its own streams: slab 1's hops 4-5 and 5-6 do not wait; own (1, 2) at 6,
  // phase 2 6-8.
  p.phase2_own_streams = true;
  plan = plan_ring(p);
  EXPECT_DOUBLE_EQ(plan.stall_s, 0);
  EXPECT_DOUBLE_EQ(plan.end_s, 8);
}

TEST(TilewisePlanRing, SkewedSlabsVisitBySteps) {
  // Order (0,0) (1,0) (0,1) (1,1) (0,2) (1,2): each running sum arrives a unit early, so
  // the GEMM never stalls (6 s); phase 2 of (0, 2) 5-7 on the comm stream, of (1, 2) 7-9.
  const RingPlan plan = plan_ring(two_slabs(true));
  EXPECT_DOUBLE_EQ(plan.stall_s, 0);
  EXPECT_DOUBLE_EQ(plan.gemm_end_s, 6);
  EXPECT_DOUBLE_EQ(plan.end_s, 9);
}

TEST(TilewisePlanRing, SlabsShareOneCallsWaves) {
  // 6 tiles on 2 CTAs (3 waves of 1 s), copies free: 2 row chunks pay a partial last wave
  // each (4 s, above); 2 slabs in one call do not.
  RingProblem p = two_slabs(false);
  p.ctas = 2;
  p.gemm_s = 3;
  p.copy_s = linear_time(0, 1e300);
  EXPECT_DOUBLE_EQ(plan_ring(p).end_s, 3);
}

TEST(TilewisePlanRing, TailKernelCarriesTheLastSlabsOwnGroup) {
  // Copies free, so the GEMM ends at 6: slab 0's own group by the copy engines, slab 1's
  // (1 byte) by the kernel after the GEMM.
  RingProblem p = two_slabs(false);
  p.copy_s = linear_time(0, 1e300);
  p.phase2 = Phase2::TailKernel;
  p.tail_s = linear_time(0.5, 1);
  EXPECT_DOUBLE_EQ(plan_ring(p).end_s, 6 + 1.5);
}

}  // namespace
}  // namespace overlapsim::tilewise_plan
