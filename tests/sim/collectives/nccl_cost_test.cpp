// NCCL's selection model: hand-computed entries from the cited tables, and the choices
// it implies (tree for tiny messages at large n, ring for large messages).
#include "sim/collectives/nccl_cost.hpp"

#include <gtest/gtest.h>

#include "sim/collectives/collective.hpp"
#include "tests/sim/collectives/analytic_network.hpp"

namespace overlapsim::sim {
namespace {

using detail::CommShape;
using detail::nccl_costs;
using detail::Protocol;
using testing::AnalyticNetwork;
using testing::iota_ranks;

const detail::CostEstimate& find(const std::vector<detail::CostEstimate>& costs, Algorithm a,
                                 Protocol p) {
  for (const auto& c : costs)
    if (c.algo == a && c.protocol == p) return c;
  throw std::runtime_error("missing entry");
}

TEST(NcclCost, RingSimpleOnOneNvlinkNode) {
  // 8 GPUs, one node, NVLink: latency = base 8.4 + 14 steps x 3.4 us; algbw = bus x 8/14.
  const CommShape shape{8, 1, true, 450e9};
  const auto costs = nccl_costs(CollectiveOp::AllReduce, 1 << 30, shape);
  const auto& ring = find(costs, Algorithm::Ring, Protocol::Simple);
  EXPECT_NEAR(ring.latency_s, (8.4 + 14 * 3.4) * 1e-6, 1e-12);
  EXPECT_NEAR(ring.algbw_Bps, 450e9 * 8 / 14, 1);
  // Tree Simple: base 8.4 + 2 x (7 x 4.0) us; algbw = 0.92 x bus / 2 (no size correction
  // at 1 GiB, beyond the table).
  const auto& tree = find(costs, Algorithm::Tree, Protocol::Simple);
  EXPECT_NEAR(tree.latency_s, (8.4 + 2 * 7 * 4.0) * 1e-6, 1e-12);
  EXPECT_NEAR(tree.algbw_Bps, 450e9 * 0.92 * 0.5, 1);
  EXPECT_EQ(costs.front().algo, Algorithm::Ring);
}

TEST(NcclCost, MultiNodeRingLatencySplitsIntraAndInterSteps) {
  // 4 nodes x 8: 62 steps, 6 of them inter-node (14 us, ring NET Simple), the other 56
  // intra (max(3.4, 3 x 1 us net overhead)); x1.4 plateau for allreduce.
  const CommShape shape{32, 4, true, 400e9};
  const auto costs = nccl_costs(CollectiveOp::AllReduce, 1 << 30, shape);
  const auto& ring = find(costs, Algorithm::Ring, Protocol::Simple);
  EXPECT_NEAR(ring.latency_s, (8.4 + 56 * 3.4 + 6 * 14.0) * 1.4 * 1e-6, 1e-12);
  const auto& tree = find(costs, Algorithm::Tree, Protocol::Simple);
  EXPECT_NEAR(tree.latency_s, (8.4 + 2 * (7 * 4.0 + 2 * 14.0)) * 1e-6, 1e-12);
}

Algorithm auto_choice(int n, std::uint64_t bytes) {
  Simulator sim;
  AnalyticNetwork net(sim, n, 1e-6, 50e9);  // one rank per host: a flat switch
  CollectiveRequest req;
  req.op = CollectiveOp::AllReduce;
  req.ranks = iota_ranks(n);
  req.bytes = bytes;
  return resolve_algorithm(req, net, {});
}

TEST(NcclCost, AutoPicksTreeForTinyMessagesAtLargeScale) {
  EXPECT_EQ(auto_choice(64, 1024), Algorithm::Tree);
  EXPECT_EQ(auto_choice(1024, 8), Algorithm::Tree);
  EXPECT_EQ(auto_choice(1024, 64 << 10), Algorithm::Tree);
}

TEST(NcclCost, AutoPicksRingForLargeMessages) {
  EXPECT_EQ(auto_choice(64, 1ull << 30), Algorithm::Ring);
  EXPECT_EQ(auto_choice(8, 256 << 20), Algorithm::Ring);
}

TEST(NcclCost, AutoResolvesPointToPointOpsToDirect) {
  Simulator sim;
  AnalyticNetwork net(sim, 8, 1e-6, 50e9);
  CollectiveRequest req;
  req.ranks = iota_ranks(8);
  req.bytes = 1 << 20;
  req.op = CollectiveOp::AllToAll;
  EXPECT_EQ(resolve_algorithm(req, net, {}), Algorithm::Direct);
  req.op = CollectiveOp::SendRecv;
  EXPECT_EQ(resolve_algorithm(req, net, {}), Algorithm::Direct);
  req.op = CollectiveOp::AllGather;
  EXPECT_EQ(resolve_algorithm(req, net, {}), Algorithm::Ring);
}

// NVLSTree's chunked pipeline (src/enqueue.cc, NCCL 2.26.2): rounds of 16 NVLS channels x
// heads chunks, a chunk through 2 + log2(nodes) stages; (rounds + stages - 1) / rounds.
TEST(NcclCost, NvlsTreePipelineFillFollowsNcclsChunking) {
  using detail::nvls_tree_pipeline_stretch;
  constexpr std::uint64_t kMiB = 1 << 20;
  // 2 nodes x 8 heads, 1 GiB: 128 KiB chunks, 16 MiB rounds, 64 of them, 3 stages.
  EXPECT_DOUBLE_EQ(nvls_tree_pipeline_stretch(1024 * kMiB, 2, 8), 66.0 / 64.0);
  // 32 MiB < 4 rounds of 128 KiB chunks: 64 KiB chunks, 8 MiB rounds, 4 of them.
  EXPECT_DOUBLE_EQ(nvls_tree_pipeline_stretch(32 * kMiB, 2, 8), 6.0 / 4.0);
  // 4 MiB: 64 KiB, then below one round: 32 KiB, one round of 4 MiB: all 3 stages in turn.
  EXPECT_DOUBLE_EQ(nvls_tree_pipeline_stretch(4 * kMiB, 2, 8), 3.0);
  // From 4 nodes on the chunk is at most 64 KiB: 64 MiB in 8 rounds of 8 MiB, 4 stages.
  EXPECT_DOUBLE_EQ(nvls_tree_pipeline_stretch(64 * kMiB, 4, 8), 11.0 / 8.0);
  // 8 nodes, 1 GiB: 128 rounds, 5 stages.
  EXPECT_DOUBLE_EQ(nvls_tree_pipeline_stretch(1024 * kMiB, 8, 8), 132.0 / 128.0);
  // Fewer heads, smaller rounds: 4 heads x 16 x 128 KiB = 8 MiB, 1 GiB in 128 of them.
  EXPECT_DOUBLE_EQ(nvls_tree_pipeline_stretch(1024 * kMiB, 2, 4), 130.0 / 128.0);
  EXPECT_DOUBLE_EQ(nvls_tree_pipeline_stretch(1024 * kMiB, 1, 8), 1.0);
}

}  // namespace
}  // namespace overlapsim::sim
