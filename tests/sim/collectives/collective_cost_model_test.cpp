#include "sim/collectives/collective_cost_model.hpp"

#include <gtest/gtest.h>

#include "sim/engine/simulator.hpp"
#include "sim/network/flow_network.hpp"
#include "sim/topology/builders.hpp"

namespace overlapsim::sim {
namespace {

constexpr double kLinkBps = 400e9;
constexpr std::uint64_t kMiB = 1ull << 20;

// allreduce measured on 2 GPUs: 10 us + busbw 200 GB/s below 16 MiB, 30 us + 300 GB/s above.
CollectiveProfile two_gpu_profile() {
  CollectiveCurve c;
  c.op = CollectiveOp::AllReduce;
  c.ranks = 2;
  c.segments = {{0, 10e-6, 200e9}, {16 * kMiB, 30e-6, 300e9}};
  c.source = {SourceKind::Measured, "test rows", 0.01};
  CollectiveProfile p;
  p.curves.push_back(c);
  return p;
}

Topology nvswitch(int gpus) { return build_nvswitch_node({gpus, kLinkBps, 0.0}); }

// Hosts of `gpus` GPUs, one 50 GB/s NIC each, on a rail fat tree of leaves with
// `leaf_down_ports` ports down and `spines` spines.
Topology rail_fat_tree(int nodes, int gpus, int leaf_down_ports, int spines) {
  RailFatTreeSpec spec;
  spec.nodes = nodes;
  spec.node = NvSwitchNodeSpec{gpus, 450e9, 0.5e-6};
  spec.nics_per_node = gpus;
  spec.nic_bandwidth_Bps = 50e9;
  spec.gpu_nic_bandwidth_Bps = 63e9;
  spec.gpu_nic_latency_s = 1e-6;
  spec.link_latency_s = 0.2e-6;
  spec.leaf_down_ports = leaf_down_ports;
  spec.spines = spines;
  return build_rail_fat_tree(spec);
}

CollectiveRequest allreduce(int ranks, std::uint64_t bytes) {
  CollectiveRequest r;
  r.op = CollectiveOp::AllReduce;
  r.bytes = bytes;
  for (int i = 0; i < ranks; ++i) r.ranks.push_back(i);
  return r;
}

struct Timed {
  double time_s = -1;
  CollectivePath path = CollectivePath::Cluster;
  std::vector<CollectiveClassUse> uses;
};

Timed time_one(const Topology& topo, const CollectiveProfile& profile, const CollectiveRequest& req,
               CollectiveTimingOptions options) {
  Simulator clock;
  FlowNetwork net(clock, topo);
  CollectiveCostModel timer(profile, net, options);
  Timed out;
  timer.launcher()(req, [&] { out.time_s = clock.now(); });
  clock.run();
  for (auto p : {CollectivePath::Curve, CollectivePath::Efficiency, CollectivePath::Cluster})
    if (timer.launches(p) == 1) out.path = p;
  out.uses = timer.uses();
  return out;
}

CollectiveTimingOptions nvlink() {
  CollectiveTimingOptions o;
  o.nvlink_Bps = kLinkBps;
  o.nvlink_citation = "test datasheet";
  return o;
}

// The profile's NCCL NVLink rate (device.nccl_nvlink_bandwidth_Bps) stretches the transfer
// of an intra-host collective on the cluster path by line rate / that rate: at 4 GiB, where
// NCCL's latency and the wire are negligible, the time grows by 400 / 320 = 1.25.
TEST(CollectiveCostModel, NcclNvlinkRateStretchesIntraHostClusterTransfers) {
  const CollectiveProfile none;
  const auto req = allreduce(8, 4096 * kMiB);
  const Timed line = time_one(nvswitch(8), none, req, nvlink());
  auto options = nvlink();
  options.nccl_nvlink_Bps = 320e9;
  options.nccl_nvlink_citation = "test rate";
  const Timed nccl = time_one(nvswitch(8), none, req, options);
  EXPECT_EQ(nccl.path, CollectivePath::Cluster);
  EXPECT_NEAR(nccl.time_s / line.time_s, 1.25, 1e-3);
  EXPECT_NE(nccl.uses.at(0).how.find("NVLink at the 320 GB/s NCCL reaches (test rate)"),
            std::string::npos)
      << nccl.uses.at(0).how;
  // A rate at or above the line rate is no speed-up; without an NVLink rate (PCIe hosts)
  // the key does nothing.
  options.nccl_nvlink_Bps = 500e9;
  EXPECT_DOUBLE_EQ(time_one(nvswitch(8), none, req, options).time_s, line.time_s);
  auto pcie = CollectiveTimingOptions{};
  pcie.nccl_nvlink_Bps = 320e9;
  EXPECT_DOUBLE_EQ(time_one(nvswitch(8), none, req, pcie).time_s,
                   time_one(nvswitch(8), none, req, CollectiveTimingOptions{}).time_s);
}

TEST(CollectiveCostModel, MeasuredSizeUsesTheCurve) {
  const auto profile = two_gpu_profile();
  const Timed t = time_one(nvswitch(8), profile, allreduce(2, 64 * kMiB), nvlink());
  EXPECT_EQ(t.path, CollectivePath::Curve);
  EXPECT_DOUBLE_EQ(t.time_s, 30e-6 + 64.0 * kMiB / 300e9);
}

// Between compute kernels (a step's collectives, the default) the curve's
// in_compute_loop_factor stretches the measured paths; timed alone it does not.
TEST(CollectiveCostModel, InComputeLoopFactorStretchesTheMeasuredPaths) {
  auto profile = two_gpu_profile();
  profile.curves[0].in_compute_loop_factor =
      Sourced{1.05, {SourceKind::Measured, "loop rows", 0.01}};
  const double curve_s = 30e-6 + 64.0 * kMiB / 300e9;
  const Timed in_loop = time_one(nvswitch(8), profile, allreduce(2, 64 * kMiB), nvlink());
  EXPECT_DOUBLE_EQ(in_loop.time_s, 1.05 * curve_s);
  EXPECT_NE(in_loop.uses.at(0).how.find("x 1.05 between compute kernels"), std::string::npos)
      << in_loop.uses.at(0).how;
  CollectiveTimingOptions alone_options = nvlink();
  alone_options.in_compute_loop = false;
  const Timed alone = time_one(nvswitch(8), profile, allreduce(2, 64 * kMiB), alone_options);
  EXPECT_DOUBLE_EQ(alone.time_s, curve_s);
  // The efficiency path (8 ranks from the 2-rank curve): latency and stretched transfer.
  const Timed eff = time_one(nvswitch(8), profile, allreduce(8, 64 * kMiB), nvlink());
  const Timed eff_alone = time_one(nvswitch(8), profile, allreduce(8, 64 * kMiB), alone_options);
  ASSERT_EQ(eff.path, CollectivePath::Efficiency);
  EXPECT_NEAR(eff.time_s, 1.05 * eff_alone.time_s, 1e-9 * eff.time_s);
  // Without an NVLink rate (the validator's pairs): the same curve, no efficiency path.
  const Timed plain = time_one(nvswitch(2), profile, allreduce(2, 64 * kMiB), {});
  EXPECT_DOUBLE_EQ(plain.time_s, 1.05 * curve_s);
}

// On 8 GPUs the flow network's ring all-reduce takes 2(n-1)/n S / B; stretched by B / busbw
// and after the segment's latency that is latency + 2(n-1)/n S / busbw: the curve's bus
// bandwidth carried to the other size, as nccl-tests' busbw convention assumes.
TEST(CollectiveCostModel, OtherSizeRunsTheFlowNetworkAtTheMeasuredEfficiency) {
  const auto profile = two_gpu_profile();
  const double s = 64.0 * kMiB;
  const Timed big = time_one(nvswitch(8), profile, allreduce(8, 64 * kMiB), nvlink());
  EXPECT_EQ(big.path, CollectivePath::Efficiency);
  EXPECT_NEAR(big.time_s, 30e-6 + 1.75 * s / 300e9, 1e-3 * big.time_s);
  // Below 16 MiB the first segment's latency and bandwidth apply.
  const Timed small = time_one(nvswitch(8), profile, allreduce(8, kMiB), nvlink());
  EXPECT_NEAR(small.time_s, 10e-6 + 1.75 * kMiB / 200e9, 1e-3 * small.time_s);
  ASSERT_EQ(big.uses.size(), 1u);
  EXPECT_EQ(big.uses[0].label, "allreduce n=8 intra-host");
  EXPECT_NE(big.uses[0].how.find("efficiency 0.50-0.75"), std::string::npos) << big.uses[0].how;
  EXPECT_NE(big.uses[0].how.find("test rows"), std::string::npos);
  EXPECT_NE(big.uses[0].how.find("test datasheet"), std::string::npos);
}

// The cluster path as bare flows (NCCL's costs off), the uncalibrated network.
CollectiveTimingOptions bare(CollectiveTimingOptions o = {}) {
  o.nccl_costs = false;
  return o;
}

TEST(CollectiveCostModel, WithoutNvlinkRateOtherSizesStayOnTheClusterLinks) {
  const auto profile = two_gpu_profile();
  const Timed t = time_one(nvswitch(8), profile, allreduce(8, 64 * kMiB), bare());
  EXPECT_EQ(t.path, CollectivePath::Cluster);
  EXPECT_NEAR(t.time_s, 1.75 * 64.0 * kMiB / kLinkBps, 1e-3 * t.time_s);
  // With NCCL's costs (the default) the same flows come after NCCL's launch latency
  // (at least the 8.4 us Simple base) and no faster.
  const Timed nccl = time_one(nvswitch(8), profile, allreduce(8, 64 * kMiB), {});
  EXPECT_EQ(nccl.path, CollectivePath::Cluster);
  EXPECT_GE(nccl.time_s, t.time_s + 8.4e-6);
  EXPECT_NE(nccl.uses[0].how.find("NCCL"), std::string::npos) << nccl.uses[0].how;
}

TEST(CollectiveCostModel, AcrossHostsAndUnmeasuredOpsUseTheClusterLinks) {
  const auto profile = two_gpu_profile();
  // Two hosts of one GPU each on a switch: the curve for 2 ranks must not apply.
  const Topology two_hosts = build_flat_switch({2, kLinkBps, 0.0, 1});
  const Timed across = time_one(two_hosts, profile, allreduce(2, 64 * kMiB), bare(nvlink()));
  EXPECT_EQ(across.path, CollectivePath::Cluster);
  EXPECT_NEAR(across.time_s, 64.0 * kMiB / kLinkBps, 1e-3 * across.time_s);
  EXPECT_EQ(across.uses[0].label, "allreduce n=2 inter-host");
  CollectiveRequest gather = allreduce(8, 64 * kMiB);
  gather.op = CollectiveOp::AllGather;
  const Timed unmeasured = time_one(nvswitch(8), profile, gather, nvlink());
  EXPECT_EQ(unmeasured.path, CollectivePath::Cluster);
}

TEST(CollectiveCostModel, SendRecvCanTakeTheAllToAllRate) {
  // All-to-all measured on 2 GPUs: 20 us + busbw 150 GB/s. A 32 MiB send inside the host
  // reads it at the all-to-all of 2 x 32 MiB (whose piece per peer is the send): 20 us, then
  // the flow at link rate stretched by 400 / 150, with the option; the cluster path without.
  CollectiveProfile profile = two_gpu_profile();
  CollectiveCurve a2a;
  a2a.op = CollectiveOp::AllToAll;
  a2a.ranks = 2;
  a2a.segments = {{0, 5e-6, 50e9}, {64 * kMiB, 20e-6, 150e9}};
  a2a.source = {SourceKind::Measured, "a2a rows", 0.01};
  profile.curves.push_back(a2a);
  CollectiveRequest send;
  send.op = CollectiveOp::SendRecv;
  send.ranks = {0, 3};
  send.bytes = 32 * kMiB;
  EXPECT_EQ(time_one(nvswitch(4), profile, send, nvlink()).path, CollectivePath::Cluster);
  CollectiveTimingOptions o = nvlink();
  o.sendrecv_from_alltoall = true;
  const Timed t = time_one(nvswitch(4), profile, send, o);
  EXPECT_EQ(t.path, CollectivePath::Efficiency);
  EXPECT_NEAR(t.time_s, 20e-6 + 32.0 * kMiB / 150e9, 1e-3 * t.time_s);
  EXPECT_NE(t.uses[0].how.find("alltoall n=2 curve (NCCL's all-to-all is grouped send/recv"),
            std::string::npos)
      << t.uses[0].how;
  // Across hosts it stays on the cluster links.
  const Timed across = time_one(
      build_flat_switch({2, kLinkBps, 0.0, 1}), profile,
      [&] {
        CollectiveRequest r = send;
        r.ranks = {0, 1};
        return r;
      }(),
      o);
  EXPECT_EQ(across.path, CollectivePath::Cluster);
}

TEST(CollectiveCostModel, MeasuredBusBandwidthAboveTheLinkIsNotASpeedUp) {
  auto profile = two_gpu_profile();
  profile.curves[0].segments = {{0, 0.0, 2 * kLinkBps}};
  const Timed t = time_one(nvswitch(8), profile, allreduce(8, 64 * kMiB), nvlink());
  EXPECT_EQ(t.path, CollectivePath::Efficiency);
  EXPECT_NEAR(t.time_s, 1.75 * 64.0 * kMiB / kLinkBps, 1e-3 * t.time_s);
}

TEST(CollectiveCostModel, MeasuredPathsChargeTheCallLatency) {
  const auto profile = two_gpu_profile();
  Simulator clock;
  const Topology topo = nvswitch(8);
  FlowNetwork net(clock, topo);
  const CollectiveCostModel timer(profile, net, nvlink());
  EXPECT_TRUE(timer.charges_call_latency(CollectiveOp::AllReduce, 2, true));
  EXPECT_TRUE(timer.charges_call_latency(CollectiveOp::AllReduce, 8, true));
  // The cluster path charges it too, through NCCL's costs; bare flows do not.
  EXPECT_TRUE(timer.charges_call_latency(CollectiveOp::AllReduce, 8, false));
  EXPECT_TRUE(timer.charges_call_latency(CollectiveOp::AllGather, 8, true));
  const CollectiveCostModel flows(profile, net, bare(nvlink()));
  EXPECT_FALSE(flows.charges_call_latency(CollectiveOp::AllReduce, 8, false));
  EXPECT_FALSE(flows.charges_call_latency(CollectiveOp::AllGather, 8, true));
  EXPECT_TRUE(timer.intra_host({0, 3, 7}));
}

TEST(CollectiveCostModel, CallTimeIsKnownAheadOnlyOnTheCurvePath) {
  const auto profile = two_gpu_profile();
  Simulator clock;
  const Topology topo = nvswitch(8);
  FlowNetwork net(clock, topo);
  const CollectiveCostModel costs(profile, net, nvlink());
  // 10 us + 1 MiB / 200 GB/s on the 2-rank curve (2(n-1)/n = 1).
  const auto t = costs.call_time_s(CollectiveOp::AllReduce, kMiB, 2, true);
  ASSERT_TRUE(t);
  EXPECT_NEAR(*t, 10e-6 + kMiB / 200e9, 1e-15);
  EXPECT_FALSE(costs.call_time_s(CollectiveOp::AllReduce, kMiB, 8, true));   // efficiency
  EXPECT_FALSE(costs.call_time_s(CollectiveOp::AllReduce, kMiB, 2, false));  // across hosts
}

TEST(CollectiveCostModel, MeasuredTimesAreInterpolatedAndTimeEveryCollective) {
  const CollectiveProfile none;
  Simulator clock;
  const Topology topo = nvswitch(8);
  FlowNetwork net(clock, topo);
  CollectiveCostModel costs(none, net);
  costs.set_measured_times({{4 * kMiB, 30e-6}, {kMiB, 10e-6}});  // any order
  EXPECT_EQ(costs.path(CollectiveOp::AllGather, 8, false), CollectivePath::Curve);
  EXPECT_NEAR(*costs.call_time_s(CollectiveOp::AllReduce, 2 * kMiB, 8, true), 10e-6 + 20e-6 / 3,
              1e-15);
  EXPECT_NEAR(*costs.call_time_s(CollectiveOp::AllReduce, kMiB / 2, 8, true), 5e-6, 1e-15);
  // Beyond the last point: the last segment extended.
  EXPECT_NEAR(*costs.call_time_s(CollectiveOp::AllReduce, 8 * kMiB, 8, true), 10e-6 + 7 * 20e-6 / 3,
              1e-15);
  double done = -1;
  costs.launch(allreduce(2, 2 * kMiB), [&] { done = clock.now(); });
  clock.run();
  EXPECT_NEAR(done, 10e-6 + 20e-6 / 3, 1e-15);
}

// The model keeps what it derives per communicator (path, class, NCCL's cost per call) in a
// table that grows past its first 1,024 slots here: every call, the first on its
// communicator or a repeat, must take the time a fresh model gives it, and count once. The
// pairs differ (same host, same leaf, across spines), so a call answered with another
// communicator's entry would take another time.
TEST(CollectiveCostModel, RepeatedCallsOnManyCommunicatorsTimeAsOnAFreshModel) {
  const CollectiveProfile none;
  const Topology topo = rail_fat_tree(32, 2, 4, 2);
  const int gpus = topo.num_gpus();  // 64: 4,032 ordered pairs
  Simulator clock;
  FlowNetwork net(clock, topo);
  CollectiveCostModel costs(none, net, nvlink());
  long calls = 0;
  // Rounds of 1, 2 and 1 MiB over the same 1,344 pairs: new communicators, a new call on a
  // known one, and repeats.
  for (int round = 0; round < 3; ++round)
    for (int src = 0; src < gpus; ++src)
      for (int dst = 0; dst < gpus; ++dst) {
        if (src == dst || (src + dst) % 3 != 0) continue;
        CollectiveRequest req;
        req.op = CollectiveOp::SendRecv;
        req.ranks = {src, dst};
        req.bytes = (round == 1 ? 2 : 1) * kMiB;
        const double t0 = clock.now();
        double done = -1;
        costs.launch(req, [&] { done = clock.now(); });
        clock.run();
        ++calls;
        const Timed fresh = time_one(topo, none, req, nvlink());
        ASSERT_NEAR(done - t0, fresh.time_s, 1e-9 * fresh.time_s)  // t0 grows: rounding
            << src << "->" << dst << " round " << round;
      }
  long counted = 0;
  for (const auto& use : costs.uses()) counted += use.launches;
  EXPECT_EQ(counted, calls);
  EXPECT_EQ(costs.launches(CollectivePath::Cluster), calls);
}

// Measured times set after a communicator was first timed on the network take over its
// next call (what the model kept per communicator is dropped).
TEST(CollectiveCostModel, MeasuredTimesSetLaterTakeOverAKnownCommunicator) {
  const CollectiveProfile none;
  Simulator clock;
  const Topology topo = build_flat_switch({2, kLinkBps, 0.0, 1});
  FlowNetwork net(clock, topo);
  CollectiveCostModel costs(none, net);
  costs.launch(allreduce(2, kMiB), [] {});
  clock.run();
  EXPECT_EQ(costs.launches(CollectivePath::Cluster), 1);
  costs.set_measured_times({{kMiB, 10e-6}});
  const double t0 = clock.now();
  double done = -1;
  costs.launch(allreduce(2, kMiB), [&] { done = clock.now(); });
  clock.run();
  EXPECT_EQ(costs.launches(CollectivePath::Curve), 1);
  EXPECT_NEAR(done - t0, 10e-6, 1e-15);
}

TEST(CollectiveCostModel, CtaLimitedStretchIsTheRatioOfTheMeasuredCurves) {
  auto profile = two_gpu_profile();
  CollectiveCurve limited = profile.curves[0];
  limited.ctas = 16;
  limited.segments = {{0, 20e-6, 100e9}};
  profile.curves.push_back(limited);
  Simulator clock;
  const Topology topo = nvswitch(8);
  FlowNetwork net(clock, topo);
  const CollectiveCostModel costs(profile, net);
  const double bytes = static_cast<double>(kMiB);
  const auto s = costs.cta_limited_stretch(CollectiveOp::AllReduce, kMiB, 2, 16);
  ASSERT_TRUE(s);
  EXPECT_NEAR(*s, (20e-6 + bytes / 100e9) / (10e-6 + bytes / 200e9), 1e-12);
  EXPECT_FALSE(costs.cta_limited_stretch(CollectiveOp::AllReduce, kMiB, 2, 8));  // not measured
  EXPECT_FALSE(costs.cta_limited_stretch(CollectiveOp::AllToAll, kMiB, 2, 16));
}

}  // namespace
}  // namespace overlapsim::sim

namespace overlapsim::sim {
namespace {

// Background sends started together: the four same-leaf sends of one instant become one
// weighted solver flow, each carrying what it would alone, and they are counted as four
// launches. A foreground send on one of their links finishes when it does when each
// background send is its own flow.
TEST(CollectiveCostModel, BackgroundSendsAggregateAndLoadTheLinksAsSeparateSends) {
  const Topology topo = rail_fat_tree(8, 1, 8, 1);
  auto send = [](int src, int dst) {
    CollectiveRequest r;
    r.op = CollectiveOp::SendRecv;
    r.ranks = {src, dst};
    r.peer = 1;
    r.bytes = 8 * kMiB;
    return r;
  };
  // Rank 0 -> 4 in the foreground; 1 -> 5, 2 -> 6, 3 -> 7 and 0 -> 5 (sharing rank 0's NIC)
  // in the background.
  const std::vector<CollectiveRequest> images = {send(1, 5), send(2, 6), send(3, 7), send(0, 5)};
  auto run = [&](bool together) {
    Simulator clock;
    FlowNetwork net(clock, topo);
    CollectiveCostModel costs(CollectiveProfile{}, net, nvlink());
    double done = -1;
    costs.launch(send(0, 4), [&] { done = clock.now(); });
    if (together)
      costs.launch_background(images);
    else
      for (const auto& r : images) costs.launch(r, [] {});
    clock.run();
    EXPECT_EQ(costs.launches(CollectivePath::Cluster), 5);
    return std::make_pair(done, net.stats().flows_simulated);
  };
  const auto [apart_s, apart_flows] = run(false);
  const auto [together_s, together_flows] = run(true);
  EXPECT_EQ(apart_flows, 5u);
  EXPECT_LT(together_flows, apart_flows);
  EXPECT_GT(apart_s, 0);
  EXPECT_NEAR(together_s, apart_s, 1e-12 * apart_s);
}

}  // namespace
}  // namespace overlapsim::sim
