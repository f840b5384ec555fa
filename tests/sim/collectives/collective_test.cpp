// Names, bus-bandwidth factors, and request validation messages.
#include "sim/collectives/collective.hpp"

#include <gtest/gtest.h>

#include "tests/sim/collectives/analytic_network.hpp"

namespace overlapsim::sim {
namespace {

using testing::AnalyticNetwork;

TEST(CollectiveNames, RoundTrip) {
  for (auto op : {CollectiveOp::AllReduce, CollectiveOp::AllGather, CollectiveOp::ReduceScatter,
                  CollectiveOp::AllToAll, CollectiveOp::Broadcast, CollectiveOp::SendRecv})
    EXPECT_EQ(parse_collective_op(to_string(op)), op);
  for (auto a : {Algorithm::Ring, Algorithm::Tree, Algorithm::Hierarchical, Algorithm::Direct,
                 Algorithm::Auto})
    EXPECT_EQ(parse_algorithm(to_string(a)), a);
  EXPECT_FALSE(parse_collective_op("all_reduce"));
  EXPECT_FALSE(parse_algorithm("Ring"));
}

TEST(CollectiveNames, NcclTestsBusBandwidthFactors) {
  EXPECT_DOUBLE_EQ(busbw_factor(CollectiveOp::AllReduce, 8), 2.0 * 7 / 8);
  EXPECT_DOUBLE_EQ(busbw_factor(CollectiveOp::AllGather, 8), 7.0 / 8);
  EXPECT_DOUBLE_EQ(busbw_factor(CollectiveOp::ReduceScatter, 4), 3.0 / 4);
  EXPECT_DOUBLE_EQ(busbw_factor(CollectiveOp::AllToAll, 4), 3.0 / 4);
  EXPECT_DOUBLE_EQ(busbw_factor(CollectiveOp::Broadcast, 16), 1.0);
  EXPECT_DOUBLE_EQ(busbw_factor(CollectiveOp::SendRecv, 2), 1.0);
}

std::string error_of(const CollectiveRequest& req) {
  Simulator sim;
  AnalyticNetwork net(sim, 8, 1e-6, 1e9);
  try {
    start_collective(net, req, [] {});
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

CollectiveRequest good() {
  CollectiveRequest req;
  req.op = CollectiveOp::AllReduce;
  req.algo = Algorithm::Ring;
  req.ranks = {0, 1, 2, 3};
  req.bytes = 1 << 20;
  return req;
}

TEST(CollectiveValidate, EachProblemNamed) {
  EXPECT_EQ(error_of(good()), "");
  auto req = good();
  req.ranks.clear();
  EXPECT_NE(error_of(req).find("communicator (ranks) is empty"), std::string::npos);
  req = good();
  req.ranks = {0, 3, 1, 3};
  EXPECT_NE(error_of(req).find("rank 3 appears twice"), std::string::npos) << error_of(req);
  req = good();
  req.ranks = {0, 8};
  EXPECT_NE(error_of(req).find("ranks[1] = 8 is outside the network (ranks 0..7)"),
            std::string::npos)
      << error_of(req);
  req = good();
  req.ranks = {-1, 2};
  EXPECT_NE(error_of(req).find("outside the network"), std::string::npos);
  req = good();
  req.op = CollectiveOp::Broadcast;
  req.root = 4;
  EXPECT_NE(error_of(req).find("root = 4"), std::string::npos) << error_of(req);
  req = good();
  req.op = CollectiveOp::SendRecv;
  req.algo = Algorithm::Direct;
  req.peer = 0;
  EXPECT_NE(error_of(req).find("peer = 0"), std::string::npos) << error_of(req);
  req.peer = 1;
  req.ranks = {3};
  EXPECT_NE(error_of(req).find("needs two ranks"), std::string::npos) << error_of(req);
  req = good();
  req.op = CollectiveOp::AllToAll;
  EXPECT_NE(error_of(req).find("alltoall: algorithm 'ring' does not implement it"),
            std::string::npos)
      << error_of(req);
  req.op = CollectiveOp::SendRecv;
  req.algo = Algorithm::Hierarchical;
  EXPECT_NE(error_of(req).find("use one of: direct, auto"), std::string::npos) << error_of(req);
}

TEST(CollectiveRun, OnDoneRunsOnceAndNotInsideStart) {
  Simulator sim;
  AnalyticNetwork net(sim, 8, 1e-6, 1e9);
  int calls = 0;
  start_collective(net, good(), [&] { ++calls; });
  EXPECT_EQ(calls, 0);
  sim.run();
  EXPECT_EQ(calls, 1);
}

TEST(CollectiveRun, ConcurrentCollectivesAreIndependent) {
  Simulator sim;
  AnalyticNetwork net(sim, 8, 1e-6, 1e9);
  double a = -1, b = -1;
  auto req_b = good();
  req_b.ranks = {4, 5, 6, 7};
  req_b.bytes = 2 << 20;
  start_collective(net, good(), [&] { a = sim.now(); });
  start_collective(net, req_b, [&] { b = sim.now(); });
  sim.run();
  EXPECT_NEAR(a, 6e-6 + 6.0 / 4 * (1 << 20) / 1e9, 1e-12);
  EXPECT_NEAR(b, 6e-6 + 6.0 / 4 * (2 << 20) / 1e9, 1e-12);
}

}  // namespace
}  // namespace overlapsim::sim
