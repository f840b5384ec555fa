// Host grouping, ring channels and hop statistics.
#include "sim/collectives/groups.hpp"

#include <gtest/gtest.h>

#include "tests/sim/collectives/analytic_network.hpp"

namespace overlapsim::sim::detail {
namespace {

using testing::AnalyticNetwork;

TEST(Groups, ByHostInOrderOfFirstAppearance) {
  Simulator sim;
  AnalyticNetwork net(sim, 16, 1e-6, 1e9, 4);
  const std::vector<int> members = {9, 1, 8, 0, 2};
  EXPECT_EQ(group_by_host(net, members), (std::vector<std::vector<int>>{{9, 8}, {1, 0, 2}}));
}

TEST(Groups, OneRingPerLocalRankWhenHostsFormEqualBlocks) {
  Simulator sim;
  AnalyticNetwork net(sim, 8, 1e-6, 1e9, 4);
  const std::vector<int> members = {0, 1, 2, 3, 4, 5, 6, 7};
  const auto rings = ring_channels(net, members);
  ASSERT_EQ(rings.size(), 4u);
  // Host 1's block starts where host 0's was left: the inter-host hop stays on one rail.
  EXPECT_EQ(rings[0], (std::vector<int>{0, 1, 2, 3, 7, 4, 5, 6}));
  EXPECT_EQ(rings[1], (std::vector<int>{1, 2, 3, 0, 4, 5, 6, 7}));
  EXPECT_EQ(rings[3], (std::vector<int>{3, 0, 1, 2, 6, 7, 4, 5}));
}

TEST(Groups, ChannelsUseEveryNicOnceAndStayOnRailsBetweenHosts) {
  Simulator sim;
  const int g = 4, hosts = 8;
  AnalyticNetwork net(sim, g * hosts, 1e-6, 1e9, g);
  std::vector<int> members(g * hosts);
  for (int r = 0; r < g * hosts; ++r) members[static_cast<std::size_t>(r)] = r;
  const auto rings = ring_channels(net, members);
  ASSERT_EQ(rings.size(), static_cast<std::size_t>(g));
  std::vector<int> leaves_from(g * hosts, 0);
  int cross_rail = 0;
  for (const auto& ring : rings) {
    for (std::size_t i = 0; i < ring.size(); ++i) {
      const int a = ring[i], b = ring[(i + 1) % ring.size()];
      if (a / g == b / g) continue;
      ++leaves_from[static_cast<std::size_t>(a)];
      cross_rail += a % g != b % g;
    }
  }
  for (int r = 0; r < g * hosts; ++r) EXPECT_EQ(leaves_from[static_cast<std::size_t>(r)], 1) << r;
  EXPECT_EQ(cross_rail, 0);  // 8 hosts is a multiple of 4: even the wrap-around is same-rail
}

TEST(Groups, SingleRingOtherwise) {
  Simulator sim;
  AnalyticNetwork net(sim, 8, 1e-6, 1e9, 4);
  for (const std::vector<int>& members :
       std::vector<std::vector<int>>{{0, 1, 2, 3},           // one host
                                     {0, 4, 1, 5},           // interleaved hosts
                                     {0, 1, 2, 4, 5},        // unequal blocks
                                     {0, 1, 4, 5, 2, 3}}) {  // a host twice
    const auto rings = ring_channels(net, members);
    ASSERT_EQ(rings.size(), 1u);
    EXPECT_EQ(rings[0], members);
  }
}

TEST(Groups, HopStatsOpenAndClosed) {
  Simulator sim;
  AnalyticNetwork net(sim, 4, 2e-6, 5e9);
  const std::vector<int> m = {0, 1, 2, 3};
  const auto open = hop_stats(net, m, false);
  const auto closed = hop_stats(net, m, true);
  ASSERT_TRUE(open && closed);
  EXPECT_EQ(open->hops, 3);
  EXPECT_EQ(closed->hops, 4);
  EXPECT_DOUBLE_EQ(closed->latency_sum_s, 8e-6);
  EXPECT_DOUBLE_EQ(closed->latency_max_s, 2e-6);
  EXPECT_DOUBLE_EQ(closed->min_bandwidth_Bps, 5e9);
  AnalyticNetwork blind(sim, 4, 2e-6, 5e9, 1, /*estimates=*/false);
  EXPECT_FALSE(hop_stats(blind, m, true));
}

}  // namespace
}  // namespace overlapsim::sim::detail
