// Hierarchical schedules on the contention-free oracle (2 hosts x 4 ranks): the phase
// sums worked out by hand.
#include <gtest/gtest.h>

#include "sim/collectives/collective.hpp"
#include "tests/sim/collectives/analytic_network.hpp"

namespace overlapsim::sim {
namespace {

using testing::AnalyticNetwork;
using testing::iota_ranks;
using testing::run_collective;

constexpr double kHierAlpha_s = 1e-6;
constexpr double kHierB_Bps = 10e9;
constexpr std::uint64_t kS = 64 << 20;

CollectiveRequest hier(CollectiveOp op, std::vector<int> ranks = iota_ranks(8)) {
  CollectiveRequest req;
  req.op = op;
  req.algo = Algorithm::Hierarchical;
  req.ranks = std::move(ranks);
  req.bytes = kS;
  return req;
}

double time_of(const CollectiveRequest& req) {
  Simulator sim;
  AnalyticNetwork net(sim, 8, kHierAlpha_s, kHierB_Bps, 4);
  return run_collective(net, req);
}

TEST(Hierarchical, AllReduce) {
  // intra RS over 4: 3 alpha + 3 S/4 / B; inter AR of S/4 over 2: 2 alpha + 2 S/8 / B;
  // intra AG: as the RS.
  const double expected = 8 * kHierAlpha_s + (1.5 * kS + 0.25 * kS) / kHierB_Bps;
  EXPECT_NEAR(time_of(hier(CollectiveOp::AllReduce)), expected, 1e-9 * expected);
}

TEST(Hierarchical, AllGatherAndReduceScatter) {
  // AG: inter AG of 2 shares S/8 (1 step), intra AG of 4 shares S/4 (3 steps).
  const double ag = 4 * kHierAlpha_s + (kS / 8.0 + 3 * kS / 4.0) / kHierB_Bps;
  EXPECT_NEAR(time_of(hier(CollectiveOp::AllGather)), ag, 1e-9 * ag);
  // RS: intra RS of S (3 steps of S/4), inter RS of S/4 (1 step of S/8).
  EXPECT_NEAR(time_of(hier(CollectiveOp::ReduceScatter)), ag, 1e-9 * ag);
}

TEST(Hierarchical, AllToAllAggregatesPerRail) {
  // Intra: to each local peer its rail's data, 2 shares of S/8; inter: 4 shares.
  const double expected = 2 * kHierAlpha_s + (2 * kS / 8.0 + 4 * kS / 8.0) / kHierB_Bps;
  EXPECT_NEAR(time_of(hier(CollectiveOp::AllToAll)), expected, 1e-9 * expected);
}

TEST(Hierarchical, BroadcastAlongRootRailThenInsideHosts) {
  CollectiveRequest req = hier(CollectiveOp::Broadcast);
  req.root = 6;  // host 1, local rank 2
  Simulator sim;
  AnalyticNetwork net(sim, 8, kHierAlpha_s, kHierB_Bps, 4);
  const double t = run_collective(net, req);
  const double expected = (1 + 3) * kHierAlpha_s + 2.0 * kS / kHierB_Bps;
  EXPECT_NEAR(t, expected, 1e-9 * expected);
  ASSERT_EQ(net.groups().size(), 2u);
  ASSERT_EQ(net.groups()[0].size(), 1u);
  EXPECT_EQ(net.groups()[0][0].src_rank, 6);
  EXPECT_EQ(net.groups()[0][0].dst_rank, 2);
}

TEST(Hierarchical, UnequalRanksPerHostIsAnError) {
  Simulator sim;
  AnalyticNetwork net(sim, 8, kHierAlpha_s, kHierB_Bps, 4);
  try {
    start_collective(net, hier(CollectiveOp::AllReduce, {0, 1, 2, 4}), [] {});
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("same number of ranks on every host"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace overlapsim::sim
