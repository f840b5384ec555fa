#include "sim/network/route_cache.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "sim/topology/builders.hpp"

using namespace overlapsim::sim;

namespace {

// Two-spine fabric so that ECMP (and hence flow_id) matters for cross-leaf routes.
Topology fabric() {
  RailFatTreeSpec spec;
  spec.nodes = 4;
  spec.node = NvSwitchNodeSpec{2, 450e9, 0.5e-6};
  spec.nics_per_node = 2;
  spec.nic_bandwidth_Bps = 50e9;
  spec.gpu_nic_bandwidth_Bps = 63e9;
  spec.gpu_nic_latency_s = 1e-6;
  spec.link_latency_s = 0.2e-6;
  spec.leaf_down_ports = 2;
  spec.spines = 2;
  return build_rail_fat_tree(spec);
}

std::vector<std::uint64_t> all_pairs(int n) {
  std::vector<std::uint64_t> pairs;
  for (int s = 0; s < n; ++s)
    for (int d = 0; d < n; ++d)
      if (s != d) pairs.push_back(RouteCache::pair_key(s, d));
  return pairs;
}

void expect_same_as_topology(const Topology& topo, const GroupRoutes& routes,
                             const std::vector<std::uint64_t>& pairs, std::uint64_t flow_id) {
  ASSERT_EQ(routes.size(), pairs.size());
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    const int src = static_cast<int>(pairs[i] >> 32),
              dst = static_cast<int>(pairs[i] & 0xffffffffu);
    const std::vector<LinkId> expected = topo.route(src, dst, flow_id);
    const auto got = routes.links(i);
    EXPECT_EQ(std::vector<LinkId>(got.begin(), got.end()), expected) << src << "->" << dst;
    EXPECT_DOUBLE_EQ(routes.latency_s(i), topo.path_latency_s(expected));
  }
}

}  // namespace

TEST(RouteCache, RepeatedGroupIsAHitWithTheSameRoutes) {
  const Topology topo = fabric();
  RouteCache cache(topo);
  const auto pairs = all_pairs(topo.num_gpus());
  expect_same_as_topology(topo, cache.routes(pairs, 0), pairs, 0);
  EXPECT_EQ(cache.routes_computed(), pairs.size());
  EXPECT_EQ(cache.group_hits(), 0u);
  expect_same_as_topology(topo, cache.routes(pairs, 0), pairs, 0);
  EXPECT_EQ(cache.routes_computed(), pairs.size());
  EXPECT_EQ(cache.group_hits(), 1u);
}

TEST(RouteCache, FlowIdAndPairOrderArePartOfTheKey) {
  const Topology topo = fabric();
  RouteCache cache(topo);
  auto pairs = all_pairs(topo.num_gpus());
  cache.routes(pairs, 0);
  expect_same_as_topology(topo, cache.routes(pairs, 7), pairs, 7);
  std::swap(pairs.front(), pairs.back());
  expect_same_as_topology(topo, cache.routes(pairs, 0), pairs, 0);
  EXPECT_EQ(cache.group_hits(), 0u);
  EXPECT_EQ(cache.routes_computed(), 3 * pairs.size());
}

TEST(RouteCache, StaysUnderItsLimitAndStillAnswers) {
  const Topology topo = fabric();
  RouteCache cache(topo, 4096);
  const auto pairs = all_pairs(topo.num_gpus());  // 56 pairs: more than 4 KiB with routes
  for (int round = 0; round < 3; ++round)
    expect_same_as_topology(topo, cache.routes(pairs, 0), pairs, 0);
  EXPECT_LE(cache.bytes(), 4096u);
  for (int i = 0; i < 50; ++i) {
    const std::vector<std::uint64_t> one = {RouteCache::pair_key(i % 8, (i + 1) % 8)};
    expect_same_as_topology(topo, cache.routes(one, 0), one, 0);
    EXPECT_LE(cache.bytes(), 4096u);
  }
}

// Single pairs come from their own table: the same links and latency as Topology::route,
// computed once per (pair, flow id) however often asked, also after the table has grown
// (more keys than its initial 1,024 slots hold at half load).
TEST(RouteCache, PairRoutesMatchTopologyAndAreComputedOnce) {
  const Topology topo = fabric();
  RouteCache cache(topo);
  const auto pairs = all_pairs(topo.num_gpus());
  const std::uint64_t flow_ids = 20;
  for (int round = 0; round < 2; ++round)
    for (std::uint64_t id = 0; id < flow_ids; ++id)
      for (std::uint64_t p : pairs) {
        const int src = static_cast<int>(p >> 32), dst = static_cast<int>(p & 0xffffffffu);
        const auto route = cache.pair_route(p, id);
        const std::vector<LinkId> expected = topo.route(src, dst, id);
        ASSERT_EQ(std::vector<LinkId>(route.links.begin(), route.links.end()), expected)
            << src << "->" << dst << " flow " << id;
        EXPECT_DOUBLE_EQ(route.latency_s, topo.path_latency_s(expected));
      }
  EXPECT_EQ(cache.routes_computed(), flow_ids * pairs.size());
}
