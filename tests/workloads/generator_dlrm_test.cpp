#include <gtest/gtest.h>

#include "step_graph_util.hpp"
#include "workloads/generator.hpp"

using namespace overlapsim;
using namespace overlapsim::workloads;
using namespace overlapsim::workloads::testing;
using sim::CollectiveOp;
using sim::OpKind;
using sim::Phase;

namespace {
constexpr double kBatch = 65536, kGpus = 1024, kDim = 128, kTables = 26, kHot = 214;
}

TEST(DlrmGenerator, EmbeddingBytesPerStepAreExact) {
  auto step = generate_step(shipped("dlrm-dcnv2"), 1024);
  ASSERT_EQ(step.ranks.size(), 1u);
  const auto& rank = step.ranks[0];
  EXPECT_EQ(rank.multiplicity, 1024);
  auto bytes = [&](Phase phase) {
    return rank.multiplicity *
           sum_ops(
               rank,
               [&](const sim::OpNode& op) {
                 return op.kind == OpKind::EmbeddingLookup && op.phase == phase;
               },
               [](const sim::OpNode& op) { return static_cast<double>(op.bytes); });
  };
  // fp32 rows: gather B·H rows and write B·n pooled rows; backward reads the pooled
  // gradients and read-modify-writes the B·H rows.
  EXPECT_DOUBLE_EQ(bytes(Phase::Forward), kBatch * (kHot + kTables) * kDim * 4);
  EXPECT_DOUBLE_EQ(bytes(Phase::Backward), kBatch * (kTables + 2 * kHot) * kDim * 4);
  EXPECT_DOUBLE_EQ(step.tokens_per_step, kBatch);
  EXPECT_EQ(step.throughput_unit, "samples");
}

TEST(DlrmGenerator, PooledEmbeddingsTravelByAllToAllPairedWithTheLookup) {
  auto step = generate_step(shipped("dlrm-dcnv2"), 1024);
  const auto& rank = step.ranks[0];
  int a2a = 0;
  for_each_op(rank, [&](sim::OpVertex, const sim::OpNode& op) {
    if (op.kind != OpKind::Collective || op.collective != CollectiveOp::AllToAll) return;
    ++a2a;
    EXPECT_EQ(op.comm_bytes, static_cast<std::uint64_t>(kBatch / kGpus * kTables * kDim * 4));
    EXPECT_EQ(step.groups[op.comm_group].ranks.size(), 1024u);
    ASSERT_GE(op.pair_partner, 0);
    EXPECT_EQ(rank.graph[op.pair_partner].kind, OpKind::EmbeddingLookup);
  });
  EXPECT_EQ(a2a, 2);
}

TEST(DlrmGenerator, DenseGradientsAllReduceAndFlopsFollowTheMlps) {
  auto step = generate_step(shipped("dlrm-dcnv2"), 1024);
  const double d0 = 128 + 26 * 128;  // DCN input: bottom output and 26 pooled embeddings
  const double bottom = 13 * 512 + 512 * 256 + 256 * 128.0;
  const double dcn = 3 * (d0 * 512 * 2);
  const double top = d0 * 1024 + 1024 * 1024 + 1024 * 512 + 512 * 256 + 256 * 1.0;
  const double biases = 512 + 256 + 128 + 3 * d0 + 1024 + 1024 + 512 + 256 + 1;
  double dp = sum_ops(
      step.ranks[0],
      [&](const sim::OpNode& op) {
        return op.kind == OpKind::Collective && op.collective == CollectiveOp::AllReduce;
      },
      [](const sim::OpNode& op) { return static_cast<double>(op.comm_bytes); });
  EXPECT_DOUBLE_EQ(dp, 4 * (bottom + dcn + top + biases));
  // 2 FLOPs per MAC, 3 passes; the first bottom layer has no input gradient.
  const double expected = kBatch * (6 * (bottom + dcn + top) - 2 * 13 * 512);
  EXPECT_NEAR(step.flops_per_step / expected, 1.0, 1e-12);
}
