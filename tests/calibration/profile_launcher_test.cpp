#include "calibration/profile_launcher.hpp"

#include <gtest/gtest.h>

#include "sim/engine/simulator.hpp"
#include "sim/network/flow_network.hpp"
#include "sim/topology/builders.hpp"

namespace overlapsim::calibration {
namespace {

constexpr double kLinkBps = 400e9;
constexpr std::uint64_t kMiB = 1ull << 20;

// allreduce measured on 2 GPUs: 10 us + busbw 200 GB/s below 16 MiB, 30 us + 300 GB/s above.
sim::CollectiveProfile two_gpu_profile() {
  sim::CollectiveCurve c;
  c.op = sim::CollectiveOp::AllReduce;
  c.ranks = 2;
  c.segments = {{0, 10e-6, 200e9}, {16 * kMiB, 30e-6, 300e9}};
  c.source = {sim::SourceKind::Measured, "test rows", 0.01};
  sim::CollectiveProfile p;
  p.curves.push_back(c);
  return p;
}

sim::Topology nvswitch(int gpus) { return sim::build_nvswitch_node({gpus, kLinkBps, 0.0}); }

sim::CollectiveRequest allreduce(int ranks, std::uint64_t bytes) {
  sim::CollectiveRequest r;
  r.op = sim::CollectiveOp::AllReduce;
  r.bytes = bytes;
  for (int i = 0; i < ranks; ++i) r.ranks.push_back(i);
  return r;
}

struct Timed {
  double time_s = -1;
  CollectivePath path = CollectivePath::Cluster;
  std::vector<CollectiveClassUse> uses;
};

Timed time_one(const sim::Topology& topo, const sim::CollectiveProfile& profile,
               const sim::CollectiveRequest& req, CollectiveTimingOptions options) {
  sim::Simulator clock;
  sim::FlowNetwork net(clock, topo);
  ProfileCollectiveTimer timer(profile, net, options);
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

TEST(ProfileCollectiveTimer, MeasuredSizeUsesTheCurve) {
  const auto profile = two_gpu_profile();
  const Timed t = time_one(nvswitch(8), profile, allreduce(2, 64 * kMiB), nvlink());
  EXPECT_EQ(t.path, CollectivePath::Curve);
  EXPECT_DOUBLE_EQ(t.time_s, 30e-6 + 64.0 * kMiB / 300e9);
}

// Between compute kernels (a step's collectives, the default) the curve's
// in_compute_loop_factor stretches the measured paths; timed alone it does not.
TEST(ProfileCollectiveTimer, InComputeLoopFactorStretchesTheMeasuredPaths) {
  auto profile = two_gpu_profile();
  profile.curves[0].in_compute_loop_factor =
      sim::Sourced{1.05, {sim::SourceKind::Measured, "loop rows", 0.01}};
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
  // The validator's launcher: between compute kernels unless told the collective is alone.
  const sim::Topology two = nvswitch(2);
  for (bool alone_flag : {false, true}) {
    sim::Simulator clock;
    sim::FlowNetwork net(clock, two);
    double done_s = -1;
    profile_collective_launcher(profile, net, 0, {}, nullptr, alone_flag)(
        allreduce(2, 64 * kMiB), [&] { done_s = clock.now(); });
    clock.run();
    EXPECT_DOUBLE_EQ(done_s, alone_flag ? curve_s : 1.05 * curve_s);
  }
}

// On 8 GPUs the flow network's ring all-reduce takes 2(n-1)/n S / B; stretched by B / busbw
// and after the segment's latency that is latency + 2(n-1)/n S / busbw: the curve's bus
// bandwidth carried to the other size, as nccl-tests' busbw convention assumes.
TEST(ProfileCollectiveTimer, OtherSizeRunsTheFlowNetworkAtTheMeasuredEfficiency) {
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

TEST(ProfileCollectiveTimer, WithoutNvlinkRateOtherSizesStayOnTheClusterLinks) {
  const auto profile = two_gpu_profile();
  const Timed t = time_one(nvswitch(8), profile, allreduce(8, 64 * kMiB), {});
  EXPECT_EQ(t.path, CollectivePath::Cluster);
  EXPECT_NEAR(t.time_s, 1.75 * 64.0 * kMiB / kLinkBps, 1e-3 * t.time_s);
}

TEST(ProfileCollectiveTimer, AcrossHostsAndUnmeasuredOpsUseTheClusterLinks) {
  const auto profile = two_gpu_profile();
  // Two hosts of one GPU each on a switch: the curve for 2 ranks must not apply.
  const sim::Topology two_hosts = sim::build_flat_switch({2, kLinkBps, 0.0, 1});
  const Timed across = time_one(two_hosts, profile, allreduce(2, 64 * kMiB), nvlink());
  EXPECT_EQ(across.path, CollectivePath::Cluster);
  EXPECT_NEAR(across.time_s, 64.0 * kMiB / kLinkBps, 1e-3 * across.time_s);
  EXPECT_EQ(across.uses[0].label, "allreduce n=2 inter-host");
  sim::CollectiveRequest gather = allreduce(8, 64 * kMiB);
  gather.op = sim::CollectiveOp::AllGather;
  const Timed unmeasured = time_one(nvswitch(8), profile, gather, nvlink());
  EXPECT_EQ(unmeasured.path, CollectivePath::Cluster);
}

TEST(ProfileCollectiveTimer, MeasuredBusBandwidthAboveTheLinkIsNotASpeedUp) {
  auto profile = two_gpu_profile();
  profile.curves[0].segments = {{0, 0.0, 2 * kLinkBps}};
  const Timed t = time_one(nvswitch(8), profile, allreduce(8, 64 * kMiB), nvlink());
  EXPECT_EQ(t.path, CollectivePath::Efficiency);
  EXPECT_NEAR(t.time_s, 1.75 * 64.0 * kMiB / kLinkBps, 1e-3 * t.time_s);
}

TEST(ProfileCollectiveTimer, MeasuredPathsChargeTheCallLatency) {
  const auto profile = two_gpu_profile();
  sim::Simulator clock;
  const sim::Topology topo = nvswitch(8);
  sim::FlowNetwork net(clock, topo);
  const ProfileCollectiveTimer timer(profile, net, nvlink());
  EXPECT_TRUE(timer.charges_call_latency(sim::CollectiveOp::AllReduce, 2, true));
  EXPECT_TRUE(timer.charges_call_latency(sim::CollectiveOp::AllReduce, 8, true));
  EXPECT_FALSE(timer.charges_call_latency(sim::CollectiveOp::AllReduce, 8, false));
  EXPECT_FALSE(timer.charges_call_latency(sim::CollectiveOp::AllGather, 8, true));
  EXPECT_TRUE(timer.intra_host({0, 3, 7}));
}

}  // namespace
}  // namespace overlapsim::calibration
