// The tile-wise planner's wave groups (sim/tilewise_plan/wave_groups.hpp) against closed
// forms and brute force: the same code the kernels' tuner and the simulator plan with.
#include "sim/tilewise_plan/wave_groups.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

namespace overlapsim::tilewise_plan {
namespace {

// `waves` waves of `wave_s`, each storing `bytes`; a call of b bytes takes alpha + b / bw.
WaveGroupProblem linear(int waves, double wave_s, double bytes, double alpha_s, double bw) {
  WaveGroupProblem p;
  p.wave_s = wave_s;
  p.share_through = running_sums(std::vector<double>(static_cast<std::size_t>(waves), bytes));
  p.comm_s = linear_time(alpha_s, bw);
  return p;
}

TEST(TilewisePlanWaveGroups, ClosedForms) {
  // 4 waves of 100 us, each wave's bytes take 10 us + 50 us on the wire.
  const WaveGroupProblem p = linear(4, 100e-6, 1e6, 10e-6, 1e6 / 50e-6);
  EXPECT_EQ(p.waves(), 4);
  // One group: GEMM then everything: 400 + 10 + 200.
  EXPECT_NEAR(predict_end_s(p, {4}), 610e-6, 1e-12);
  // One group per wave: comm (60 us) hides under the next wave; the tail is the last call.
  EXPECT_NEAR(predict_end_s(p, {1, 1, 1, 1}), 460e-6, 1e-12);
  // 2+2: A = 200, 400; E1 = 200 + 110 = 310, E2 = max(400, 310) + 110 = 510.
  EXPECT_NEAR(predict_end_s(p, {2, 2}), 510e-6, 1e-12);
  const WaveGroupPlan best = plan_wave_groups(p);
  // 2+1+1 ties it (E = 310, 370, 460): ties go to fewer groups.
  EXPECT_EQ(best.sizes, (std::vector<int>{2, 1, 1}));
  EXPECT_NEAR(best.end_s, 460e-6, 1e-12);
  // At most two groups: 1 + 3 ends at 400 + 160 = 560, 3 + 1 at 460 + 60 = 520, 2 + 2 at 510.
  WaveGroupProblem two = p;
  two.max_groups = 2;
  EXPECT_EQ(plan_wave_groups(two).sizes, (std::vector<int>{2, 2}));
  EXPECT_NEAR(plan_wave_groups(two).end_s, 510e-6, 1e-12);
}

TEST(TilewisePlanWaveGroups, WaitAndSlowdownChargeEveryGroupAfterTheFirst) {
  WaveGroupProblem p = linear(4, 100e-6, 1e6, 10e-6, 1e6 / 50e-6);
  p.wait_s = 5e-6;
  p.compute_slowdown = 1.5;
  // 2+2: E1 = 200 + 5 + 110 = 315; A2 = 400 x 1.5 = 600; E2 = 600 + 5 + 110 = 715.
  EXPECT_NEAR(predict_end_s(p, {2, 2}), 715e-6, 1e-12);
  // One group: no slowdown (NCCL has not started), 400 + 5 + 210.
  EXPECT_NEAR(predict_end_s(p, {4}), 615e-6, 1e-12);
  EXPECT_EQ(plan_wave_groups(p).sizes, (std::vector<int>{4}));
}

TEST(TilewisePlanWaveGroups, TilesThroughSplitTheBytesByTiles) {
  // 3 waves of 100 SMs over 250 tiles: the last wave holds 50; 1000 bytes in all.
  WaveGroupProblem p;
  p.share_through = tiles_through(3, 250, 100);
  EXPECT_EQ(p.share_through, (std::vector<double>{0, 100, 200, 250}));
  p.share_total = 250;
  p.bytes = 1000;
  EXPECT_DOUBLE_EQ(p.group_bytes(0, 1), 400);
  EXPECT_DOUBLE_EQ(p.group_bytes(1, 3), 600);
  EXPECT_EQ(running_sums({1, 2, 3}), (std::vector<double>{0, 1, 3, 6}));
}

TEST(TilewisePlanWaveGroups, WithoutACommTimeAHeadThenNearEqualGroups) {
  WaveGroupProblem p;
  p.share_through = tiles_through(10, 1000, 100);
  p.max_groups = 4;
  const WaveGroupPlan plan = plan_wave_groups(p);
  EXPECT_EQ(plan.sizes, (std::vector<int>{1, 3, 3, 3}));
  EXPECT_LT(plan.end_s, 0);
  EXPECT_LT(predict_end_s(p, plan.sizes), 0);
}

TEST(TilewisePlanWaveGroups, UnitsCoarsenLongGemmsOnUnitBoundaries) {
  // 130 waves in at most 64 units: units of 3 waves, every boundary but the last on one.
  WaveGroupProblem p = linear(130, 10e-6, 1e6, 1e-6, 1e12);
  p.max_units = 64;
  p.max_groups = 8;
  const WaveGroupPlan plan = plan_wave_groups(p);
  int sum = 0;
  for (std::size_t i = 0; i < plan.sizes.size(); ++i) {
    sum += plan.sizes[i];
    if (i + 1 < plan.sizes.size()) {
      EXPECT_EQ(sum % 3, 0) << i;
    }
  }
  EXPECT_EQ(sum, 130);
  EXPECT_LE(plan.sizes.size(), 8u);
  EXPECT_NEAR(predict_end_s(p, plan.sizes), plan.end_s, 1e-12);
}

TEST(TilewisePlanWaveGroups, DynamicProgramMatchesBruteForce) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(0.2, 2.0);
  for (int trial = 0; trial < 40; ++trial) {
    const int waves = 1 + trial % 11;
    std::vector<double> per_wave;
    for (int w = 0; w < waves; ++w) per_wave.push_back(4e6 * u(rng));
    WaveGroupProblem p;
    p.wave_s = 50e-6 * u(rng);
    p.share_through = running_sums(per_wave);
    p.compute_slowdown = trial % 2 ? 1.0 : 1.2;
    p.wait_s = trial % 3 ? 0.0 : 3e-6;
    CommCurve curve;
    const double alpha = 20e-6 * u(rng), bw = 200e9 * u(rng);
    for (double b : {1e6, 4e6, 16e6, 64e6, 256e6}) curve.add_point(b, alpha + b / bw * u(rng));
    p.comm_s = curve.as_function();
    p.max_groups = trial % 4 == 0 ? 2 : 0;
    const WaveGroupPlan plan = plan_wave_groups(p);
    EXPECT_NEAR(predict_end_s(p, plan.sizes), plan.end_s, 1e-12);
    double brute = 1e9;
    for (const auto& part : all_partitions(waves)) {
      if (p.max_groups > 0 && static_cast<int>(part.size()) > p.max_groups) continue;
      brute = std::min(brute, predict_end_s(p, part));
    }
    EXPECT_NEAR(plan.end_s, brute, 1e-12) << "trial " << trial;
    if (p.max_groups == 0) {
      bool exhaustive = false;
      const auto cands = candidate_partitions(p, 1 << 12, 4, &exhaustive);
      EXPECT_TRUE(exhaustive);
      EXPECT_NEAR(predict_end_s(p, cands.front()), brute, 1e-12);
    }
  }
}

TEST(TilewisePlanWaveGroups, LongGemmsGetTheOptimumAmongTheFamilies) {
  WaveGroupProblem p = linear(24, 10e-6, 1e6, 10e-6, 1e6 / 8e-6);
  bool exhaustive = true;
  const auto cands = candidate_partitions(p, 1 << 12, 3, &exhaustive);
  EXPECT_FALSE(exhaustive);
  ASSERT_EQ(cands.size(), 3u);
  EXPECT_NEAR(predict_end_s(p, cands.front()), plan_wave_groups(p).end_s, 1e-12);
}

TEST(TilewisePlanCommCurve, InterpolatesAndKeepsItsLatency) {
  CommCurve c;
  c.add_point(100, 2);
  c.add_point(300, 4);
  EXPECT_DOUBLE_EQ(c.time_s(200), 3);
  EXPECT_DOUBLE_EQ(c.time_s(500), 6);  // beyond: the last segment's line
  EXPECT_DOUBLE_EQ(c.time_s(0), 1);    // below: never under half the first point
  c.add_point(300, 5);                  // a point again: replaced
  EXPECT_EQ(c.size(), 2u);
  EXPECT_DOUBLE_EQ(c.as_function()(300), 5);
  CommCurve one;
  one.add_point(100, 2);
  EXPECT_DOUBLE_EQ(one.time_s(50), 2);
  EXPECT_DOUBLE_EQ(one.time_s(200), 4);
  EXPECT_DOUBLE_EQ(CommCurve().time_s(5), 0);
  EXPECT_DOUBLE_EQ(linear_time(1, 10)(20), 3);
}

}  // namespace
}  // namespace overlapsim::tilewise_plan
