// Ring closed forms against the contention-free oracle: the streamed ring (backend with
// path estimates) and the step-by-step ring (backend without) must both give
// 2(n-1)*alpha + 2(n-1)/n*S/B for allreduce and (n-1)*alpha + (n-1)/n*S/B for
// allgather/reducescatter.
#include <gtest/gtest.h>

#include "sim/collectives/algorithms.hpp"
#include "sim/collectives/collective.hpp"
#include "tests/sim/collectives/analytic_network.hpp"

namespace overlapsim::sim {
namespace {

using testing::AnalyticNetwork;
using testing::iota_ranks;
using testing::run_collective;

constexpr double kAlpha_s = 2e-6;
constexpr double kB_Bps = 50e9;

CollectiveRequest request(CollectiveOp op, int n, std::uint64_t bytes) {
  CollectiveRequest req;
  req.op = op;
  req.algo = Algorithm::Ring;
  req.ranks = iota_ranks(n);
  req.bytes = bytes;
  return req;
}

class RingClosedForm : public ::testing::TestWithParam<bool> {};

TEST_P(RingClosedForm, AllReduce) {
  for (int n : {2, 3, 8, 64}) {
    for (std::uint64_t bytes : {std::uint64_t{4096} * 3 * 64, std::uint64_t{1} << 30}) {
      Simulator sim;
      AnalyticNetwork net(sim, n, kAlpha_s, kB_Bps, 1, GetParam());
      const double t = run_collective(net, request(CollectiveOp::AllReduce, n, bytes));
      const double per_rank = static_cast<double>((bytes + n - 1) / n);
      const double expected = 2 * (n - 1) * kAlpha_s + 2 * (n - 1) * per_rank / kB_Bps;
      EXPECT_NEAR(t, expected, 1e-9 * expected) << "n=" << n << " bytes=" << bytes;
    }
  }
}

TEST_P(RingClosedForm, AllGatherAndReduceScatter) {
  for (CollectiveOp op : {CollectiveOp::AllGather, CollectiveOp::ReduceScatter}) {
    const int n = 16;
    const std::uint64_t bytes = 256ull << 20;
    Simulator sim;
    AnalyticNetwork net(sim, n, kAlpha_s, kB_Bps, 1, GetParam());
    const double t = run_collective(net, request(op, n, bytes));
    const double expected = (n - 1) * kAlpha_s + (n - 1.0) / n * bytes / kB_Bps;
    EXPECT_NEAR(t, expected, 1e-9 * expected) << to_string(op);
  }
}

INSTANTIATE_TEST_SUITE_P(StreamedAndStepwise, RingClosedForm, ::testing::Bool());

TEST(Ring, StreamedIsOneGroupOfNFlowsStepwiseIsOneGroupPerStep) {
  const int n = 8;
  Simulator sim_a, sim_b;
  AnalyticNetwork streamed(sim_a, n, kAlpha_s, kB_Bps, 1, true);
  AnalyticNetwork stepwise(sim_b, n, kAlpha_s, kB_Bps, 1, false);
  run_collective(streamed, request(CollectiveOp::AllReduce, n, 8 << 20));
  run_collective(stepwise, request(CollectiveOp::AllReduce, n, 8 << 20));
  ASSERT_EQ(streamed.groups().size(), 1u);
  ASSERT_EQ(streamed.groups()[0].size(), static_cast<std::size_t>(n));
  for (const Transfer& t : streamed.groups()[0]) {
    EXPECT_EQ(t.dst_rank, (t.src_rank + 1) % n);
    EXPECT_EQ(t.bytes, 2u * (n - 1) * (8u << 20) / n);
  }
  EXPECT_EQ(stepwise.groups().size(), 2u * (n - 1));
}

TEST(Ring, UnevenBytesRoundPerRankSharesUp) {
  const int n = 3;
  Simulator sim;
  AnalyticNetwork net(sim, n, 0.0, 1.0);
  const double t = run_collective(net, request(CollectiveOp::AllReduce, n, 10));
  EXPECT_DOUBLE_EQ(t, 2 * (n - 1) * 4.0);  // ceil(10 / 3) = 4 bytes per step
}

TEST(Ring, BroadcastIsAPipelinedChain) {
  // (n-1) hop latencies + S/B; with chunking the fill adds (n-2) chunk times.
  const int n = 8;
  const std::uint64_t bytes = 64ull << 20;
  Simulator sim;
  AnalyticNetwork net(sim, n, kAlpha_s, kB_Bps);
  CollectiveRequest req = request(CollectiveOp::Broadcast, n, bytes);
  req.root = 3;
  const double t = run_collective(net, req);
  const double expected = (n - 1) * kAlpha_s + bytes / kB_Bps;
  EXPECT_NEAR(t, expected, 1e-9 * expected);
  ASSERT_EQ(net.groups().size(), 1u);
  EXPECT_EQ(net.groups()[0].size(), static_cast<std::size_t>(n - 1));
  for (const Transfer& tr : net.groups()[0]) EXPECT_NE(tr.dst_rank, 3);  // nobody sends to root

  Simulator sim2;
  AnalyticNetwork net2(sim2, n, kAlpha_s, kB_Bps);
  CollectiveTuning chunked;
  chunked.chunk_bytes = 512 << 10;
  const double t2 = run_collective(net2, req, chunked);
  EXPECT_NEAR(t2, expected + (n - 2) * (512 << 10) / kB_Bps, 1e-9 * expected);
}

TEST(Ring, TuningAddsLaunchAndPerStepLatency) {
  const int n = 8;
  CollectiveTuning tuning;
  tuning.launch_latency_s = 8.4e-6;
  tuning.step_latency_s = 1e-6;
  for (bool estimates : {true, false}) {
    Simulator sim;
    AnalyticNetwork net(sim, n, kAlpha_s, kB_Bps, 1, estimates);
    const double t = run_collective(net, request(CollectiveOp::AllReduce, n, 1 << 20), tuning);
    const double expected =
        8.4e-6 + 2 * (n - 1) * (kAlpha_s + 1e-6) + 2 * (n - 1) * (1 << 20) / n / kB_Bps;
    EXPECT_NEAR(t, expected, 1e-9 * expected) << estimates;
  }
}

TEST(Ring, MultiHostCommunicatorUsesOneChannelPerLocalRank) {
  // 2 hosts x 4 ranks: 4 channels, each entering a host at a different local rank, so
  // every rank sends inter-host traffic in exactly one channel, 1/4 of the volume.
  Simulator sim;
  AnalyticNetwork net(sim, 8, kAlpha_s, kB_Bps, 4);
  const std::uint64_t bytes = 8 << 20;
  run_collective(net, request(CollectiveOp::AllReduce, 8, bytes));
  ASSERT_EQ(net.groups().size(), 1u);
  const std::uint64_t volume = 2u * 7 * bytes / 8;
  std::vector<std::uint64_t> sent_inter(8, 0), sent_total(8, 0);
  for (const Transfer& t : net.groups()[0]) {
    sent_total[static_cast<std::size_t>(t.src_rank)] += t.bytes;
    if (t.src_rank / 4 != t.dst_rank / 4)
      sent_inter[static_cast<std::size_t>(t.src_rank)] += t.bytes;
  }
  for (int r = 0; r < 8; ++r) {
    EXPECT_EQ(sent_total[static_cast<std::size_t>(r)], volume) << r;
    EXPECT_EQ(sent_inter[static_cast<std::size_t>(r)], volume / 4) << r;
  }
}

TEST(Ring, SingleRankAndZeroBytesFinishAtLaunch) {
  Simulator sim;
  AnalyticNetwork net(sim, 4, kAlpha_s, kB_Bps);
  CollectiveTuning tuning;
  tuning.launch_latency_s = 5e-6;
  EXPECT_DOUBLE_EQ(run_collective(net, request(CollectiveOp::AllReduce, 1, 1 << 20), tuning), 5e-6);
  EXPECT_DOUBLE_EQ(run_collective(net, request(CollectiveOp::AllReduce, 4, 0), tuning), 10e-6);
}

}  // namespace
}  // namespace overlapsim::sim
