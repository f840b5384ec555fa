#include "sim/network/flow_network.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/engine/simulator.hpp"
#include "sim/network/maxmin.hpp"
#include "sim/topology/builders.hpp"

using namespace overlapsim::sim;

namespace {

constexpr double kB = 10e9;    // 10 GB/s per link direction
constexpr double kLat = 1e-6;  // 1 us per hop
constexpr std::uint64_t kS = 1u << 20;
constexpr double kSB = static_cast<double>(kS) / kB;  // S/B

// n GPUs (one host each) on one switch: every GPU-to-GPU path is up-link + down-link.
Topology star(int n, double bw_Bps = kB, double lat_s = kLat) {
  Topology t("star");
  const VertexId sw = t.add_node(NodeKind::Switch, "sw");
  for (int i = 0; i < n; ++i) t.connect(t.add_gpu(i), sw, bw_Bps, lat_s, LinkClass::Network);
  return t;
}

// Builds "s3" etc. (spelled out: GCC 12 warns falsely (-Wrestrict) on "s" + to_string).
std::string fmt_name(const char* prefix, int i) {
  std::string name(prefix);
  name += std::to_string(i);
  return name;
}

// Switches s0 - s1 - ... - s(n-1) in a line (NvLink class, B), GPU i hanging off s_i by a
// fast access link (Pcie class, 100 B). Every hop costs kLat.
Topology chain(int n) {
  Topology t("chain");
  std::vector<VertexId> sw;
  for (int i = 0; i < n; ++i) {
    sw.push_back(t.add_node(NodeKind::Switch, fmt_name("s", i)));
    t.connect(t.add_gpu(i), sw.back(), 100 * kB, kLat, LinkClass::Pcie);
  }
  for (int i = 0; i + 1 < n; ++i) t.connect(sw[i], sw[i + 1], kB, kLat, LinkClass::NvLink);
  return t;
}

void expect_rel(double actual, double expected, double rel = 1e-9) {
  EXPECT_NEAR(actual, expected, std::abs(expected) * rel) << "expected " << expected;
}

}  // namespace

TEST(FlowNetwork, OneFlowTakesAlphaPlusSOverB) {
  Simulator sim;
  const Topology topo = star(2);
  FlowNetwork net(sim, topo);
  double done_s = -1;
  net.transfer({0, 1, kS}, [&] { done_s = sim.now(); });
  sim.run();
  expect_rel(done_s, 2 * kLat + kSB);
  EXPECT_EQ(net.stats().flows_started, 1u);
  EXPECT_EQ(net.stats().rate_solves, 1u);  // at the start; nothing is left to solve at the end
}

TEST(FlowNetwork, BytesOnClassGrowWhileFlowsAreInFlight) {
  // Two flows share 2's down-link at B/2 each, over two Network hops each. Halfway through
  // (S/B), each has sent S/2 on both hops: 2 x 2 x S/2 byte-hops; at the end 4S.
  Simulator sim;
  const Topology topo = star(3);
  FlowNetwork net(sim, topo);
  net.transfer({0, 2, kS}, [] {});
  net.transfer({1, 2, kS}, [] {});
  double halfway = -1;
  sim.schedule(kSB, [&] { halfway = net.bytes_on_class(LinkClass::Network); });
  sim.run();
  expect_rel(halfway, 2.0 * kS);
  EXPECT_DOUBLE_EQ(net.bytes_on_class(LinkClass::Network), 4.0 * kS);
  EXPECT_EQ(net.bytes_on_class(LinkClass::NvLink), 0.0);
}

TEST(FlowNetwork, TwoFlowsSharingALinkFinishAtTwoSOverB) {
  Simulator sim;
  const Topology topo = star(3);
  FlowNetwork net(sim, topo);
  std::vector<double> done_s;
  net.transfer({0, 2, kS}, [&] { done_s.push_back(sim.now()); });
  net.transfer({1, 2, kS}, [&] { done_s.push_back(sim.now()); });
  sim.run();
  ASSERT_EQ(done_s.size(), 2u);
  for (double t : done_s) expect_rel(t, 2 * kLat + 2 * kSB);
  EXPECT_EQ(net.stats().rate_solves, 1u);  // both start in one solve and end together
}

TEST(FlowNetwork, FlowJoiningMidFlightChangesRates) {
  // A runs alone at B for S/(2B) (half sent), then shares at B/2: its other half takes S/B.
  // B meanwhile sends S/2, then finishes its last S/2 alone at full rate.
  Simulator sim;
  const Topology topo = star(3);
  FlowNetwork net(sim, topo);
  double a_done = -1, b_done = -1;
  net.transfer({0, 2, kS}, [&] { a_done = sim.now(); });
  sim.schedule(kSB / 2, [&] { net.transfer({1, 2, kS}, [&] { b_done = sim.now(); }); });
  sim.run();
  expect_rel(a_done, 1.5 * kSB + 2 * kLat);
  expect_rel(b_done, 2.0 * kSB + 2 * kLat);
}

TEST(FlowNetwork, ParkingLotShortFlowsLeaveThenLongFlowSpeedsUp) {
  // Switch line s0-s1-s2-s3: a long flow 0->3 (S) and short flows 0->1, 1->2, 2->3 (S/2):
  // all at B/2 until the short ones end at S/B; the long one then has S/2 left at B.
  Simulator sim;
  const Topology topo = chain(4);
  FlowNetwork net(sim, topo);
  double long_done = -1;
  std::vector<double> short_done;
  net.transfer({0, 3, kS}, [&] { long_done = sim.now(); });
  const std::vector<Transfer> shorts = {{0, 1, kS / 2}, {1, 2, kS / 2}, {2, 3, kS / 2}};
  for (const Transfer& t : shorts) net.transfer(t, [&] { short_done.push_back(sim.now()); });
  sim.run();
  ASSERT_EQ(short_done.size(), 3u);
  for (double t : short_done) expect_rel(t, kSB + 3 * kLat);
  expect_rel(long_done, 1.5 * kSB + 5 * kLat);
  // Byte-hops: the long flow crosses 3 NvLink and 2 Pcie links, each short one 1 and 2.
  EXPECT_DOUBLE_EQ(net.bytes_on_class(LinkClass::NvLink), 3.0 * kS + 3 * (kS / 2));
  EXPECT_DOUBLE_EQ(net.bytes_on_class(LinkClass::Pcie), 2.0 * kS + 3 * 2 * (kS / 2));
  EXPECT_DOUBLE_EQ(net.bytes_on_class(LinkClass::Network), 0.0);
}

TEST(FlowNetwork, StaggeredGroupsEachWaitForTheirLastTransfer) {
  // Group 1: 0->1 (S) and 2->3 (2S), disjoint paths: done when the 2S one arrives.
  // Group 2 starts at 0.5 S/B: 4->1 (S) shares 1's down-link with group 1's first flow.
  Simulator sim;
  const Topology topo = star(5);
  FlowNetwork net(sim, topo);
  double g1 = -1, g2 = -1;
  int g1_calls = 0;
  const std::vector<Transfer> group1 = {{0, 1, kS}, {2, 3, 2 * kS}};
  net.transfer_group(group1, [&] {
    g1 = sim.now();
    ++g1_calls;
  });
  sim.schedule(kSB / 2, [&] {
    const std::vector<Transfer> group2 = {{4, 1, kS}};
    net.transfer_group(group2, [&] { g2 = sim.now(); });
  });
  sim.run();
  EXPECT_EQ(g1_calls, 1);
  expect_rel(g1, 2 * kSB + 2 * kLat);  // 0->1 ends at 1.5 S/B; 2->3 at 2 S/B
  expect_rel(g2, 2 * kSB + 2 * kLat);  // S/2 at B/2 until 1.5 S/B, then S/2 at B
}

TEST(FlowNetwork, GroupWaitsForItsLatestArrivalNotItsLastByteOut) {
  // 0->1 over a slow-but-short path ends its data last; 0->2 over a high-latency path ends
  // its data first but arrives last. The group completes at the later arrival.
  Simulator sim;
  Topology topo("two-paths");
  const VertexId g0 = topo.add_gpu(0), g1 = topo.add_gpu(1), g2 = topo.add_gpu(2);
  topo.connect(g0, g1, kB / 2, 1e-6, LinkClass::NvLink);
  topo.connect(g0, g2, kB, 5e-3, LinkClass::Network);
  FlowNetwork net(sim, topo);
  double done_s = -1;
  const std::vector<Transfer> group = {{0, 1, kS}, {0, 2, kS}};
  net.transfer_group(group, [&] { done_s = sim.now(); });
  sim.run();
  expect_rel(done_s, std::max(2 * kSB + 1e-6, kSB + 5e-3));
}

TEST(FlowNetwork, TrivialTransfersCompleteAtOnce) {
  Simulator sim;
  const Topology topo = star(3);
  FlowNetwork net(sim, topo);
  std::vector<double> done_s;
  sim.schedule(0.25, [&] {
    const std::vector<Transfer> trivial = {{1, 1, kS}, {0, 2, 0}};
    net.transfer_group(trivial, [&] { done_s.push_back(sim.now()); });
    net.transfer_group({}, [&] { done_s.push_back(sim.now()); });
  });
  sim.run();
  ASSERT_EQ(done_s.size(), 2u);
  EXPECT_EQ(done_s[0], 0.25);
  EXPECT_EQ(done_s[1], 0.25);
  EXPECT_EQ(net.stats().flows_started, 0u);
  EXPECT_EQ(net.stats().rate_solves, 0u);

  // Mixed with a real transfer, the group waits for that one only.
  double mixed_s = -1;
  const std::vector<Transfer> mixed = {{1, 1, kS}, {0, 1, kS}, {2, 0, 0}};
  net.transfer_group(mixed, [&] { mixed_s = sim.now(); });
  sim.run();
  expect_rel(mixed_s, 0.25 + kSB + 2 * kLat);
}

TEST(FlowNetwork, IdenticalTransfersAggregateWithoutChangingTimes) {
  // Three identical transfers in one group become one flow of multiplicity 3; three
  // separate groups stay three flows. Both finish at 3 S/B, as do unsorted groups.
  const std::vector<Transfer> triple = {{0, 2, kS}, {0, 2, kS}, {0, 2, kS}};
  auto run_grouped = [&](std::vector<Transfer> transfers, FlowNetworkStats* stats) {
    Simulator sim;
    const Topology topo = star(3);
    FlowNetwork net(sim, topo);
    double done_s = -1;
    net.transfer_group(transfers, [&] { done_s = sim.now(); });
    sim.run();
    *stats = net.stats();
    return done_s;
  };
  FlowNetworkStats agg{};
  const double aggregated = run_grouped(triple, &agg);
  EXPECT_EQ(agg.flows_started, 3u);
  EXPECT_EQ(agg.flows_simulated, 1u);
  expect_rel(aggregated, 3 * kSB + 2 * kLat);

  Simulator sim;
  const Topology topo = star(3);
  FlowNetwork net(sim, topo);
  std::vector<double> done_s;
  for (const Transfer& t : triple) net.transfer(t, [&] { done_s.push_back(sim.now()); });
  sim.run();
  EXPECT_EQ(net.stats().flows_simulated, 3u);
  for (double t : done_s) EXPECT_DOUBLE_EQ(t, aggregated);

  // Unsorted with duplicates: same times as the same transfers sorted.
  const std::vector<Transfer> unsorted = {{2, 0, kS}, {1, 0, kS}, {2, 0, kS}, {0, 1, 2 * kS}};
  const std::vector<Transfer> sorted = {{0, 1, 2 * kS}, {1, 0, kS}, {2, 0, kS}, {2, 0, kS}};
  FlowNetworkStats s1{}, s2{};
  EXPECT_EQ(run_grouped(unsorted, &s1), run_grouped(sorted, &s2));
  EXPECT_EQ(s1.flows_simulated, 3u);
  EXPECT_EQ(s2.flows_simulated, 3u);
}

TEST(FlowNetwork, AggregatedAllToAllMatchesPerPairGroups) {
  // All-to-all on a star issued as one group with each pair twice (aggregated) versus
  // one group per copy of each pair (never aggregated): identical completion time.
  const int n = 6;
  std::vector<Transfer> all;
  for (int s = 0; s < n; ++s)
    for (int d = 0; d < n; ++d)
      if (s != d) {
        all.push_back({s, d, kS * (1 + static_cast<std::uint64_t>(s))});
        all.push_back({s, d, kS * (1 + static_cast<std::uint64_t>(s))});
      }
  Simulator sim1;
  const Topology topo1 = star(n);
  FlowNetwork net1(sim1, topo1);
  double one_group = -1;
  net1.transfer_group(all, [&] { one_group = sim1.now(); });
  sim1.run();
  EXPECT_EQ(net1.stats().flows_simulated, all.size() / 2);

  Simulator sim2;
  const Topology topo2 = star(n);
  FlowNetwork net2(sim2, topo2);
  double last = -1;
  for (const Transfer& t : all) net2.transfer(t, [&] { last = std::max(last, sim2.now()); });
  sim2.run();
  EXPECT_EQ(net2.stats().flows_simulated, all.size());
  expect_rel(one_group, last, 1e-9);
}

TEST(FlowNetwork, DeterministicBitForBit) {
  auto run = [] {
    Simulator sim;
    const Topology topo = star(16);
    FlowNetwork net(sim, topo);
    std::mt19937_64 rng(4242);
    std::vector<double> done;
    for (int g = 0; g < 40; ++g) {
      std::vector<Transfer> group;
      for (int i = 0; i < 20; ++i)
        group.push_back(
            {static_cast<int>(rng() % 16), static_cast<int>(rng() % 16), 1 + rng() % (8u << 20)});
      const double start_s = static_cast<double>(rng() % 1000) * 1e-5;
      sim.schedule(start_s, [&net, &done, &sim, group] {
        net.transfer_group(group, [&done, &sim] { done.push_back(sim.now()); });
      });
    }
    sim.run();
    return done;
  };
  const std::vector<double> a = run();
  const std::vector<double> b = run();
  ASSERT_EQ(a.size(), 40u);
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i], b[i]) << i;
}

TEST(FlowNetwork, ObserverSeesGroupStartAndEnd) {
  Simulator sim;
  const Topology topo = star(2);
  FlowNetwork net(sim, topo);
  std::vector<std::pair<std::uint64_t, double>> starts, ends;
  net.set_observer({[&](std::uint64_t g, double t) { starts.emplace_back(g, t); },
                    [&](std::uint64_t g, double t) { ends.emplace_back(g, t); }});
  net.transfer({0, 1, kS}, [] {});
  net.transfer({1, 1, kS}, [] {});
  sim.run();
  ASSERT_EQ(starts.size(), 2u);
  ASSERT_EQ(ends.size(), 2u);
  EXPECT_EQ(starts[0], std::make_pair(std::uint64_t{0}, 0.0));
  EXPECT_EQ(ends[0], std::make_pair(std::uint64_t{1}, 0.0));  // the trivial one, at once
  EXPECT_EQ(ends[1].first, 0u);
  expect_rel(ends[1].second, kSB + 2 * kLat);
}

TEST(FlowNetwork, RejectsRanksOutsideTheTopologyAndStartsNothing) {
  Simulator sim;
  const Topology topo = star(2);
  FlowNetwork net(sim, topo);
  bool called = false;
  const std::vector<Transfer> bad = {{0, 1, kS}, {0, 2, kS}};
  EXPECT_THROW(net.transfer_group(bad, [&] { called = true; }), std::out_of_range);
  EXPECT_THROW(net.transfer({-1, 0, kS}, [&] { called = true; }), std::out_of_range);
  sim.run();
  EXPECT_FALSE(called);
  EXPECT_EQ(net.stats().flows_started, 0u);
}

TEST(FlowNetwork, UnreachableRankThrowsAndStartsNothing) {
  Simulator sim;
  Topology topo("islands");
  topo.add_gpu(0);
  topo.add_gpu(1);
  FlowNetwork net(sim, topo);
  int starts = 0;
  net.set_observer({[&](std::uint64_t, double) { ++starts; }, nullptr});
  bool called = false;
  EXPECT_THROW(net.transfer({0, 1, kS}, [&] { called = true; }), std::runtime_error);
  sim.run();
  EXPECT_FALSE(called);
  EXPECT_EQ(starts, 0);
  EXPECT_EQ(net.stats().flows_started, 0u);
}

TEST(FlowNetwork, PathEstimateIsLatencyAndNarrowestLink) {
  Simulator sim;
  Topology topo("mixed");
  const VertexId g0 = topo.add_gpu(0), g1 = topo.add_gpu(1);
  const VertexId sw = topo.add_node(NodeKind::Switch, "sw");
  topo.connect(g0, sw, 4 * kB, 2e-6, LinkClass::Network);
  topo.connect(sw, g1, kB, 3e-6, LinkClass::Network);
  FlowNetwork net(sim, topo);
  const auto est = net.path_estimate(0, 1);
  ASSERT_TRUE(est.has_value());
  EXPECT_DOUBLE_EQ(est->latency_s, 5e-6);
  EXPECT_DOUBLE_EQ(est->bandwidth_Bps, kB);
  const auto self = net.path_estimate(1, 1);
  ASSERT_TRUE(self.has_value());
  EXPECT_EQ(self->latency_s, 0.0);
  EXPECT_EQ(self->bandwidth_Bps, std::numeric_limits<double>::infinity());
}

TEST(FlowNetwork, ManyStepsOfARingMatchTheClosedForm) {
  // n-1 ring steps of S/n each, one group per step started when the previous arrives:
  // (n-1) * (alpha + S/(n B)) on a star (each step's flows use distinct links).
  const int n = 32;
  Simulator sim;
  const Topology topo = star(n);
  FlowNetwork net(sim, topo);
  const std::uint64_t chunk = kS / n;
  std::vector<Transfer> step;
  for (int r = 0; r < n; ++r) step.push_back({r, (r + 1) % n, chunk});
  int steps_left = n - 1;
  std::function<void()> next = [&] {
    if (steps_left-- == 0) return;
    net.transfer_group(step, next);
  };
  next();
  sim.run();
  expect_rel(sim.now(), (n - 1) * (2 * kLat + static_cast<double>(chunk) / kB));
  EXPECT_EQ(net.stats().flows_simulated, static_cast<std::uint64_t>(n * (n - 1)));
}

namespace {

// 4 nodes x 2 GPUs, one 50 GB/s NIC per GPU, 2 NICs per leaf (so rails span two leaves and
// cross-leaf traffic climbs to the spine), non-blocking, one spine.
constexpr double kNic = 50e9, kPcie = 63e9, kNvl = 450e9;
constexpr double kNvlLat = 0.5e-6, kGpuNicLat = 1e-6, kHopLat = 0.2e-6;

Topology small_fat_tree() {
  RailFatTreeSpec spec;
  spec.nodes = 4;
  spec.node = NvSwitchNodeSpec{2, kNvl, kNvlLat};
  spec.nics_per_node = 2;
  spec.nic_bandwidth_Bps = kNic;
  spec.gpu_nic_bandwidth_Bps = kPcie;
  spec.gpu_nic_latency_s = kGpuNicLat;
  spec.link_latency_s = kHopLat;
  spec.leaf_down_ports = 2;
  spec.spines = 1;
  return build_rail_fat_tree(spec);
}

}  // namespace

TEST(FlowNetwork, FatTreeSingleFlowsTakeAlphaPlusSOverTheirBottleneck) {
  const Topology topo = small_fat_tree();
  Simulator sim;
  FlowNetwork net(sim, topo);
  double intra = -1, inter = -1;
  net.transfer({0, 1, kS}, [&] { intra = sim.now(); });  // same node: NVLink
  sim.run();
  const double t0 = sim.now();
  net.transfer({0, 7, kS}, [&] { inter = sim.now(); });  // other leaf, other rail: spine
  sim.run();
  expect_rel(intra, 2 * kNvlLat + static_cast<double>(kS) / kNvl);
  expect_rel(inter - t0, 2 * kGpuNicLat + 4 * kHopLat + static_cast<double>(kS) / kNic);
  EXPECT_DOUBLE_EQ(net.bytes_on_class(LinkClass::NvLink), 2.0 * kS);
  EXPECT_DOUBLE_EQ(net.bytes_on_class(LinkClass::Pcie), 2.0 * kS);
  EXPECT_DOUBLE_EQ(net.bytes_on_class(LinkClass::Network), 4.0 * kS);
}

TEST(FlowNetwork, FatTreeAllToAllIsBoundByTheNic) {
  // Each GPU sends P to each of 7 peers: 1 over NVLink, 6 through its NIC at B/6 each (the
  // leaf uplinks carry 10 flows x B/6 < 2B). Done when the inter-node ones arrive.
  const Topology topo = small_fat_tree();
  Simulator sim;
  FlowNetwork net(sim, topo);
  const std::uint64_t per_peer = 8u << 20;
  std::vector<Transfer> all;
  for (int s = 0; s < 8; ++s)
    for (int d = 0; d < 8; ++d) all.push_back({s, d, per_peer});
  double done_s = -1;
  net.transfer_group(all, [&] { done_s = sim.now(); });
  sim.run();
  expect_rel(done_s, 6.0 * static_cast<double>(per_peer) / kNic + 2 * kGpuNicLat + 4 * kHopLat);
  EXPECT_EQ(net.stats().flows_started, 56u);  // the 8 self transfers are not flows
}

TEST(FlowNetwork, LargeGroupsRunAsClassAggregatesWithTheSameTimes) {
  // The all-to-all above with aggregation forced on (threshold 1) is three solver flows,
  // one per class of pairs (NVLink, same rail and leaf, through the spine), and ends when
  // the per-pair run does, with the same bytes on every link class.
  const Topology topo = small_fat_tree();
  const std::uint64_t per_peer = 8u << 20;
  std::vector<Transfer> all;
  for (int s = 0; s < 8; ++s)
    for (int d = 0; d < 8; ++d) all.push_back({s, d, per_peer});
  auto run = [&](std::size_t threshold, FlowNetworkStats& stats, std::array<double, 3>& bytes) {
    Simulator sim;
    FlowNetwork net(sim, topo);
    net.set_aggregate_min_transfers(threshold);
    double done_s = -1;
    net.transfer_group(all, [&] { done_s = sim.now(); });
    sim.run();
    stats = net.stats();
    bytes = {net.bytes_on_class(LinkClass::NvLink), net.bytes_on_class(LinkClass::Pcie),
             net.bytes_on_class(LinkClass::Network)};
    return done_s;
  };
  FlowNetworkStats exact_stats, agg_stats;
  std::array<double, 3> exact_bytes{}, agg_bytes{};
  const double exact = run(0, exact_stats, exact_bytes);
  const double aggregated = run(1, agg_stats, agg_bytes);
  expect_rel(aggregated, exact);
  EXPECT_EQ(exact_stats.flows_simulated, 56u);
  EXPECT_EQ(agg_stats.flows_simulated, 3u);
  EXPECT_EQ(agg_stats.flows_started, 56u);
  for (int c = 0; c < 3; ++c) EXPECT_DOUBLE_EQ(agg_bytes[c], exact_bytes[c]) << "class " << c;
}

TEST(FlowNetwork, GroupsBelowTheThresholdStayPerPair) {
  const Topology topo = small_fat_tree();
  Simulator sim;
  FlowNetwork net(sim, topo);
  std::vector<Transfer> all;
  for (int s = 0; s < 8; ++s)
    for (int d = 0; d < 8; ++d) all.push_back({s, d, kS});
  net.transfer_group(all, [] {});  // 56 < the default threshold
  sim.run();
  EXPECT_EQ(net.stats().flows_simulated, 56u);
}

namespace {

// A deliberately plain reference: after every event, rates from a fresh solver over every
// active flow (no aggregation, no incremental solve, no lazy progress), time advanced to
// the next flow end or group start.
struct RefGroup {
  double start_s;
  std::vector<Transfer> transfers;
};

std::vector<double> reference_completions(const Topology& topo, const std::vector<RefGroup>& gs) {
  struct Active {
    std::vector<LinkId> links;
    double remaining;
    double latency_s;
    std::size_t group;
  };
  std::vector<double> done(gs.size(), -1);
  std::vector<std::size_t> pending(gs.size(), 0);
  std::vector<double> last_arrival(gs.size(), 0);
  std::vector<Active> active;
  std::vector<std::size_t> order(gs.size());
  for (std::size_t i = 0; i < gs.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return gs[a].start_s < gs[b].start_s; });
  std::size_t next_group = 0;
  double t = 0;
  while (next_group < order.size() || !active.empty()) {
    while (next_group < order.size() && gs[order[next_group]].start_s <= t) {
      const std::size_t g = order[next_group++];
      last_arrival[g] = gs[g].start_s;
      for (const Transfer& tr : gs[g].transfers) {
        if (tr.src_rank == tr.dst_rank || tr.bytes == 0) continue;
        std::vector<LinkId> links = topo.route(tr.src_rank, tr.dst_rank, 0);
        const double lat = topo.path_latency_s(links);
        active.push_back({std::move(links), static_cast<double>(tr.bytes), lat, g});
        ++pending[g];
      }
      if (pending[g] == 0) done[g] = gs[g].start_s;
    }
    if (active.empty()) {
      t = gs[order[next_group]].start_s;
      continue;
    }
    MaxMinSolver solver;
    for (LinkId id = 0; id < topo.num_links(); ++id)
      solver.add_resource(topo.link(id).bandwidth_Bps);
    std::vector<MaxMinSolver::FlowId> ids;
    for (const Active& a : active) ids.push_back(solver.add_flow(a.links));
    solver.solve();
    double dt = std::numeric_limits<double>::infinity();
    for (std::size_t i = 0; i < active.size(); ++i)
      dt = std::min(dt, active[i].remaining / solver.rate_Bps(ids[i]));
    if (next_group < order.size()) dt = std::min(dt, gs[order[next_group]].start_s - t);
    t += dt;
    std::vector<Active> still;
    for (std::size_t i = 0; i < active.size(); ++i) {
      Active& a = active[i];
      a.remaining -= solver.rate_Bps(ids[i]) * dt;
      if (a.remaining <= 1e-12 * solver.rate_Bps(ids[i]) * t + 1e-6) {
        last_arrival[a.group] = std::max(last_arrival[a.group], t + a.latency_s);
        if (--pending[a.group] == 0) done[a.group] = last_arrival[a.group];
      } else {
        still.push_back(std::move(a));
      }
    }
    active.swap(still);
  }
  return done;
}

}  // namespace

TEST(FlowNetwork, MatchesAPlainReferenceSimulation) {
  // Random groups on a fabric with mixed capacities: two switches joined by a narrow trunk,
  // GPUs on either side with different link speeds.
  std::mt19937_64 rng(2024);
  for (int trial = 0; trial < 8; ++trial) {
    Topology topo("two-switches");
    const VertexId a = topo.add_node(NodeKind::Switch, "a");
    const VertexId b = topo.add_node(NodeKind::Switch, "b");
    topo.connect(a, b, 20e9, 1e-6, LinkClass::Network);
    for (int i = 0; i < 12; ++i)
      topo.connect(topo.add_gpu(i), i < 6 ? a : b, (5 + static_cast<double>(rng() % 20)) * 1e9,
                   0.5e-6, LinkClass::Network);
    std::vector<RefGroup> groups;
    for (int g = 0; g < 25; ++g) {
      RefGroup group{static_cast<double>(rng() % 40) * 50e-6, {}};
      const int n = 1 + static_cast<int>(rng() % 6);
      for (int i = 0; i < n; ++i)
        group.transfers.push_back({static_cast<int>(rng() % 12), static_cast<int>(rng() % 12),
                                   (1 + rng() % 64) * (std::uint64_t{1} << 16)});
      groups.push_back(group);
    }
    const std::vector<double> expected = reference_completions(topo, groups);

    Simulator sim;
    FlowNetwork net(sim, topo);
    std::vector<double> got(groups.size(), -1);
    for (std::size_t g = 0; g < groups.size(); ++g)
      sim.schedule(groups[g].start_s, [&, g] {
        net.transfer_group(groups[g].transfers, [&, g] { got[g] = sim.now(); });
      });
    sim.run();
    for (std::size_t g = 0; g < groups.size(); ++g)
      EXPECT_NEAR(got[g], expected[g], 1e-6 * expected[g] + 1e-12)
          << "trial " << trial << " group " << g;
  }
}
