// Collectives over the flow-level network (max-min sharing) on the shipped topology
// builders: the closed forms (docs/collectives.md) within 1%, where contention decides the time.
#include <gtest/gtest.h>

#include "sim/collectives/collective.hpp"
#include "sim/engine/simulator.hpp"
#include "sim/network/flow_network.hpp"
#include "sim/topology/builders.hpp"
#include "tests/sim/collectives/analytic_network.hpp"

namespace overlapsim::sim {
namespace {

using testing::iota_ranks;
using testing::run_collective;

constexpr double kLink_Bps = 50e9;
constexpr double kHop_s = 0.5e-6;

double run_on(const Topology& topo, CollectiveOp op, Algorithm algo, std::uint64_t bytes,
              int n = -1) {
  Simulator sim;
  FlowNetwork net(sim, topo);
  CollectiveRequest req;
  req.op = op;
  req.algo = algo;
  req.ranks = iota_ranks(n < 0 ? topo.num_gpus() : n);
  req.bytes = bytes;
  return run_collective(net, req);
}

Topology flat_switch(int n) { return build_flat_switch(FlatSwitchSpec{n, kLink_Bps, kHop_s, 1}); }

TEST(FlowCollectives, RingAllReduceOnFlatSwitch) {
  // alpha = two hops (NPU -> switch -> NPU); each NPU's uplink carries one stream.
  const double alpha_s = 2 * kHop_s;
  for (int n : {4, 16, 128}) {
    for (std::uint64_t bytes : {std::uint64_t{1} << 20, std::uint64_t{1} << 30}) {
      const double t = run_on(flat_switch(n), CollectiveOp::AllReduce, Algorithm::Ring, bytes);
      const double expected =
          2 * (n - 1) * alpha_s + 2.0 * (n - 1) / n * static_cast<double>(bytes) / kLink_Bps;
      EXPECT_NEAR(t, expected, 0.01 * expected) << "n=" << n << " bytes=" << bytes;
    }
  }
}

TEST(FlowCollectives, RingAllReduceOnRingTopology) {
  // Each ring step is one neighbour hop: alpha = one link latency.
  for (int n : {4, 16}) {
    const Topology topo = build_ring(RingSpec{n, kLink_Bps, kHop_s, 1});
    const std::uint64_t bytes = 256 << 20;
    const double t = run_on(topo, CollectiveOp::AllReduce, Algorithm::Ring, bytes);
    const double expected = 2 * (n - 1) * kHop_s + 2.0 * (n - 1) / n * bytes / kLink_Bps;
    EXPECT_NEAR(t, expected, 0.01 * expected) << n;
  }
}

TEST(FlowCollectives, RingAllGatherAndReduceScatterOnFlatSwitch) {
  const int n = 32;
  const std::uint64_t bytes = 512 << 20;
  for (CollectiveOp op : {CollectiveOp::AllGather, CollectiveOp::ReduceScatter}) {
    const double t = run_on(flat_switch(n), op, Algorithm::Ring, bytes);
    const double expected = (n - 1) * 2 * kHop_s + (n - 1.0) / n * bytes / kLink_Bps;
    EXPECT_NEAR(t, expected, 0.01 * expected) << to_string(op);
  }
}

TEST(FlowCollectives, BroadcastAndSendRecvOnFlatSwitch) {
  const int n = 16;
  const std::uint64_t bytes = 1 << 30;
  const double chain = run_on(flat_switch(n), CollectiveOp::Broadcast, Algorithm::Ring, bytes);
  const double chain_expected = (n - 1) * 2 * kHop_s + bytes / kLink_Bps;
  EXPECT_NEAR(chain, chain_expected, 0.01 * chain_expected);
  // Direct broadcast: the root's uplink carries n-1 copies.
  const double star = run_on(flat_switch(n), CollectiveOp::Broadcast, Algorithm::Direct, bytes);
  const double star_expected = 2 * kHop_s + (n - 1.0) * bytes / kLink_Bps;
  EXPECT_NEAR(star, star_expected, 0.01 * star_expected);
  const double p2p = run_on(flat_switch(n), CollectiveOp::SendRecv, Algorithm::Direct, bytes, 2);
  EXPECT_NEAR(p2p, 2 * kHop_s + bytes / kLink_Bps, 1e-9);
}

TEST(FlowCollectives, TreeAllReduceOnFlatSwitchIsBoundedByPortVolume) {
  // Every rank sends and receives about 2S in total over its one port (4 flows of S/2
  // on an interior rank's uplink): between the ring's 2(n-1)/n S/B and 2S/B.
  const int n = 64;
  const std::uint64_t bytes = 1 << 30;
  const double t = run_on(flat_switch(n), CollectiveOp::AllReduce, Algorithm::Tree, bytes);
  EXPECT_GE(t, 2.0 * (n - 1) / n * bytes / kLink_Bps);
  EXPECT_LE(t, 1.01 * 2.0 * bytes / kLink_Bps);
}

RailFatTreeSpec small_fat_tree(int nodes, int gpus, int leaf_down_ports, double oversub) {
  RailFatTreeSpec spec;
  spec.nodes = nodes;
  spec.node = NvSwitchNodeSpec{gpus, 450e9, 0.3e-6};
  spec.nics_per_node = gpus;
  spec.nic_bandwidth_Bps = kLink_Bps;
  spec.gpu_nic_bandwidth_Bps = 64e9;
  spec.gpu_nic_latency_s = 1e-6;
  spec.link_latency_s = 0.13e-6;
  spec.leaf_down_ports = leaf_down_ports;
  spec.spines = 1;
  spec.oversubscription = oversub;
  return spec;
}

TEST(FlowCollectives, AllToAllOnNonBlockingFatTreeIsNicBound) {
  // 4 nodes x 4 GPUs: each GPU's NIC carries its (n - g) inter-node shares of S/n; NVLink
  // takes the g - 1 local ones much faster. time = (n - g)/n * S / B_nic (+ latency).
  const int nodes = 4, g = 4, n = nodes * g;
  const std::uint64_t bytes = 1 << 30;
  const Topology topo = build_rail_fat_tree(small_fat_tree(nodes, g, 64, 1.0));
  const double t = run_on(topo, CollectiveOp::AllToAll, Algorithm::Direct, bytes);
  const double expected = (n - g) / static_cast<double>(n) * bytes / kLink_Bps;
  EXPECT_NEAR(t, expected, 0.01 * expected);
}

TEST(FlowCollectives, OversubscriptionSlowsSpineCrossingAllToAllByItsRatio) {
  // With one NIC per leaf every inter-node byte crosses the spine: a 2:1 leaf uplink
  // halves what each NIC can send, so the all-to-all takes twice as long.
  const int nodes = 8, g = 2;
  const std::uint64_t bytes = 1 << 30;
  const double full = run_on(build_rail_fat_tree(small_fat_tree(nodes, g, 1, 1.0)),
                             CollectiveOp::AllToAll, Algorithm::Direct, bytes);
  const double half = run_on(build_rail_fat_tree(small_fat_tree(nodes, g, 1, 2.0)),
                             CollectiveOp::AllToAll, Algorithm::Direct, bytes);
  EXPECT_NEAR(half / full, 2.0, 0.02);
  // With one leaf per rail, same-rail traffic stays under the leaf: of each GPU's 12
  // inter-node shares (4 nodes x 4 GPUs) 9 cross the spine, so the uplinks carry
  // 9/12 of the NIC volume at half the NIC rate: slowdown 2 x 9/12 = 1.5.
  const double full4 = run_on(build_rail_fat_tree(small_fat_tree(4, 4, 64, 1.0)),
                              CollectiveOp::AllToAll, Algorithm::Direct, bytes);
  const double half4 = run_on(build_rail_fat_tree(small_fat_tree(4, 4, 64, 2.0)),
                              CollectiveOp::AllToAll, Algorithm::Direct, bytes);
  EXPECT_NEAR(half4 / full4, 1.5, 0.015);
}

TEST(FlowCollectives, HierarchicalAllReduceOnFatTree) {
  // Intra RS of S over NVLink (g-1 steps of S/g), rail rings of S/g over the NICs
  // (2(H-1) steps of S/(gH)), intra AG: sum of the three phases.
  const int nodes = 4, g = 4;
  const std::uint64_t bytes = 1 << 30;
  const Topology topo = build_rail_fat_tree(small_fat_tree(nodes, g, 64, 1.0));
  const double t = run_on(topo, CollectiveOp::AllReduce, Algorithm::Hierarchical, bytes);
  const double intra = (g - 1.0) / g * bytes / 450e9;
  const double inter = 2.0 * (nodes - 1) / nodes * (bytes / g) / kLink_Bps;
  const double expected = 2 * intra + inter;
  EXPECT_NEAR(t, expected, 0.01 * expected);
}

TEST(FlowCollectives, MultiChannelRingUsesEveryNic) {
  // 4 nodes x 4 GPUs: 4 channels, each NIC carries 1/4 of the ring volume, NVLink
  // carries 3/4 at 9x the rate: NIC-bound at 2(n-1)/n * S / (4 * B_nic).
  const int nodes = 4, g = 4, n = nodes * g;
  const std::uint64_t bytes = 1 << 30;
  const Topology topo = build_rail_fat_tree(small_fat_tree(nodes, g, 64, 1.0));
  const double t = run_on(topo, CollectiveOp::AllReduce, Algorithm::Ring, bytes);
  const double expected = 2.0 * (n - 1) / n * bytes / (g * kLink_Bps);
  EXPECT_NEAR(t, expected, 0.01 * expected);
}

TEST(FlowCollectives, StreamedRingStillSharesLinksWithOtherTraffic) {
  // 4 NPUs; while the ring runs, NPU 0 also sends the ring's per-link volume V to NPU 2.
  // Link 0 -> switch carries the ring flow 0 -> 1 and that transfer, and switch -> 2
  // carries 1 -> 2 and it: each gets B/2, so the ring's bandwidth term doubles.
  const int n = 4;
  const std::uint64_t bytes = 1 << 30;
  const std::uint64_t volume = 2 * (n - 1) * (bytes / n);
  Simulator sim;
  const Topology topo = flat_switch(n);
  FlowNetwork net(sim, topo);
  CollectiveRequest req;
  req.op = CollectiveOp::AllReduce;
  req.algo = Algorithm::Ring;
  req.ranks = iota_ranks(n);
  req.bytes = bytes;
  double ring_done = -1, other_done = -1;
  start_collective(net, req, [&] { ring_done = sim.now(); });
  net.transfer(Transfer{0, 2, volume}, [&] { other_done = sim.now(); });
  sim.run();
  const double alpha_s = 2 * kHop_s;
  EXPECT_NEAR(other_done, alpha_s + 2.0 * volume / kLink_Bps, 1e-6);
  const double expected = 2 * (n - 1) * alpha_s + 2.0 * volume / kLink_Bps;
  EXPECT_NEAR(ring_done, expected, 0.01 * expected);
}

TEST(FlowCollectives, SameInputSameTimesBitForBit) {
  const Topology topo = build_rail_fat_tree(small_fat_tree(4, 4, 64, 2.0));
  for (Algorithm a : {Algorithm::Ring, Algorithm::Tree, Algorithm::Hierarchical}) {
    const double x = run_on(topo, CollectiveOp::AllReduce, a, 123456789);
    const double y = run_on(topo, CollectiveOp::AllReduce, a, 123456789);
    EXPECT_EQ(x, y) << to_string(a);
  }
}

}  // namespace
}  // namespace overlapsim::sim
