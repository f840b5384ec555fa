#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "step_graph_util.hpp"
#include "workloads/dlrm.hpp"
#include "workloads/generator.hpp"

using namespace overlapsim;
using namespace overlapsim::workloads;
using namespace overlapsim::workloads::testing;
using sim::CollectiveOp;
using sim::OpKind;
using sim::Phase;

namespace {
constexpr double kBatch = 65536, kGpus = 1024, kDim = 128, kTables = 26, kHot = 214;

// The shipped DLRM-DCNv2 tables and MLPs with every table model parallel (balanced) at a
// global batch of 65536: the closed forms below follow from these.
ModelSpec all_model_parallel() {
  ModelSpec m = shipped("dlrm-dcnv2");
  m.dlrm.data_parallel_max_rows = 0;
  m.dlrm.sharding = TableSharding::Balanced;
  m.training.global_batch = static_cast<std::int64_t>(kBatch);
  return m;
}

double bytes_of(const sim::RankProgram& rank, CollectiveOp op) {
  return sum_ops(
      rank,
      [&](const sim::OpNode& n) { return n.kind == OpKind::Collective && n.collective == op; },
      [](const sim::OpNode& n) { return static_cast<double>(n.comm_bytes); });
}

// Five tables: rows 100, 5000, 7000, 2e6 and 3e6; hotness 1, 2, 3, 4 and 5.
ModelSpec five_tables(const std::string& extra) {
  return load_model_string(R"(name: d
kind: dlrm
dlrm:
  dense_features: 13
  embedding_dim: 16
  tables:
    - {rows: 100, hotness: 1}
    - {rows: 5000, hotness: 2}
    - {rows: 7000, hotness: 3}
    - {rows: 2000000, hotness: 4}
    - {rows: 3000000, hotness: 5}
  bottom_mlp: [32, 16]
  top_mlp: [64, 1]
  dcn_layers: 1
  dcn_rank: 8
)" + extra + R"(
training: {global_batch: 64}
parallelism: {dp: 4}
)",
                           "five.yaml");
}
}  // namespace

TEST(DlrmGenerator, EmbeddingBytesPerStepAreExact) {
  auto step = generate_step(all_model_parallel(), 1024);
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
  auto step = generate_step(all_model_parallel(), 1024);
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
  auto step = generate_step(all_model_parallel(), 1024);
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

TEST(DlrmSharding, SmallTablesAreDataParallelBelowTheRowThreshold) {
  const ModelSpec m = five_tables("  data_parallel_max_rows: 5000");
  const DlrmShardPlan plan = plan_dlrm_sharding(m.dlrm, 4);
  EXPECT_EQ(plan.data_parallel, (std::vector<int>{0, 1}));  // 100 and 5000 rows (<=)
  EXPECT_EQ(plan.model_parallel, (std::vector<int>{2, 3, 4}));
  EXPECT_EQ(plan.dp_table_rows, 5100);
  EXPECT_EQ(plan.dp_hotness, 3);
  EXPECT_EQ(plan.mp_hotness, 12);
  // Balanced: each of 4 ranks 1/4 of the model-parallel lookups and pooled rows.
  EXPECT_DOUBLE_EQ(plan.mp_rows_per_sample, 12.0 / 4);
  EXPECT_DOUBLE_EQ(plan.mp_pooled_per_sample, 3.0 / 4);
  EXPECT_DOUBLE_EQ(plan.mp_table_rows, (7000 + 2e6 + 3e6) / 4);
  // The shipped model: HugeCTR's 6000-row threshold leaves 11 of 26 tables data parallel.
  const DlrmShardPlan shipped_plan = plan_dlrm_sharding(shipped("dlrm-dcnv2").dlrm, 1024);
  EXPECT_EQ(shipped_plan.data_parallel.size(), 11u);
  EXPECT_EQ(shipped_plan.model_parallel.size(), 15u);
}

TEST(DlrmSharding, TableWisePlacesTheHottestTablesFirstOnTheLeastLoadedRank) {
  const ModelSpec m = five_tables("  sharding: table_wise");
  // Hotness 5, 4, 3, 2, 1 in that order over 2 ranks: 5 -> r0; 4 -> r1; 3 -> r1 (4 < 5);
  // 2 -> r0 (5 < 7); 1 -> r1 (lookups tie at 7; r1 holds fewer rows, 2,007,000 against
  // 3,005,000). Loads: r0 5 + 2 = 7, r1 4 + 3 + 1 = 8.
  const DlrmShardPlan plan = plan_dlrm_sharding(m.dlrm, 2);
  ASSERT_EQ(plan.tables_of_rank.size(), 2u);
  EXPECT_EQ(plan.tables_of_rank[0], (std::vector<int>{1, 4}));
  EXPECT_EQ(plan.tables_of_rank[1], (std::vector<int>{0, 2, 3}));
  EXPECT_EQ(plan.busiest_rank, 1);
  EXPECT_DOUBLE_EQ(plan.mp_rows_per_sample, 8);
  EXPECT_DOUBLE_EQ(plan.mp_pooled_per_sample, 3);
  EXPECT_DOUBLE_EQ(plan.mp_table_rows, 100 + 7000 + 2e6);
}

TEST(DlrmGenerator, HybridShardingExchangesOnlyModelParallelTables) {
  // dp 4, global batch 64: local batch 16, D 16, fp32 rows.
  const ModelSpec m = five_tables("  data_parallel_max_rows: 5000");
  const auto step = generate_step(m, 4);
  const auto& rank = step.ranks[0];
  // All-to-all send buffer per rank: B·p·D·e = 64 · 3/4 · 16 · 4, each way.
  EXPECT_DOUBLE_EQ(bytes_of(rank, CollectiveOp::AllToAll), 2 * 64 * 0.75 * 16 * 4);
  // The data-parallel tables' gradients (5100 rows of 16, fp32) join the dense all-reduce.
  const ModelSpec all_mp = five_tables("");
  const double dense = bytes_of(generate_step(all_mp, 4).ranks[0], CollectiveOp::AllReduce);
  EXPECT_DOUBLE_EQ(bytes_of(rank, CollectiveOp::AllReduce) - dense, 5100.0 * 16 * 4);
  // Lookups: model-parallel B·(r + p)·D·e plus data-parallel Bl·(H_dp + n_dp)·D·e.
  const double fwd = sum_ops(
      rank,
      [](const sim::OpNode& n) {
        return n.kind == OpKind::EmbeddingLookup && n.phase == Phase::Forward;
      },
      [](const sim::OpNode& n) { return static_cast<double>(n.bytes); });
  EXPECT_DOUBLE_EQ(fwd, 64 * (3.0 + 0.75) * 16 * 4 + 16 * (3 + 2) * 16 * 4);
}

TEST(DlrmGenerator, EveryTableDataParallelNeedsNoExchange) {
  const ModelSpec m = five_tables("  data_parallel_max_rows: 3000000");
  const auto step = generate_step(m, 4);
  EXPECT_DOUBLE_EQ(bytes_of(step.ranks[0], CollectiveOp::AllToAll), 0.0);
  const double dense = bytes_of(generate_step(five_tables(""), 4).ranks[0], CollectiveOp::AllReduce);
  EXPECT_DOUBLE_EQ(bytes_of(step.ranks[0], CollectiveOp::AllReduce) - dense,
                   (100 + 5000 + 7000 + 2e6 + 3e6) * 16 * 4);
}

TEST(DlrmGenerator, RowWiseReduceScattersPartialPoolsOfTheGlobalBatch) {
  const ModelSpec m = five_tables("  sharding: row_wise");
  const auto step = generate_step(m, 4);
  const auto& rank = step.ranks[0];
  // Every rank pools its row range of all 5 tables for all 64 samples: B·n·D·e in.
  EXPECT_DOUBLE_EQ(bytes_of(rank, CollectiveOp::ReduceScatter), 64.0 * 5 * 16 * 4);
  EXPECT_DOUBLE_EQ(bytes_of(rank, CollectiveOp::AllGather), 64.0 * 5 * 16 * 4);
  EXPECT_DOUBLE_EQ(bytes_of(rank, CollectiveOp::AllToAll), 0.0);
}

TEST(DlrmGenerator, TableWiseSimulatesTheBusiestRank) {
  const ModelSpec m = five_tables("  sharding: table_wise");
  // 4 ranks: 5, 4, 3, 2 + 1 -> r3 holds hotness 2 and 1 (fewest rows on the tie at 2),
  // loads 5, 4, 3, 3: the busiest rank holds the hotness-5 table alone.
  const DlrmShardPlan plan = plan_dlrm_sharding(m.dlrm, 4);
  EXPECT_DOUBLE_EQ(plan.mp_rows_per_sample, 5);
  EXPECT_DOUBLE_EQ(plan.mp_pooled_per_sample, 1);
  const auto step = generate_step(m, 4);
  EXPECT_DOUBLE_EQ(bytes_of(step.ranks[0], CollectiveOp::AllToAll), 2 * 64.0 * 1 * 16 * 4);
}

TEST(DlrmGenerator, AdamMovesEachTouchedRowsMomentsAndTheDenseStates) {
  // dp 4, global batch 64, all 5 tables model parallel (balanced), D 16, fp32.
  auto backward_bytes = [](const ModelSpec& m) {
    return sum_ops(
        generate_step(m, 4).ranks[0],
        [](const sim::OpNode& n) {
          return n.kind == OpKind::EmbeddingLookup && n.phase == Phase::Backward;
        },
        [](const sim::OpNode& n) { return static_cast<double>(n.bytes); });
  };
  auto optimizer_bytes = [](const ModelSpec& m) {
    return sum_ops(
        generate_step(m, 4).ranks[0], [](const sim::OpNode& n) { return n.phase == Phase::Optimizer; },
        [](const sim::OpNode& n) { return static_cast<double>(n.bytes); });
  };
  const ModelSpec adagrad = five_tables("");
  const ModelSpec adam = five_tables("  optimizer: adam");
  // Per global sample the rank touches 15/4 rows: Adagrad read-modify-writes them (2), lazy
  // Adam their m and v as well (6).
  EXPECT_DOUBLE_EQ(backward_bytes(adagrad), 64 * (5.0 / 4 + 2 * 15.0 / 4) * 16 * 4);
  EXPECT_DOUBLE_EQ(backward_bytes(adam), 64 * (5.0 / 4 + 6 * 15.0 / 4) * 16 * 4);
  // Dense optimizer: gradient + 16 (Adagrad) or + 24 (Adam) bytes per parameter.
  EXPECT_DOUBLE_EQ(optimizer_bytes(adam) / optimizer_bytes(adagrad), (4.0 + 24) / (4 + 16));
}

TEST(DlrmSharding, MemoryBalancedPairsLargeAndSmallTablesAsDistributedEmbeddings) {
  // Sizes descending: 3e6 (t4), 2e6 (t3), 7000 (t2), 5000 (t1), 100 (t0). Over 2 ranks
  // rank i takes positions i, i + 4 and 3 - i: r0 t4, t0 and t1; r1 t3 and t2. Lookups
  // r0 5 + 1 + 2 = 8, r1 4 + 3 = 7.
  const ModelSpec m = five_tables("  sharding: memory_balanced");
  const DlrmShardPlan plan = plan_dlrm_sharding(m.dlrm, 2);
  ASSERT_EQ(plan.tables_of_rank.size(), 2u);
  EXPECT_EQ(plan.tables_of_rank[0], (std::vector<int>{0, 1, 4}));
  EXPECT_EQ(plan.tables_of_rank[1], (std::vector<int>{2, 3}));
  EXPECT_EQ(plan.busiest_rank, 0);
  EXPECT_DOUBLE_EQ(plan.mp_rows_per_sample, 8);
  EXPECT_DOUBLE_EQ(plan.mp_pooled_per_sample, 3);
  // The memory model's rank: the most rows any rank holds.
  EXPECT_DOUBLE_EQ(plan.mp_table_rows, 3e6 + 100 + 5000);
}

TEST(DlrmSharding, MemoryBalancedDcnv2ReferencePlacesFourSmallTablesOnTheBusiestRank) {
  // The DeepLearningExamples DCNv2 run: 26 one-hot tables over 8 ranks. Ranks 0-5 hold 3
  // tables, ranks 6 and 7 hold 4 (positions 6, 9, 22, 25 and 7, 8, 23, 24 of the sorted
  // list); rank 6 holds more rows. The largest table (48.9M rows) sits on rank 0.
  const ModelSpec m = load_model(std::string(OVERLAPSIM_SOURCE_DIR) +
                                 "/workloads/reference/dle-dcnv2-a100-8gpu/model.yaml");
  const DlrmShardPlan plan = plan_dlrm_sharding(m.dlrm, 8);
  for (int r = 0; r < 6; ++r) EXPECT_EQ(plan.tables_of_rank[r].size(), 3u) << r;
  EXPECT_EQ(plan.tables_of_rank[0], (std::vector<int>{5, 11, 23}));
  EXPECT_EQ(plan.tables_of_rank[6], (std::vector<int>{8, 10, 15, 20}));
  EXPECT_EQ(plan.tables_of_rank[7], (std::vector<int>{1, 3, 4, 21}));
  EXPECT_EQ(plan.busiest_rank, 6);
  EXPECT_DOUBLE_EQ(plan.mp_rows_per_sample, 4);
  EXPECT_DOUBLE_EQ(plan.mp_table_rows, 48937457.0 + 2209 + 1442);
}

TEST(DlrmGenerator, ExpectedUniqueRowsFollowTheIndexDistribution) {
  // Uniform indices: n (1 - (1 - 1/n)^m), in the exact head and over the blocks beyond it.
  for (const double n : {1000.0, 452104.0, 48937457.0}) {
    const double m = 65536;
    const double closed = n * -std::expm1(m * std::log1p(-1 / n));
    EXPECT_NEAR(expected_unique_rows(static_cast<std::int64_t>(n), m, 0), closed, 1e-6 * closed)
        << n;
  }
  // Power law (DeepLearningExamples' synthetic data, alpha 1.45): against the sum over
  // every row. Row k has probability F(k + 2) - F(k + 1), F(y) = (y^g - 1)/((n+1)^g - 1).
  const double n = 452104, m = 65536, g = 1 - 1.45;
  double exact = 0;
  for (double k = 0; k < n; ++k) {
    const double p = (std::pow(k + 2, g) - std::pow(k + 1, g)) / (std::pow(n + 1, g) - 1);
    exact += -std::expm1(m * std::log1p(-p));
  }
  EXPECT_NEAR(expected_unique_rows(452104, m, 1.45), exact, 1e-3 * exact);
  // A Monte Carlo of the generator (5 x 65,536 draws) gave 3,322 distinct rows.
  EXPECT_NEAR(exact, 3322, 30);
  // Skewed draws touch far fewer rows than uniform ones; tiny tables are fully touched.
  EXPECT_LT(expected_unique_rows(452104, m, 1.45), 0.1 * expected_unique_rows(452104, m, 0));
  EXPECT_DOUBLE_EQ(expected_unique_rows(4, m, 1.45), 4);
}

TEST(DlrmGenerator, TensorFlowOpsChargeTheFrameworksPasses) {
  // dp 4, global batch 64, all 5 tables model parallel (balanced), D 16, fp32 tables, fp16
  // exchange: per global sample the rank pools p = 5/4 rows and touches r = 15/4.
  ModelSpec m = five_tables(
      "  optimizer: adam\n  embedding_ops: tensorflow\n  exchange_precision: fp16");
  m.training.precision = sim::Precision::FP16;
  const auto step = generate_step(m, 4);
  const auto& rank = step.ranks[0];
  auto bytes_named = [&](const std::string& what) {
    return sum_ops(
        rank,
        [&](const sim::OpNode& n) {
          return n.name.size() >= what.size() &&
                 n.name.compare(n.name.size() - what.size(), what.size(), what) == 0;
        },
        [](const sim::OpNode& n) { return static_cast<double>(n.bytes); });
  };
  const double p = 5.0 / 4, r = 15.0 / 4;
  // The all-to-all carries fp16, each way.
  EXPECT_DOUBLE_EQ(bytes_of(rank, CollectiveOp::AllToAll), 2 * 64 * p * 16 * 2);
  // Pack: read the fp32 outputs, write fp16; unpack: the reverse.
  EXPECT_DOUBLE_EQ(bytes_named(".embedding.pack"), 64 * p * 16 * (4 + 2));
  EXPECT_DOUBLE_EQ(bytes_named(".embedding.unpack"), 64 * p * 16 * (2 + 4));
  // Dedup reads the B·r gradient rows and zeroes and accumulates U rows; lazy Adam makes
  // 17 passes over the U rows. Uniform indices, 64 x hotness draws per table, 1/4 each.
  const std::int64_t rows[] = {100, 5000, 7000, 2000000, 3000000};
  double U = 0;
  for (int t = 0; t < 5; ++t) U += expected_unique_rows(rows[t], 64.0 * (t + 1), 0) / 4;
  EXPECT_NEAR(bytes_named(".embedding.dedup"), (64 * r + 2 * U) * 16 * 4, 1);
  EXPECT_NEAR(bytes_named(".embedding.backward"), 17 * U * 16 * 4, 1);
  // fp16 adds Keras' unscale pass (read and write 4) to the dense optimizer's bytes.
  ModelSpec fused = five_tables("  optimizer: adam");
  fused.training.precision = sim::Precision::FP16;
  auto optimizer_bytes = [](const sim::RankProgram& rk) {
    return sum_ops(
        rk, [](const sim::OpNode& n) { return n.phase == Phase::Optimizer; },
        [](const sim::OpNode& n) { return static_cast<double>(n.bytes); });
  };
  EXPECT_DOUBLE_EQ(optimizer_bytes(rank) / optimizer_bytes(generate_step(fused, 4).ranks[0]),
                   (4.0 + 24 + 8) / (4 + 24));
}

TEST(DlrmGenerator, ExchangePrecisionDefaultsToTheTables) {
  // Unset, the all-to-all carries the tables' type (fp32 here): B·p·D·4 each way.
  const auto step = generate_step(five_tables(""), 4);
  EXPECT_DOUBLE_EQ(bytes_of(step.ranks[0], CollectiveOp::AllToAll), 2 * 64 * 1.25 * 16 * 4);
}
