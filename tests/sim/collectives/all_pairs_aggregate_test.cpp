// All-pairs patterns built per class of equivalent host pairs (direct.cpp) against the
// per-pair form on the flow network: the same completion time where both run, the same
// number of flows started (copies counted), and far fewer flows simulated.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

#include "sim/collectives/collective.hpp"
#include "sim/collectives/host_symmetry.hpp"
#include "sim/engine/simulator.hpp"
#include "sim/network/flow_network.hpp"
#include "sim/topology/builders.hpp"
#include "tests/sim/collectives/analytic_network.hpp"

namespace overlapsim::sim {
namespace {

using testing::iota_ranks;

constexpr double kNic_Bps = 50e9;
constexpr double kAggregateHop_s = 0.15e-6;

// 16 nodes x 4 GPUs, 4 NICs per node, 4 nodes per leaf: 4 leaves per rail, one spine.
RailFatTreeSpec mid_size(double oversubscription = 1, int nodes = 16) {
  RailFatTreeSpec spec;
  spec.nodes = nodes;
  spec.node = NvSwitchNodeSpec{4, 450e9, 0.3e-6};
  spec.nics_per_node = 4;
  spec.nic_bandwidth_Bps = kNic_Bps;
  spec.gpu_nic_bandwidth_Bps = 63e9;
  spec.gpu_nic_latency_s = 1e-6;
  spec.link_latency_s = kAggregateHop_s;
  spec.leaf_down_ports = 4;
  spec.oversubscription = oversubscription;
  return spec;
}

struct Outcome {
  double time_s = -1;
  FlowNetworkStats stats;
};

Outcome run_direct(const Topology& topo, CollectiveOp op, std::uint64_t bytes, bool pxn,
                   bool aggregate, int ranks = -1) {
  Simulator sim;
  FlowNetwork net(sim, topo);
  CollectiveRequest req;
  req.op = op;
  req.algo = Algorithm::Direct;
  req.ranks = iota_ranks(ranks < 0 ? topo.num_gpus() : ranks);
  req.bytes = bytes;
  CollectiveTuning tuning;
  tuning.pxn = pxn;
  tuning.aggregate_min_pairs = aggregate ? 0 : std::numeric_limits<std::uint64_t>::max();
  Outcome r;
  r.time_s = testing::run_collective(net, req, tuning);
  r.stats = net.stats();
  return r;
}

TEST(HostSymmetry, FindsTheLeafGroupsOfARailFatTree) {
  const Topology topo = build_rail_fat_tree(mid_size());
  Simulator sim;
  FlowNetwork net(sim, topo);
  const auto ranks = iota_ranks(topo.num_gpus());
  const auto sym = detail::host_symmetry(net, ranks);
  ASSERT_TRUE(sym.has_value());
  EXPECT_EQ(sym->hosts.size(), 16u);
  EXPECT_EQ(sym->group_hosts, 4u);
}

TEST(HostSymmetry, RefusesUnevenLayouts) {
  // 6 nodes on 4-node leaves: the second leaf is half full.
  const Topology partial = build_rail_fat_tree(mid_size(1, 6));
  Simulator sim;
  FlowNetwork net(sim, partial);
  EXPECT_FALSE(detail::host_symmetry(net, iota_ranks(partial.num_gpus())).has_value());
  // Hosts with different member counts.
  const Topology topo = build_rail_fat_tree(mid_size());
  FlowNetwork full(sim, topo);
  EXPECT_FALSE(detail::host_symmetry(full, iota_ranks(7)).has_value());
  // One host: nothing between hosts to aggregate.
  EXPECT_FALSE(detail::host_symmetry(full, iota_ranks(4)).has_value());
  // Hosts 2..13 straddle the leaves (2 + 4 + 4 + 2): the groups do not line up.
  EXPECT_FALSE(detail::host_symmetry(full, iota_ranks(48, 8)).has_value());
}

TEST(AllPairsAggregate, SameTimeAsPerPairOnARailFatTree) {
  for (double oversubscription : {1.0, 2.0}) {
    const Topology topo = build_rail_fat_tree(mid_size(oversubscription));
    const int n = topo.num_gpus();
    for (CollectiveOp op : {CollectiveOp::AllToAll, CollectiveOp::AllGather}) {
      for (bool pxn : {false, true}) {
        if (pxn && op != CollectiveOp::AllToAll) continue;
        for (std::uint64_t bytes : {std::uint64_t{64} << 10, std::uint64_t{256} << 20}) {
          const Outcome per_pair = run_direct(topo, op, bytes, pxn, false);
          const Outcome aggregate = run_direct(topo, op, bytes, pxn, true);
          SCOPED_TRACE(::testing::Message() << to_string(op) << " pxn=" << pxn << " bytes=" << bytes
                                            << " oversubscription=" << oversubscription);
          ASSERT_GT(per_pair.time_s, 0);
          EXPECT_NEAR(aggregate.time_s, per_pair.time_s, 1e-9 * per_pair.time_s);
          EXPECT_EQ(aggregate.stats.flows_started, per_pair.stats.flows_started);
          if (!pxn) {
            EXPECT_EQ(per_pair.stats.flows_started, static_cast<std::uint64_t>(n) * (n - 1));
          }
        }
      }
    }
  }
}

TEST(AllPairsAggregate, AllToAllOnAFlatSwitchIsTheClosedForm) {
  // Every NPU's uplink carries (n - 1) shares of S/n: alpha (two hops) + (n-1)/n * S/B.
  const int n = 512;
  const double link_Bps = 50e9, hop_s = 0.5e-6;
  const Topology topo = build_flat_switch(FlatSwitchSpec{n, link_Bps, hop_s, 1});
  const std::uint64_t bytes = std::uint64_t{1} << 30;
  const Outcome r = run_direct(topo, CollectiveOp::AllToAll, bytes, false, true);
  const double expected = 2 * hop_s + (n - 1) * static_cast<double>(bytes / n) / link_Bps;
  EXPECT_NEAR(r.time_s, expected, 1e-9 * expected);
  // One class (every host pair alike): n representative transfers of n - 1 copies.
  EXPECT_EQ(r.stats.flows_started, static_cast<std::uint64_t>(n) * (n - 1));
  EXPECT_LE(r.stats.flows_simulated, static_cast<std::uint64_t>(n));
}

TEST(AllPairsAggregate, DefaultKeepsPerPairUpTo1024Ranks) {
  CollectiveTuning tuning;
  EXPECT_GE(tuning.aggregate_min_pairs, std::uint64_t{1024} * 1023);
  EXPECT_LT(tuning.aggregate_min_pairs, std::uint64_t{1025} * 1024);
}

}  // namespace
}  // namespace overlapsim::sim
