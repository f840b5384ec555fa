// The tile-wise planner's copy-engine timeline (sim/tilewise_plan/copy_engine.hpp) against
// closed forms, under both callers' options, and against the outputs of the kernel
// predictor's former Python replica (predict_owner_replica.csv).
#include "sim/tilewise_plan/copy_engine.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>
#include <string>

namespace overlapsim::tilewise_plan {
namespace {

TimeOfBytes constant(double s) {
  return [s](double) { return s; };
}

// 2 x 2 tiles on one CTA: 4 waves of 1 s; 2 ranks, parts of 2 tiles, `groups` a part.
CopyEngineProblem small(Collective op, int groups, double copy_s) {
  CopyEngineProblem p;
  p.op = op;
  p.world = 2;
  p.groups_per_part = groups;
  p.tiles = 4;
  p.ctas = 1;
  p.gemm_s = 4;
  p.bytes = 4000;
  p.groups = uniform_groups(2, groups, 4, 4000);
  p.copy_s = constant(copy_s);
  return p;
}

TEST(TilewisePlanCopyEngine, UniformGroups) {
  const auto g = uniform_groups(2, 2, 8, 800);
  ASSERT_EQ(g.size(), 4u);
  EXPECT_FALSE(g[1].own);
  EXPECT_TRUE(g[2].own);
  EXPECT_EQ(g[3].index, 1);
  EXPECT_DOUBLE_EQ(g[2].end_tile, 6);
  EXPECT_DOUBLE_EQ(g[3].own_tiles, 4);
  EXPECT_DOUBLE_EQ(g[0].bytes, 200);
}

TEST(TilewisePlanCopyEngine, ClosedForms) {
  // Fast copies hide: the peer part done at 2 s, copied by 2.5 s; the own part ends at 4 s.
  EXPECT_DOUBLE_EQ(plan_copy_engine(small(Collective::ReduceScatter, 1, 0.5)).end_s, 4.0);
  EXPECT_DOUBLE_EQ(plan_copy_engine(small(Collective::AllReduce, 1, 0.5)).end_s, 4.5);
  EXPECT_DOUBLE_EQ(plan_copy_engine(small(Collective::AllToAll, 1, 0.5)).end_s, 4.0);
  // Slow copies: the own part waits for the peer's (2 + 3 s).
  EXPECT_DOUBLE_EQ(plan_copy_engine(small(Collective::ReduceScatter, 1, 3)).end_s, 5.0);
  EXPECT_DOUBLE_EQ(plan_copy_engine(small(Collective::AllReduce, 1, 3)).end_s, 8.0);
  EXPECT_DOUBLE_EQ(plan_copy_engine(small(Collective::AllToAll, 1, 3)).end_s, 5.0);
  // Two groups a part: copies end at 1 + 3 = 4 and max(2, 4) + 3 = 7; own groups wait.
  CopyEngineProblem rs2 = small(Collective::ReduceScatter, 2, 3);
  EXPECT_DOUBLE_EQ(plan_copy_engine(rs2).end_s, 7.0);
  // Stream operations per copy (0.25 s): 1 + 3.25, then 4.25 + 3.25.
  rs2.copy_ops_s = 0.25;
  EXPECT_DOUBLE_EQ(plan_copy_engine(rs2).end_s, 7.5);
  // The schedule: the GEMM to each group, each copy, the peer groups' shares.
  const CopyEnginePlan plan = plan_copy_engine(small(Collective::AllReduce, 1, 0.5));
  EXPECT_EQ(plan.compute_s, (std::vector<double>{2, 2}));
  EXPECT_EQ(plan.part_s, (std::vector<double>{0.5, 0.5}));
  EXPECT_EQ(plan.comm_share, (std::vector<double>{1, 0}));
}

// The simulator queues phase 2 behind the peer copies on one stream; the tuner's predictor
// times it from 0. Two groups a part, slow copies (3 s + 0.25 s of stream operations): peer
// groups sent by 4.25 and 7.5; own group 0 reduced at 4.25, own group 1 at 7.5.
TEST(TilewisePlanCopyEngine, PhaseTwoBehindThePeerCopiesOrNot) {
  CopyEngineProblem ar2 = small(Collective::AllReduce, 2, 3);
  ar2.copy_ops_s = 0.25;
  ar2.phase2_after_peer_copies = false;
  EXPECT_DOUBLE_EQ(plan_copy_engine(ar2).end_s, 7.5 + 3.25);
  ar2.phase2_after_peer_copies = true;
  EXPECT_DOUBLE_EQ(plan_copy_engine(ar2).end_s, 7.5 + 2 * 3.25);
  // The tail kernel carries own group 1 (0.1 s) after group 0's copy.
  ar2.phase2 = Phase2::TailKernel;
  ar2.tail_s = constant(0.1);
  EXPECT_DOUBLE_EQ(plan_copy_engine(ar2).end_s, 7.5 + 3.25 + 0.1);
  ar2.phase2_after_peer_copies = false;
  EXPECT_DOUBLE_EQ(plan_copy_engine(ar2).end_s, 7.6);
}

TEST(TilewisePlanCopyEngine, EpilogueAndTailKernelPhaseTwo) {
  CopyEngineProblem ar = small(Collective::AllReduce, 1, 0.5);
  ar.copy_ops_s = 0.25;
  ar.phase2 = Phase2::Epilogue;  // only the flag (the curve's fixed cost) follows the GEMM
  EXPECT_DOUBLE_EQ(plan_copy_engine(ar).end_s, 4.0 + 0.5 + 0.25);
  ar.phase2 = Phase2::TailKernel;  // without a tail curve: the copy's, without stream ops
  EXPECT_DOUBLE_EQ(plan_copy_engine(ar).end_s, 4.5);
  ar.tail_s = constant(0.1);
  EXPECT_DOUBLE_EQ(plan_copy_engine(ar).end_s, 4.1);
}

// 4 ranks, one tile a part: the simulator's wait once per group, the kernel's stream
// operations once per copy. Peer groups done at 1, 2, 3 s, each sent 0.02 + 0.1 + 0.05
// later; the own part (4 s) goes to 3 peers: 4 + 0.02 + 3 (0.1 + 0.05).
TEST(TilewisePlanCopyEngine, WaitPerGroupAndStreamOperationsPerCopy) {
  CopyEngineProblem p;
  p.op = Collective::AllReduce;
  p.world = 4;
  p.tiles = 4;
  p.ctas = 1;
  p.gemm_s = 4;
  p.bytes = 4;
  p.groups = uniform_groups(4, 1, 4, 4);
  p.copy_s = constant(0.1);
  p.wait_s = 0.02;
  p.copy_ops_s = 0.05;
  EXPECT_NEAR(plan_copy_engine(p).end_s, 4 + 0.02 + 3 * 0.15, 1e-12);
  p.phase2_contention = 0.5;  // each copy back: 0.1 (1 + 0.5 x 2), its operations not
  EXPECT_NEAR(plan_copy_engine(p).end_s, 4 + 0.02 + 3 * (0.2 + 0.05), 1e-12);
}

// Every case the Python replica of the tuner's predictor computed, reproduced with the
// tuner's options (no epilogue cost, phase 2 from 0, stream operations per copy).
TEST(TilewisePlanCopyEngine, ReproducesTheFormerPythonReplica) {
  std::ifstream in(std::string(OVERLAPSIM_SOURCE_DIR) +
                   "/tests/sim/tilewise_plan/predict_owner_replica.csv");
  ASSERT_TRUE(in) << "predict_owner_replica.csv";
  CommCurve curve;
  int cases = 0;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#' || line.rfind("kind,", 0) == 0) continue;
    std::vector<std::string> f;
    std::stringstream ss(line);
    for (std::string cell; std::getline(ss, cell, ',');) f.push_back(cell);
    if (f[0] == "curve") {
      curve.add_point(std::stod(f[1]), std::stod(f[2]) * 1e-6);
      continue;
    }
    ASSERT_EQ(f.size(), 9u) << line;
    const std::string op = f[1];
    const int m = std::stoi(f[2]), n = std::stoi(f[3]);
    std::vector<int> bounds;
    std::stringstream bs(f[5]);
    for (std::string b; std::getline(bs, b, ';');) bounds.push_back(std::stoi(b));
    const double tiles = (m / 128) * std::ceil(n / 256.0);
    const int part = static_cast<int>(tiles) / 2;
    const double tile_bytes = 128 * 256 * 2;
    CopyEngineProblem p;
    p.op = op == "allreduce"       ? Collective::AllReduce
           : op == "reducescatter" ? Collective::ReduceScatter
                                   : Collective::AllToAll;
    p.world = 2;
    p.groups_per_part = static_cast<int>(bounds.size()) - 1;
    p.tiles = tiles;
    p.ctas = 132;
    p.gemm_s = std::stod(f[4]);
    for (int position = 0; position < 2; ++position)
      for (int j = 0; j + 1 < static_cast<int>(bounds.size()); ++j) {
        CopyEngineGroup g;
        g.own = position == 1;
        g.index = j;
        g.end_tile = position * part + bounds[static_cast<std::size_t>(j) + 1];
        g.bytes = (bounds[static_cast<std::size_t>(j) + 1] - bounds[static_cast<std::size_t>(j)]) *
                  tile_bytes;
        p.groups.push_back(g);
      }
    p.copy_s = curve.as_function();
    p.copy_ops_s = std::stod(f[6]);
    p.phase2 = f[7] == "1" ? Phase2::Epilogue : Phase2::CopyEngine;
    p.phase2_after_peer_copies = false;
    const double expected = std::stod(f[8]);
    EXPECT_NEAR(plan_copy_engine(p).end_s, expected, 1e-12 * expected) << line;
    ++cases;
  }
  EXPECT_EQ(cases, 720);
}

}  // namespace
}  // namespace overlapsim::tilewise_plan
