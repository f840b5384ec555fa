// Direct schedules on the contention-free oracle: one group of n(n-1) transfers of
// S/n for all-to-all; allreduce is two such groups; sendrecv is alpha + S/B.
#include <gtest/gtest.h>

#include "sim/collectives/collective.hpp"
#include "tests/sim/collectives/analytic_network.hpp"

namespace overlapsim::sim {
namespace {

using testing::AnalyticNetwork;
using testing::iota_ranks;
using testing::run_collective;

constexpr double kDirectAlpha_s = 1.5e-6;
constexpr double kDirectB_Bps = 50e9;

CollectiveRequest direct(CollectiveOp op, std::vector<int> ranks, std::uint64_t bytes) {
  CollectiveRequest req;
  req.op = op;
  req.algo = Algorithm::Direct;
  req.ranks = std::move(ranks);
  req.bytes = bytes;
  return req;
}

TEST(Direct, AllToAllIsOneGroupOfAllPairs) {
  const int n = 16;
  const std::uint64_t bytes = 16 << 20;
  Simulator sim;
  AnalyticNetwork net(sim, n, kDirectAlpha_s, kDirectB_Bps);
  const double t = run_collective(net, direct(CollectiveOp::AllToAll, iota_ranks(n), bytes));
  EXPECT_NEAR(t, kDirectAlpha_s + (bytes / n) / kDirectB_Bps, 1e-15);
  ASSERT_EQ(net.groups().size(), 1u);
  EXPECT_EQ(net.groups()[0].size(), static_cast<std::size_t>(n * (n - 1)));
}

TEST(Direct, AllReduceIsReduceScatterThenAllGather) {
  const int n = 4;
  Simulator sim;
  AnalyticNetwork net(sim, n, kDirectAlpha_s, kDirectB_Bps);
  const double t = run_collective(net, direct(CollectiveOp::AllReduce, iota_ranks(n), 4000));
  EXPECT_NEAR(t, 2 * (kDirectAlpha_s + 1000 / kDirectB_Bps), 1e-15);
  EXPECT_EQ(net.groups().size(), 2u);
}

TEST(Direct, SendRecvIsAlphaPlusSOverB) {
  Simulator sim;
  AnalyticNetwork net(sim, 8, kDirectAlpha_s, kDirectB_Bps);
  CollectiveRequest req = direct(CollectiveOp::SendRecv, {5, 2}, 1 << 30);
  const double t = run_collective(net, req);
  EXPECT_NEAR(t, kDirectAlpha_s + (1 << 30) / kDirectB_Bps, 1e-12);
  ASSERT_EQ(net.groups().size(), 1u);
  ASSERT_EQ(net.groups()[0].size(), 1u);
  EXPECT_EQ(net.groups()[0][0].src_rank, 5);
  EXPECT_EQ(net.groups()[0][0].dst_rank, 2);
}

TEST(Direct, BroadcastFromRootToEveryone) {
  Simulator sim;
  AnalyticNetwork net(sim, 6, kDirectAlpha_s, kDirectB_Bps);
  CollectiveRequest req = direct(CollectiveOp::Broadcast, iota_ranks(6), 1 << 20);
  req.root = 2;
  const double t = run_collective(net, req);
  EXPECT_NEAR(t, kDirectAlpha_s + (1 << 20) / kDirectB_Bps, 1e-15);
  for (const Transfer& tr : net.groups()[0]) EXPECT_EQ(tr.src_rank, 2);
  EXPECT_EQ(net.groups()[0].size(), 5u);
}

}  // namespace
}  // namespace overlapsim::sim
