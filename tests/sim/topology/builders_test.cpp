#include "sim/topology/builders.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/sim/sim_test_util.hpp"

namespace overlapsim::sim {
namespace {

constexpr double kNvlink_Bps = testing::kNvlinkBps;
constexpr double kNic_Bps = testing::kNicBps;
constexpr double kPcie_Bps = testing::kPcieBps;

std::vector<NodeKind> kinds_along(const Topology& t, int src, const std::vector<LinkId>& path) {
  std::vector<NodeKind> kinds{t.graph()[t.gpu_vertex(src)].kind};
  for (const LinkId id : path) kinds.push_back(t.graph()[t.link_ends(id).second].kind);
  return kinds;
}

void expect_builder_path_connected(const Topology& t, int src, int dst, const std::vector<LinkId>& path) {
  ASSERT_FALSE(path.empty());
  VertexId at = t.gpu_vertex(src);
  for (const LinkId id : path) {
    ASSERT_EQ(t.link_ends(id).first, at);
    at = t.link_ends(id).second;
  }
  EXPECT_EQ(at, t.gpu_vertex(dst));
}

RailFatTreeSpec small_tree(int nodes, int leaf_down_ports, int spines, double oversub = 1) {
  return testing::rail_fat_tree_spec(nodes, 8, leaf_down_ports, spines, oversub);
}

TEST(Builders, NvSwitchNodeIsAStarOfNvLinks) {
  const Topology t = build_nvswitch_node({8, kNvlink_Bps, 0.5e-6});
  EXPECT_EQ(t.num_gpus(), 8);
  EXPECT_EQ(t.num_hosts(), 1);
  EXPECT_EQ(t.num_vertices(), 9u);
  EXPECT_EQ(t.num_links(), 16u);
  const auto path = t.route(2, 7);
  ASSERT_EQ(path.size(), 2u);
  expect_builder_path_connected(t, 2, 7, path);
  EXPECT_EQ(kinds_along(t, 2, path),
            (std::vector<NodeKind>{NodeKind::Gpu, NodeKind::NvSwitch, NodeKind::Gpu}));
  for (const LinkId id : path) {
    EXPECT_EQ(t.link(id).cls, LinkClass::NvLink);
    EXPECT_EQ(t.link(id).bandwidth_Bps, kNvlink_Bps);
  }
  EXPECT_DOUBLE_EQ(t.path_latency_s(path), 1e-6);
}

TEST(Builders, PcieBoxGoesThroughTheHostBridgeOnlyAcrossSwitches) {
  const Topology t = build_pcie_box({8, 2, 25e9, 25e9, 0.5e-6});
  EXPECT_EQ(t.num_gpus(), 8);
  EXPECT_EQ(t.num_vertices(), 8u + 4u + 1u);
  const auto near = t.route(0, 1);
  EXPECT_EQ(kinds_along(t, 0, near),
            (std::vector<NodeKind>{NodeKind::Gpu, NodeKind::PcieSwitch, NodeKind::Gpu}));
  const auto far = t.route(1, 6);
  EXPECT_EQ(kinds_along(t, 1, far),
            (std::vector<NodeKind>{NodeKind::Gpu, NodeKind::PcieSwitch, NodeKind::HostBridge,
                                   NodeKind::PcieSwitch, NodeKind::Gpu}));
  for (const LinkId id : far) EXPECT_EQ(t.link(id).cls, LinkClass::Pcie);
  // An odd count leaves the last switch half full.
  EXPECT_EQ(build_pcie_box({5, 2, 25e9, 25e9, 0}).num_vertices(), 5u + 3u + 1u);
}

TEST(Builders, RailFatTreeShape) {
  const Topology t = build_rail_fat_tree(small_tree(4, 2, 4));
  EXPECT_EQ(t.num_gpus(), 32);
  EXPECT_EQ(t.num_hosts(), 4);
  // 32 GPUs + 4 NVSwitches + 32 NICs + 8 rails x 2 leaves + 4 spines.
  EXPECT_EQ(t.num_vertices(), 32u + 4u + 32u + 16u + 4u);
  for (int rank = 0; rank < 32; ++rank) EXPECT_EQ(t.host_of(rank), rank / 8);
  EXPECT_FALSE(t.gpus_forward());
}

TEST(Builders, RailFatTreeIntraNodeStaysOnNvLink) {
  const Topology t = build_rail_fat_tree(small_tree(4, 2, 4));
  for (int a = 8; a < 16; ++a)
    for (int b = 8; b < 16; ++b) {
      if (a == b) continue;
      const auto path = t.route(a, b, 12345);
      ASSERT_EQ(path.size(), 2u);
      for (const LinkId id : path) EXPECT_EQ(t.link(id).cls, LinkClass::NvLink);
    }
}

TEST(Builders, RailFatTreeUsesTheSpineOnlyWhenNeeded) {
  const Topology t = build_rail_fat_tree(small_tree(4, 2, 4));
  // Rank 3 = node 0 GPU 3. Same rail, node 1 shares the leaf: NIC, leaf, NIC.
  const auto same_leaf = t.route(3, 8 + 3);
  expect_builder_path_connected(t, 3, 11, same_leaf);
  EXPECT_EQ(kinds_along(t, 3, same_leaf),
            (std::vector<NodeKind>{NodeKind::Gpu, NodeKind::Nic, NodeKind::LeafSwitch,
                                   NodeKind::Nic, NodeKind::Gpu}));
  EXPECT_EQ(t.link(same_leaf[0]).cls, LinkClass::Pcie);
  EXPECT_EQ(t.link(same_leaf[1]).cls, LinkClass::Network);
  EXPECT_DOUBLE_EQ(t.path_latency_s(same_leaf), 2 * 1e-6 + 2 * 0.2e-6);
  const std::vector<NodeKind> via_spine{
      NodeKind::Gpu,        NodeKind::Nic, NodeKind::LeafSwitch, NodeKind::SpineSwitch,
      NodeKind::LeafSwitch, NodeKind::Nic, NodeKind::Gpu};
  // Same rail, node 2 is under the rail's second leaf.
  const auto other_leaf = t.route(3, 16 + 3);
  expect_builder_path_connected(t, 3, 19, other_leaf);
  EXPECT_EQ(kinds_along(t, 3, other_leaf), via_spine);
  // Another rail on another node: up through a spine, never through a third GPU.
  const auto cross_rail = t.route(3, 8 + 5);
  expect_builder_path_connected(t, 3, 13, cross_rail);
  EXPECT_EQ(kinds_along(t, 3, cross_rail), via_spine);
  EXPECT_EQ(t.graph()[t.link_ends(cross_rail[1]).second].name, "rail3.leaf0");
  EXPECT_EQ(t.graph()[t.link_ends(cross_rail[3]).second].name, "rail5.leaf0");
}

TEST(Builders, RailFatTreeEcmpSpreadsOverSpinesDeterministically) {
  const Topology t = build_rail_fat_tree(small_tree(4, 2, 4));
  const Topology u = build_rail_fat_tree(small_tree(4, 2, 4));
  std::vector<int> per_spine(4, 0);
  for (std::uint64_t flow = 0; flow < 400; ++flow) {
    const auto path = t.route(3, 21, flow);
    ASSERT_EQ(path.size(), 6u);
    EXPECT_EQ(path, u.route(3, 21, flow));
    const std::string& spine = t.graph()[t.link_ends(path[2]).second].name;
    ++per_spine[spine.back() - '0'];
  }
  for (int s = 0; s < 4; ++s) {
    EXPECT_GT(per_spine[s], 70) << "spine " << s;  // 100 expected each
    EXPECT_LT(per_spine[s], 130) << "spine " << s;
  }
  // Different GPU pairs with flow 0 spread as well.
  std::set<std::string> spines_used;
  for (int src = 0; src < 8; ++src)
    for (int dst = 16; dst < 32; ++dst)
      spines_used.insert(t.graph()[t.link_ends(t.route(src, dst)[2]).second].name);
  EXPECT_EQ(spines_used.size(), 4u);
}

TEST(Builders, RailFatTreeRoutesSurviveCacheEvictionAndMatchRouteInto) {
  const Topology unlimited = build_rail_fat_tree(small_tree(8, 2, 3));
  Topology small = build_rail_fat_tree(small_tree(8, 2, 3));
  small.set_route_cache_limit_bytes(1);  // one table at a time
  std::vector<LinkId> into;
  for (int round = 0; round < 2; ++round)
    for (int src = 0; src < 64; src += 3)
      for (int dst = 0; dst < 64; ++dst) {
        const auto expected = unlimited.route(src, dst, src * 7 + dst);
        EXPECT_EQ(small.route(src, dst, src * 7 + dst), expected);
        small.route_into(src, dst, src * 7 + dst, into);
        EXPECT_EQ(into, expected);
      }
  EXPECT_EQ(small.route_cache_stats().distance_tables, 1u);
  EXPECT_GT(small.route_cache_stats().evictions, 0u);
  EXPECT_EQ(unlimited.route_cache_stats().evictions, 0u);
}

TEST(Builders, RailFatTreeOversubscriptionCutsUplinks) {
  for (const double r : {1.0, 2.0, 4.0}) {
    const Topology t = build_rail_fat_tree(small_tree(3, 2, 2, r));
    const auto path = t.route(0, 16);  // node 0 -> node 2: rail 0, leaf 0 -> leaf 1
    ASSERT_EQ(path.size(), 6u);
    // Leaf 0 of rail 0 serves 2 NICs, leaf 1 serves 1: uplinks sized by what they serve.
    EXPECT_DOUBLE_EQ(t.link(path[2]).bandwidth_Bps, 2 * kNic_Bps / (r * 2));
    EXPECT_DOUBLE_EQ(t.link(path[3]).bandwidth_Bps, 1 * kNic_Bps / (r * 2));
    EXPECT_DOUBLE_EQ(t.link(path[1]).bandwidth_Bps, kNic_Bps);
    EXPECT_DOUBLE_EQ(t.link(path[0]).bandwidth_Bps, kPcie_Bps);
  }
}

TEST(Builders, RailFatTreeWithSharedNicsAndPcieNodes) {
  RailFatTreeSpec spec = small_tree(2, 64, 1);
  spec.node = PcieBoxSpec{8, 4, 25e9, 25e9, 0.5e-6};
  spec.nics_per_node = 2;  // GPUs 0-3 on NIC 0, 4-7 on NIC 1
  const Topology t = build_rail_fat_tree(spec);
  EXPECT_EQ(t.num_vertices(), 2u * (8 + 2 + 1) + 2u * 2 + 2u + 1u);
  const auto path = t.route(1, 8 + 2);  // rail 0 both ends
  EXPECT_EQ(kinds_along(t, 1, path),
            (std::vector<NodeKind>{NodeKind::Gpu, NodeKind::Nic, NodeKind::LeafSwitch,
                                   NodeKind::Nic, NodeKind::Gpu}));
  EXPECT_EQ(t.route(1, 6).size(), 4u);  // same node, across PCIe switches
}

TEST(Builders, SingleLeafTreeHasNoSpine) {
  RailFatTreeSpec spec = small_tree(4, 64, 4);
  spec.node = NvSwitchNodeSpec{1, kNvlink_Bps, 0};
  spec.nics_per_node = 1;
  const Topology t = build_rail_fat_tree(spec);
  EXPECT_EQ(t.num_vertices(), 4u + 4u + 4u + 1u);
  EXPECT_EQ(t.route(0, 3).size(), 4u);
}

TEST(Builders, FlatSwitchAndRing) {
  const Topology sw = build_flat_switch({16, 50e9, 1e-6, 4});
  EXPECT_EQ(sw.num_gpus(), 16);
  EXPECT_EQ(sw.num_hosts(), 4);
  EXPECT_EQ(sw.host_of(13), 3);
  const auto path = sw.route(0, 15);
  ASSERT_EQ(path.size(), 2u);
  EXPECT_DOUBLE_EQ(sw.path_latency_s(path), 2e-6);
  EXPECT_EQ(sw.link(path[0]).bandwidth_Bps, 50e9);

  const Topology ring = build_ring({8, 50e9, 1e-6, 1});
  EXPECT_EQ(ring.num_links(), 16u);
  EXPECT_EQ(ring.num_hosts(), 8);
  EXPECT_EQ(ring.route(0, 1).size(), 1u);
  EXPECT_EQ(ring.route(0, 7).size(), 1u);
  EXPECT_EQ(ring.route(0, 4).size(), 4u);
  EXPECT_EQ(ring.route(2, 5).size(), 3u);
  EXPECT_EQ(build_ring({2, 50e9, 0, 1}).num_links(), 2u);
  EXPECT_EQ(build_ring({1, 50e9, 0, 1}).num_links(), 0u);
}

void expect_invalid(const std::function<void()>& build, const std::string& field) {
  try {
    build();
    ADD_FAILURE() << "no error for " << field;
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
  }
}

TEST(Builders, ValidationNamesTheField) {
  expect_invalid([] { build_nvswitch_node({0, 1e9, 0}); }, "NvSwitchNodeSpec.gpus");
  expect_invalid([] { build_nvswitch_node({8, 0, 0}); }, "NvSwitchNodeSpec.nvlink_bandwidth_Bps");
  expect_invalid([] { build_nvswitch_node({8, 1e9, -1}); }, "NvSwitchNodeSpec.nvlink_latency_s");
  expect_invalid([] { build_pcie_box({8, 0, 1e9, 1e9, 0}); }, "PcieBoxSpec.gpus_per_switch");
  expect_invalid(
      [] {
        build_pcie_box({8, 2, 1e9, -5, 0});
      },
      "PcieBoxSpec.switch_uplink_bandwidth_Bps");
  expect_invalid([] { build_flat_switch({0, 1e9, 0, 1}); }, "FlatSwitchSpec.npus");
  expect_invalid([] { build_flat_switch({4, 1e9, 0, 0}); }, "FlatSwitchSpec.gpus_per_host");
  expect_invalid([] { build_ring({4, std::nan(""), 0, 1}); }, "RingSpec.link_bandwidth_Bps");
  const auto tree_with = [](auto change) {
    return [change] {
      RailFatTreeSpec spec = small_tree(4, 2, 4);
      change(spec);
      build_rail_fat_tree(spec);
    };
  };
  expect_invalid(tree_with([](RailFatTreeSpec& s) { s.nodes = 0; }), "RailFatTreeSpec.nodes");
  expect_invalid(tree_with([](RailFatTreeSpec& s) { s.nics_per_node = 3; }),
                 "RailFatTreeSpec.nics_per_node");
  expect_invalid(tree_with([](RailFatTreeSpec& s) { s.oversubscription = 0.5; }),
                 "RailFatTreeSpec.oversubscription");
  expect_invalid(tree_with([](RailFatTreeSpec& s) { s.spines = 0; }), "RailFatTreeSpec.spines");
  expect_invalid(tree_with([](RailFatTreeSpec& s) { s.leaf_down_ports = 0; }),
                 "RailFatTreeSpec.leaf_down_ports");
  expect_invalid(tree_with([](RailFatTreeSpec& s) { s.nic_bandwidth_Bps = 0; }),
                 "RailFatTreeSpec.nic_bandwidth_Bps");
  expect_invalid(tree_with([](RailFatTreeSpec& s) { s.gpu_nic_latency_s = -1; }),
                 "RailFatTreeSpec.gpu_nic_latency_s");
  expect_invalid(tree_with([](RailFatTreeSpec& s) { std::get<0>(s.node).gpus = 0; }),
                 "NvSwitchNodeSpec.gpus");
}

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// 1,024-rank all-to-all routes on 128 x 8 (the size of the flow-network benchmark).
TEST(Builders, AllToAllRoutesAt1024RanksAreFast) {
  const Topology t = build_rail_fat_tree(small_tree(128, 64, 1));
  const auto start = Clock::now();
  std::size_t hops = 0;
  for (int src = 0; src < 1024; ++src)
    for (int dst = 0; dst < 1024; ++dst) hops += t.route(src, dst).size();
  const double per_route_s = seconds_since(start) / (1024.0 * 1024.0);
  const auto stats = t.route_cache_stats();
  std::printf("1024-rank all-to-all: %.3f us per route, %zu hop tables, %.1f MB of caches\n",
              per_route_s * 1e6, stats.distance_tables, stats.bytes / 1e6);
  EXPECT_GT(hops, 0u);
  EXPECT_EQ(stats.distance_tables, 16u);  // one per leaf
  EXPECT_LT(per_route_s, 5e-6);           // loose: shared CI cores; measured ~0.3 us locally
}

TEST(Builders, FlatSwitchRoutesDoNotScanTheSwitch) {
  const Topology t = build_flat_switch({1024, 50e9, 0.5e-6, 1});
  const auto start = Clock::now();
  std::size_t hops = 0;
  for (int src = 0; src < 1024; ++src)
    for (int dst = 0; dst < 1024; ++dst) hops += t.route(src, dst).size();
  const double per_route_s = seconds_since(start) / (1024.0 * 1024.0);
  std::printf("1024-port flat switch all-to-all: %.3f us per route\n", per_route_s * 1e6);
  EXPECT_EQ(hops, 2u * 1024 * 1023);
  EXPECT_LT(per_route_s, 2e-6);  // loose: shared CI cores; measured ~0.06 us locally
}

// 2048 nodes x 8 GPUs = 16,384 GPUs: caches stay bounded while routing a sample.
// A destination's hop table is searched only as far as its sources so far: nearest first,
// then farther, then nearer again, every route is a shortest one and the same links as from
// a fresh topology that routes that pair alone.
TEST(Builders, RingRoutesFromPartlySearchedTablesAreShortest) {
  const int n = 64;
  const Topology ring = build_ring({n, 50e9, 1e-6, 1});
  const int dst = 17;
  std::vector<int> sources;
  for (int d = 1; d < n / 2; ++d) sources.push_back((dst + d) % n);
  for (int d = n / 2; d >= 1; --d) sources.push_back((dst - d + n) % n);
  for (const int src : sources) {
    const int apart = std::abs(src - dst);
    const std::vector<LinkId> path = ring.route(src, dst, 7);
    EXPECT_EQ(path.size(), static_cast<std::size_t>(std::min(apart, n - apart))) << src;
    EXPECT_EQ(path, build_ring({n, 50e9, 1e-6, 1}).route(src, dst, 7)) << src;
  }
}

TEST(Builders, SixteenThousandGpusRouteWithBoundedMemory) {
  auto start = Clock::now();
  const Topology t = build_rail_fat_tree(small_tree(2048, 64, 1));
  const double build_s = seconds_since(start);
  EXPECT_EQ(t.num_gpus(), 16384);
  start = Clock::now();
  std::uint64_t x = 1;
  for (int i = 0; i < 100000; ++i) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;  // LCG sample of pairs
    const int src = static_cast<int>((x >> 20) % 16384), dst = static_cast<int>((x >> 40) % 16384);
    const auto path = t.route(src, dst, x);
    if (src != dst) {
      EXPECT_GE(path.size(), t.host_of(src) == t.host_of(dst) ? 2u : 4u);
    }
  }
  const double route_s = seconds_since(start);
  const auto stats = t.route_cache_stats();
  std::printf("16384 GPUs: build %.3f s, 100k routes %.3f s, %zu hop tables, %.1f MB of caches\n",
              build_s, route_s, stats.distance_tables, stats.bytes / 1e6);
  EXPECT_LE(stats.distance_tables, 256u);  // 8 rails x 32 leaves
  EXPECT_LT(stats.bytes, std::size_t{64} << 20);
  EXPECT_LT(build_s + route_s, 20.0);
}

}  // namespace
}  // namespace overlapsim::sim
