// Double binary tree: shape properties (each tree a binary tree of logarithmic depth,
// interior nodes of one tree are leaves of the other) and the latency closed form on
// the contention-free oracle: 2 * depth * alpha + (S/2) / B.
#include <gtest/gtest.h>

#include <cmath>

#include "sim/collectives/collective.hpp"
#include "sim/collectives/tree_shape.hpp"
#include "tests/sim/collectives/analytic_network.hpp"

namespace overlapsim::sim {
namespace {

using detail::in_order_tree_parents;
using detail::second_tree_parents;
using testing::AnalyticNetwork;
using testing::iota_ranks;
using testing::run_collective;

int depth(const std::vector<int>& parent) {
  int deepest = 0;
  for (std::size_t q = 0; q < parent.size(); ++q) {
    int d = 0;
    for (int p = static_cast<int>(q); parent[static_cast<std::size_t>(p)] >= 0;
         p = parent[static_cast<std::size_t>(p)])
      ++d;
    deepest = std::max(deepest, d);
  }
  return deepest;
}

std::vector<int> child_counts(const std::vector<int>& parent) {
  std::vector<int> children(parent.size(), 0);
  for (int p : parent)
    if (p >= 0) ++children[static_cast<std::size_t>(p)];
  return children;
}

TEST(TreeShape, BinaryWithOneRootAndLogDepth) {
  for (int m : {1, 2, 3, 7, 8, 13, 64, 100, 1024}) {
    for (const auto& parent :
         {in_order_tree_parents(m), second_tree_parents(in_order_tree_parents(m))}) {
      int roots = 0;
      for (int p : parent) roots += p < 0;
      EXPECT_EQ(roots, 1) << m;
      for (int c : child_counts(parent)) EXPECT_LE(c, 2) << m;
      EXPECT_LE(depth(parent), static_cast<int>(std::ceil(std::log2(m))) + 1) << m;
    }
  }
  // 8 positions: 0 -> 4 -> {2 -> {1, 3}, 6 -> {5, 7}}.
  EXPECT_EQ(in_order_tree_parents(8), (std::vector<int>{-1, 2, 4, 2, 0, 6, 4, 6}));
}

TEST(TreeShape, InteriorInOneTreeIsLeafInTheOther) {
  for (int m : {4, 8, 16, 64, 1024, 7, 13, 129}) {
    const auto a = child_counts(in_order_tree_parents(m));
    const auto b = child_counts(second_tree_parents(in_order_tree_parents(m)));
    int both = 0;
    for (int q = 0; q < m; ++q)
      both += a[static_cast<std::size_t>(q)] > 0 && b[static_cast<std::size_t>(q)] > 0;
    // Mirroring (even m) separates them fully; the shift (odd m) leaves at most one.
    EXPECT_LE(both, m % 2 == 0 ? 0 : 1) << m;
  }
}

CollectiveRequest tree_allreduce(int n, std::uint64_t bytes) {
  CollectiveRequest req;
  req.op = CollectiveOp::AllReduce;
  req.algo = Algorithm::Tree;
  req.ranks = iota_ranks(n);
  req.bytes = bytes;
  return req;
}

TEST(Tree, LatencyClosedFormOnOracle) {
  // n = 8 ranks, one per host: depth 3 in both trees; each edge carries S/2 each way.
  const double alpha_s = 3e-6, bw_Bps = 25e9;
  const std::uint64_t bytes = 4 << 20;
  Simulator sim;
  AnalyticNetwork net(sim, 8, alpha_s, bw_Bps);
  const double t = run_collective(net, tree_allreduce(8, bytes));
  // Both trees' edges, up and down: 2 trees x 7 edges x 2 directions of S/2 each.
  ASSERT_EQ(net.groups().size(), 1u);
  EXPECT_EQ(net.groups()[0].size(), 2u * 7 * 2);
  for (const Transfer& tr : net.groups()[0]) EXPECT_EQ(tr.bytes, bytes / 2);
  const double expected = 2 * 3 * alpha_s + (bytes / 2) / bw_Bps;
  EXPECT_NEAR(t, expected, 1e-9 * expected);
}

TEST(Tree, HostsWithSeveralRanksChainInsideAndSplitIntoChannels) {
  // 4 hosts x 2 ranks: chains of 2 inside each host, 2 channels per tree.
  const double alpha_s = 1e-6, bw_Bps = 1e9;
  const std::uint64_t bytes = 1 << 20;
  Simulator sim;
  AnalyticNetwork net(sim, 8, alpha_s, bw_Bps, 2);
  const double t = run_collective(net, tree_allreduce(8, bytes));
  // Deepest path: 1 chain hop + host-tree depth 2 (4 hosts: 0 -> 2 -> {1, 3}).
  const int hops = 1 + 2;
  const std::uint64_t share = bytes / 4;  // half per tree, half again per channel
  for (const Transfer& tr : net.groups()[0]) EXPECT_EQ(tr.bytes, share);
  const double expected = 2 * hops * alpha_s + share / bw_Bps;
  EXPECT_NEAR(t, expected, 1e-9 * expected);
}

TEST(Tree, OnlyAllReduce) {
  Simulator sim;
  AnalyticNetwork net(sim, 8, 1e-6, 1e9);
  CollectiveRequest req = tree_allreduce(8, 1024);
  req.op = CollectiveOp::AllGather;
  try {
    start_collective(net, req, [] {});
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'tree'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("ring"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace overlapsim::sim
