#include "sim/network/unsaturable_links.hpp"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "sim/network/maxmin.hpp"
#include "sim/topology/builders.hpp"
#include "tests/sim/sim_test_util.hpp"

using namespace overlapsim::sim;

namespace unsaturable_links_test {

Topology fat_tree(double oversubscription, int leaf_down_ports = 2, int nodes = 4) {
  return build_rail_fat_tree(
      overlapsim::sim::testing::rail_fat_tree_spec(nodes, 2, leaf_down_ports, 1, oversubscription));
}

NodeKind kind(const Topology& t, VertexId v) { return t.graph()[v].kind; }

bool is(const Topology& t, LinkId id, NodeKind from, NodeKind to) {
  const auto [u, v] = t.link_ends(id);
  return kind(t, u) == from && kind(t, v) == to;
}

// Max-min rates of random GPU-to-GPU flows over every link, and over the kept links only.
void expect_same_rates(const Topology& t, const std::vector<bool>& dropped, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  MaxMinSolver all, kept;
  for (LinkId id = 0; id < t.num_links(); ++id) {
    all.add_resource(t.link(id).bandwidth_Bps);
    kept.add_resource(t.link(id).bandwidth_Bps);
  }
  std::vector<std::pair<MaxMinSolver::FlowId, MaxMinSolver::FlowId>> flows;
  for (int i = 0; i < 60; ++i) {
    const int src = static_cast<int>(rng() % t.num_gpus());
    const int dst = static_cast<int>(rng() % t.num_gpus());
    if (src == dst) continue;
    const std::vector<LinkId> route = t.route(src, dst, rng());
    std::vector<MaxMinSolver::ResourceId> pruned;
    for (LinkId id : route)
      if (!dropped[id]) pruned.push_back(id);
    ASSERT_FALSE(pruned.empty()) << "route " << src << " -> " << dst << " lost every link";
    const auto copies = static_cast<std::uint32_t>(1 + rng() % 3);
    flows.emplace_back(all.add_flow(route, copies), kept.add_flow(pruned, copies));
  }
  all.solve();
  kept.solve();
  for (const auto& [a, k] : flows)
    EXPECT_NEAR(kept.rate_Bps(k), all.rate_Bps(a), 1e-9 * all.rate_Bps(a)) << "seed " << seed;
}

}  // namespace unsaturable_links_test

using namespace unsaturable_links_test;

// Non-blocking: the uplinks, the spine and the PCIe hop to the NIC can never fill before the
// NIC links do; the NIC links stay. (With two GPUs a node, one NVLink hop of each pair's
// path bounds the other, so NVLink is checked by the rates below.)
TEST(UnsaturableLinks, NonBlockingFatTreeKeepsOnlyTheNicLinks) {
  const Topology t = fat_tree(1);
  const std::vector<bool> dropped = unsaturable_links(t);
  int kept_nic = 0, dropped_uplinks = 0;
  for (LinkId id = 0; id < t.num_links(); ++id) {
    const bool nic_leaf = is(t, id, NodeKind::Nic, NodeKind::LeafSwitch) ||
                          is(t, id, NodeKind::LeafSwitch, NodeKind::Nic);
    if (t.link(id).cls == LinkClass::NvLink) continue;
    EXPECT_EQ(dropped[id], !nic_leaf) << "link " << id;
    kept_nic += nic_leaf && !dropped[id];
    dropped_uplinks += is(t, id, NodeKind::LeafSwitch, NodeKind::SpineSwitch) && dropped[id];
  }
  EXPECT_EQ(kept_nic, 2 * 8);  // 8 NICs, both directions
  EXPECT_GT(dropped_uplinks, 0);
}

// Oversubscribed 2:1, the uplinks can be the bottleneck: they stay.
TEST(UnsaturableLinks, OversubscribedUplinksStay) {
  const Topology t = fat_tree(2);
  const std::vector<bool> dropped = unsaturable_links(t);
  int uplinks = 0;
  for (LinkId id = 0; id < t.num_links(); ++id)
    if (is(t, id, NodeKind::LeafSwitch, NodeKind::SpineSwitch)) {
      ++uplinks;
      EXPECT_FALSE(dropped[id]) << "link " << id;
    }
  EXPECT_GT(uplinks, 0);
}

// Two links of equal capacity in a row each bound the other; only one may go.
TEST(UnsaturableLinks, AChainOfEqualLinksKeepsOne) {
  Topology t;
  const VertexId a = t.add_gpu(0), d = t.add_gpu(1);
  const VertexId b = t.add_node(NodeKind::Switch, "b"), c = t.add_node(NodeKind::Switch, "c");
  t.connect(a, b, 10e9, 0, LinkClass::Network);
  t.connect(b, c, 10e9, 0, LinkClass::Network);
  t.connect(c, d, 10e9, 0, LinkClass::Network);
  const std::vector<bool> dropped = unsaturable_links(t);
  for (const auto& [src, dst] : {std::pair{0, 1}, std::pair{1, 0}}) {
    int kept = 0;
    for (LinkId id : t.route(src, dst)) kept += !dropped[id];
    EXPECT_GE(kept, 1) << src << " -> " << dst;
  }
}

// GPUs that relay (a ring) originate traffic on every link: nothing can go.
TEST(UnsaturableLinks, RingKeepsEveryLink) {
  const Topology t = build_ring(RingSpec{6, 25e9, 1e-6, 1});
  for (bool d : unsaturable_links(t)) EXPECT_FALSE(d);
}

// The defining property: max-min rates are the same with and without the dropped links.
TEST(UnsaturableLinks, RatesEqualThoseOverEveryLink) {
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    for (double over : {1.0, 2.0}) {
      const Topology t =
          fat_tree(over, 2 + static_cast<int>(seed % 3), 3 + static_cast<int>(seed % 4));
      expect_same_rates(t, unsaturable_links(t), seed);
    }
  }
}
