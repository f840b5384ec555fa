#include "sim/profile/compute_model.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/sim/sim_test_util.hpp"

namespace overlapsim::sim {
namespace {

using testing::elementwise_op;
using testing::gemm_op;

LogCurve flat(double y) {
  LogCurve c;
  c.points = {{1.0, y}};
  return c;
}

// Round numbers so every expected time is a closed form.
ComputeProfile test_profile() {
  ComputeProfile p;
  p.peak_flops_per_s[Precision::BF16].value = 1e15;
  p.peak_flops_per_s[Precision::FP32].value = 5e13;
  p.memory_bandwidth_Bps.value = 1e12;
  p.launch_overhead_s.value = 1e-6;
  p.gemm_efficiency[Precision::BF16] = flat(0.5);
  p.attention_forward_efficiency = flat(0.4);
  p.attention_backward_efficiency = flat(0.2);
  p.memory_efficiency = flat(0.8);
  p.embedding_efficiency = flat(0.25);
  return p;
}

TEST(ComputeModel, ComputeBoundGemmIsFlopsOverEfficientPeakPlusLaunch) {
  ComputeProfile p = test_profile();
  ComputeModel model(p);
  const OpNode op = gemm_op("g", 4096, 4096, 4096);
  const double flops = 2.0 * 4096.0 * 4096.0 * 4096.0;
  const double bytes = 3.0 * 4096.0 * 4096.0 * 2.0;
  const OpCost c = model.cost(op);
  EXPECT_DOUBLE_EQ(c.compute_s, flops / (1e15 * 0.5));
  EXPECT_DOUBLE_EQ(c.memory_s, bytes / (1e12 * 0.8));
  EXPECT_FALSE(c.memory_bound());
  EXPECT_DOUBLE_EQ(c.time_s, flops / 5e14 + 1e-6);
}

// Block-scaled fp8 GEMMs take the profile's factor on their compute time; other ops and
// per-tensor fp8 do not; without the factor a block-scaled op names the missing key.
TEST(ComputeModel, BlockScaledFp8GemmsTakeTheMeasuredFactor) {
  ComputeProfile p = test_profile();
  p.peak_flops_per_s[Precision::FP8].value = 2e15;
  p.gemm_efficiency[Precision::FP8] = flat(0.5);
  OpNode op = gemm_op("g", 4096, 4096, 4096);
  op.precision = Precision::FP8;
  const double tensor_s = ComputeModel(p).cost(op).compute_s;
  op.fp8_block_scaled = true;
  try {
    ComputeModel(p).cost(op);
    FAIL() << "no factor in the profile";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("compute.fp8_block_scaling_time_factor"),
              std::string::npos);
  }
  p.fp8_block_scaling_time_factor = Sourced{1.1, {}};
  ComputeModel model(p);
  EXPECT_DOUBLE_EQ(model.cost(op).compute_s, 1.1 * tensor_s);
  const auto used = model.used_entries();
  EXPECT_NE(std::find(used.begin(), used.end(), "compute.fp8_block_scaling_time_factor"),
            used.end());
  OpNode bf16 = gemm_op("h", 4096, 4096, 4096);
  bf16.fp8_block_scaled = true;  // not fp8: no effect
  EXPECT_DOUBLE_EQ(model.cost(bf16).compute_s, 2.0 * 4096.0 * 4096.0 * 4096.0 / 5e14);
}

// Atomic scatter-adds run at the profile's measured rate, not at the memory bandwidth; a
// profile without the rate refuses such an op, naming the key.
TEST(ComputeModel, AtomicAddsRunAtTheirMeasuredRate) {
  ComputeProfile p = test_profile();
  OpNode op = elementwise_op("unpermute", 1'000'000'000);
  op.atomic_add = AtomicAdd::Scatter;
  try {
    ComputeModel(p).cost(op);
    FAIL() << "no scatter-add rate in the profile";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("compute.scatter_add_bandwidth_Bps"), std::string::npos);
  }
  p.scatter_add_bandwidth_Bps = Sourced{1e11, {}};
  p.index_add_bandwidth_Bps = Sourced{5e10, {}};
  ComputeModel model(p);
  EXPECT_DOUBLE_EQ(model.time_s(op), 1e9 / 1e11 + 1e-6);
  op.atomic_add = AtomicAdd::Index;
  EXPECT_DOUBLE_EQ(model.time_s(op), 1e9 / 5e10 + 1e-6);
  const auto used = model.used_entries();
  EXPECT_NE(std::find(used.begin(), used.end(), "compute.index_add_bandwidth_Bps"), used.end());
  // The key tells them apart for the executor's memo.
  OpNode plain = op;
  plain.atomic_add = AtomicAdd::None;
  EXPECT_FALSE(OpCostKey::of(plain) == OpCostKey::of(op));
}

// An op standing for several kernels pays the launch overhead once for each.
TEST(ComputeModel, EveryLaunchPaysTheOverhead) {
  ComputeProfile p = test_profile();
  ComputeModel model(p);
  OpNode op = elementwise_op("router", 8'000'000);
  op.launches = 28;
  EXPECT_DOUBLE_EQ(model.time_s(op), 8e6 / 8e11 + 28e-6);
  OpNode one = op;
  one.launches = 1;
  EXPECT_FALSE(OpCostKey::of(one) == OpCostKey::of(op));
}

TEST(ComputeModel, GemvIsMemoryBound) {
  ComputeProfile p = test_profile();
  ComputeModel model(p);
  OpNode op = gemm_op("g", 8192, 1, 8192);
  op.kind = OpKind::Gemv;
  const double bytes = (8192.0 * 8192.0 + 8192.0 + 8192.0) * 2.0;
  const OpCost c = model.cost(op);
  EXPECT_TRUE(c.memory_bound());
  EXPECT_DOUBLE_EQ(c.compute_s, 2.0 * 8192 * 8192 / 1e15);  // at peak: memory decides
  EXPECT_DOUBLE_EQ(c.time_s, bytes / 8e11 + 1e-6);
}

// A measured GEMV curve times GEMVs only: an elementwise op of the same bytes stays on the
// memory (streaming) curve, and the GEMV names the curve it used.
TEST(ComputeModel, GemvTakesItsOwnCurveWhereMeasured) {
  ComputeProfile p = test_profile();
  p.gemv_efficiency = flat(0.4);
  ComputeModel model(p);
  OpNode gemv = gemm_op("g", 8192, 1, 8192);
  gemv.kind = OpKind::Gemv;
  const double bytes = (8192.0 * 8192.0 + 8192.0 + 8192.0) * 2.0;
  EXPECT_DOUBLE_EQ(model.time_s(gemv), bytes / 4e11 + 1e-6);
  const auto used = model.used_entries();
  EXPECT_NE(std::find(used.begin(), used.end(), "compute.efficiency.gemv"), used.end());
  EXPECT_EQ(std::find(used.begin(), used.end(), "compute.efficiency.memory"), used.end());
  OpNode add;
  add.name = "add";
  add.kind = OpKind::Elementwise;
  add.precision = Precision::BF16;
  add.bytes = static_cast<std::uint64_t>(bytes);
  EXPECT_DOUBLE_EQ(model.time_s(add), bytes / 8e11 + 1e-6);
}

TEST(ComputeModel, GivenFlopsAndBytesOverrideTheShape) {
  ComputeProfile p = test_profile();
  ComputeModel model(p);
  OpNode op = gemm_op("g", 10, 10, 10);
  op.flops = 1e12;
  op.bytes = 1000;
  EXPECT_DOUBLE_EQ(model.time_s(op), 1e12 / 5e14 + 1e-6);
}

TEST(ComputeModel, ElementwiseUsesFp32RateAndMemoryTerm) {
  ComputeProfile p = test_profile();
  ComputeModel model(p);
  OpNode op = elementwise_op("norm", 4'000'000'000);
  op.flops = 1e9;
  const OpCost c = model.cost(op);
  EXPECT_DOUBLE_EQ(c.compute_s, 1e9 / 5e13);
  EXPECT_DOUBLE_EQ(c.memory_s, 4e9 / 8e11);
  EXPECT_DOUBLE_EQ(c.time_s, 4e9 / 8e11 + 1e-6);
}

TEST(ComputeModel, EmbeddingUsesRandomAccessEfficiency) {
  ComputeProfile p = test_profile();
  ComputeModel model(p);
  OpNode op;
  op.name = "emb";
  op.kind = OpKind::EmbeddingLookup;
  op.bytes = 1'000'000'000;
  EXPECT_DOUBLE_EQ(model.time_s(op), 1e9 / (1e12 * 0.25) + 1e-6);
}

// A compute-bound attention op of 1e12 FLOPs (its one byte never decides).
OpNode attention_op() {
  OpNode op;
  op.name = "attn";
  op.kind = OpKind::Attention;
  op.flops = 1e12;
  op.bytes = 1;
  return op;
}

TEST(ComputeModel, AttentionBackwardUsesItsOwnCurve) {
  ComputeProfile p = test_profile();
  ComputeModel model(p);
  OpNode op = attention_op();
  EXPECT_DOUBLE_EQ(model.time_s(op), 1e12 / (1e15 * 0.4) + 1e-6);
  // The backward kernel recomputes the scores: 2.5x the forward's FLOPs where the op
  // carries the model's 2x, so 1.25x the op's FLOPs at the backward curve.
  op.phase = Phase::Backward;
  EXPECT_DOUBLE_EQ(model.time_s(op), 1.25e12 / (1e15 * 0.2) + 1e-6);
  // A recomputed forward in the backward phase runs the forward kernel.
  op.recompute = true;
  EXPECT_DOUBLE_EQ(model.time_s(op), 1e12 / (1e15 * 0.4) + 1e-6);
}

// With an attention table, an op that carries its shape is timed by the table (the backward
// at 2.5x the forward's FLOPs); one without (MLA) keeps the curves.
TEST(ComputeModel, AttentionTableReplacesTheCurvesForShapedOps) {
  ComputeProfile p = test_profile();
  AttentionTable t;
  t.head_dims = {64, 128};
  t.seq_lens = {1024, 4096};
  t.forward = {0.25, 0.25, 0.5, 0.5};
  t.backward = {0.125, 0.125, 0.25, 0.25};
  t.validate();
  p.attention_table = t;
  ComputeModel model(p);
  OpNode op = attention_op();
  EXPECT_DOUBLE_EQ(model.time_s(op), 1e12 / (1e15 * 0.4) + 1e-6);  // no shape: the curve
  op.attention = {128, 2048};
  EXPECT_DOUBLE_EQ(model.time_s(op), 1e12 / (1e15 * 0.5) + 1e-6);
  op.attention.head_dim = 64;
  op.phase = Phase::Backward;
  EXPECT_DOUBLE_EQ(model.time_s(op), 1.25e12 / (1e15 * 0.125) + 1e-6);
  const auto used = model.used_entries();
  EXPECT_NE(std::find(used.begin(), used.end(), "compute.attention_table"), used.end());
}

TEST(ComputeModel, GemmTableReplacesTheCurve) {
  ComputeProfile p = test_profile();
  GemmTable t;
  t.m_values = {1024, 4096};
  t.n_values = {1024};
  t.k_values = {1024};
  t.achieved_flops_per_s = {1e14, 4e14};
  t.validate();
  p.gemm_tables[Precision::BF16] = t;
  ComputeModel model(p);
  // m = 2048 is the log-midpoint of 1024 and 4096: the rate is the geometric mean, 2e14.
  const OpNode op = gemm_op("g", 2048, 1024, 1024);
  EXPECT_NEAR(model.cost(op).compute_s, 2.0 * 2048 * 1024 * 1024 / 2e14, 1e-15);
  // Beyond the grid the edge value holds.
  EXPECT_NEAR(t.rate_flops_per_s(65536, 1, 1), 4e14, 1e3);
}

TEST(ComputeModel, GemmWaveModelTimesTheKernel) {
  ComputeProfile p = test_profile();
  GemmTable t;
  t.waves.fixed_s = 5e-6;
  t.waves.output_s_per_element = 1e-13;
  t.waves.mainloop_flops_per_s = 8e14;
  t.waves.tile_m = 128;
  t.waves.tile_n = 128;
  t.waves.sms = 132;
  t.validate();
  p.gemm_tables[Precision::BF16] = t;
  ComputeModel model(p);
  // 2048 x 2048: 16 x 16 = 256 tiles -> 2 waves of 132 tiles of 128 x 128 charged.
  const double area = 2.0 * 132 * 128 * 128;
  const double kernel_s = 5e-6 + area * 1e-13 + 2 * area * 4096 / 8e14;
  OpNode op;
  op.kind = OpKind::Gemm;
  op.gemm = {2048, 2048, 4096, 1};
  EXPECT_NEAR(model.cost(op).compute_s, kernel_s, 1e-15);
  EXPECT_EQ(model.cost(op).launch_s, 1e-6);
  // A batch runs its members back to back.
  op.gemm.batch = 3;
  EXPECT_NEAR(model.cost(op).compute_s, 3 * kernel_s, 1e-15);
  // Below one full wave (64 tiles) the area is m * n: K is split there.
  EXPECT_NEAR(t.compute_s(1024, 1024, 4096), 5e-6 + 1024.0 * 1024 * (1e-13 + 2 * 4096 / 8e14),
              1e-15);
  // Scaling the rates divides every time.
  GemmTable faster = t;
  faster.scale_rates(1.25);
  EXPECT_NEAR(faster.compute_s(2048, 2048, 4096), kernel_s / 1.25, 1e-15);
  GemmTable grid;
  grid.m_values = grid.n_values = grid.k_values = {1024};
  grid.achieved_flops_per_s = {4e14};
  grid.scale_rates(1.25);
  EXPECT_NEAR(grid.rate_flops_per_s(1024, 1024, 1024), 5e14, 1e3);  // exp(log(r))
}

TEST(GemmTable, WaveModelTimesItsCorrectionGrid) {
  GemmTable t;
  t.waves.fixed_s = 0;
  t.waves.output_s_per_element = 0;
  t.waves.mainloop_flops_per_s = 1e15;
  t.m_values = {1024, 4096};
  t.n_values = {1024};
  t.k_values = {1024};
  t.time_factor = {1.0, 1.21};
  t.validate();
  const double plain_s = 2.0 * 2048 * 1024 * 1024 / 1e15;
  // m = 2048 is the log-midpoint: the factor is the geometric mean, 1.1.
  EXPECT_NEAR(t.compute_s(2048, 1024, 1024), 1.1 * plain_s, 1e-12 * plain_s);
  // Held at the edges.
  EXPECT_NEAR(t.compute_s(65536, 1024, 1024), 1.21 * 2.0 * 65536 * 1024 * 1024 / 1e15, 1e-15);
  t.time_factor = {1.0};  // wrong size
  EXPECT_THROW(t.validate(), std::invalid_argument);
  GemmTable grid_only;
  grid_only.m_values = grid_only.n_values = grid_only.k_values = {1024};
  grid_only.achieved_flops_per_s = {1e14};
  grid_only.time_factor = {1.0};  // a correction needs a wave model
  EXPECT_THROW(grid_only.validate(), std::invalid_argument);
}

TEST(GemmTable, WaveModelValidation) {
  GemmTable t;
  t.waves.mainloop_flops_per_s = 8e14;
  t.waves.tile_m = 128;  // one side only
  EXPECT_THROW(t.validate(), std::invalid_argument);
  t.waves.tile_n = 128;  // a tile without the SM count
  EXPECT_THROW(t.validate(), std::invalid_argument);
  t.waves.sms = 132;
  t.validate();
  t.achieved_flops_per_s = {1e14};  // both forms at once
  EXPECT_THROW(t.validate(), std::invalid_argument);
  t.achieved_flops_per_s.clear();
  t.waves.fixed_s = -1e-6;
  EXPECT_THROW(t.validate(), std::invalid_argument);
}

// The best-of model (tile: best), worked by hand on 132 SMs with a free epilogue
// (output_s_per_element 0), so each choice costs its main-loop FLOPs / efficiency.
TEST(GemmWaveModel, BestOfChoicesSplitsKToFillOneWave) {
  GemmWaveModel w;
  w.mainloop_flops_per_s = 1e15;
  w.sms = 132;
  w.max_split_k = 4;
  w.choices = {{128, 128, 1.0}};
  w.validate();
  // 1024 x 1024: 64 tiles. Split 1: one wave of 132 x 128 x 128 for the whole K (2 x area
  // x K); split 2: 128 units, still one wave, K / 2 each (half of that); split 3: 192
  // units, 2 waves x K / 3 (2/3 more than split 2); split 4: 256 units, 2 waves x K / 4
  // (equal to split 2: the smaller split is kept).
  const double wave = 132.0 * 128 * 128;
  const GemmCharge c = w.charge(1024, 1024, 8192);
  EXPECT_EQ(c.tile_m, 128);
  EXPECT_EQ(c.split_k, 2);
  EXPECT_DOUBLE_EQ(c.outputs, wave);
  EXPECT_DOUBLE_EQ(w.time_s(1024, 1024, 8192), wave * 8192 / 1e15);
  // With an epilogue cost, splits 1 and 2 both pay one wave of epilogues and split 4 two
  // waves: split 2 stays the fastest.
  w.output_s_per_element = 1e-11;
  EXPECT_EQ(w.charge(1024, 1024, 8192).split_k, 2);
  EXPECT_DOUBLE_EQ(w.time_s(1024, 1024, 8192), wave * 1e-11 + wave * 8192 / 1e15);
}

TEST(GemmWaveModel, BestOfChoicesWeighsTilesByTheirEfficiency) {
  GemmWaveModel w;
  w.mainloop_flops_per_s = 1e15;
  w.sms = 132;
  // 3072 x 3072 x 4096. 128x128: 576 tiles -> 5 waves, 5 x 132 x 16384 = 10813440
  // outputs; 128x256: 288 tiles -> 3 waves, 3 x 132 x 32768 = 12976128 outputs.
  const double k = 4096;
  const double a128 = 5.0 * 132 * 128 * 128, a256 = 3.0 * 132 * 128 * 256;
  w.choices = {{128, 128, 1.0}, {128, 256, 1.1}};
  // At x1.1 the wider tile's 12976128 / 1.1 = 11796480 > 10813440: 128x128 wins.
  EXPECT_EQ(w.charge(3072, 3072, k).tile_n, 128);
  EXPECT_DOUBLE_EQ(w.time_s(3072, 3072, k), 2 * a128 * k / 1e15);
  // At x1.25, 10380902 < 10813440: 128x256 wins.
  w.choices[1].efficiency = 1.25;
  EXPECT_EQ(w.charge(3072, 3072, k).tile_n, 256);
  EXPECT_DOUBLE_EQ(w.time_s(3072, 3072, k), 2 * a256 * k / 1.25 / 1e15);
  // Stream-K charges m x n unrounded (9437184 outputs): at x0.9, 10485760 loses to the
  // 128x256 tile's 10380902; at x0.95, 9933878 wins.
  w.choices.push_back({0, 0, 0.9});
  EXPECT_EQ(w.charge(3072, 3072, k).tile_n, 256);
  w.choices[2].efficiency = 0.95;
  const GemmCharge sk = w.charge(3072, 3072, k);
  EXPECT_EQ(sk.tile_m, 0);
  EXPECT_DOUBLE_EQ(sk.outputs, 3072.0 * 3072);
  EXPECT_DOUBLE_EQ(w.time_s(3072, 3072, k), 2 * 3072.0 * 3072 * k / 0.95 / 1e15);
  w.validate();
  // Choices exclude a fixed tile or a tile per shape; efficiencies must be positive.
  GemmWaveModel bad = w;
  bad.tile_per_shape = true;
  EXPECT_THROW(bad.validate(), std::invalid_argument);
  bad = w;
  bad.choices[0].efficiency = 0;
  EXPECT_THROW(bad.validate(), std::invalid_argument);
  bad = w;
  bad.max_split_k = 0;
  EXPECT_THROW(bad.validate(), std::invalid_argument);
}

TEST(ComputeModel, MissingPrecisionAndCommOpsThrow) {
  ComputeProfile p = test_profile();
  ComputeModel model(p);
  OpNode op = gemm_op("g", 64, 64, 64);
  op.precision = Precision::FP8;
  EXPECT_THROW(model.cost(op), std::invalid_argument);
  OpNode comm;
  comm.kind = OpKind::Collective;
  EXPECT_THROW(model.cost(comm), std::invalid_argument);
}

TEST(ComputeModel, ReportsTheProfileEntriesItUsed) {
  ComputeProfile p = test_profile();
  ComputeModel model(p);
  EXPECT_TRUE(model.used_entries().empty());
  model.cost(gemm_op("g", 64, 64, 64));
  EXPECT_EQ(
      model.used_entries(),
      (std::vector<std::string>{"compute.peak_flops_per_s.bf16", "compute.memory_bandwidth_Bps",
                                "compute.launch_overhead_s", "compute.efficiency.gemm.bf16",
                                "compute.efficiency.memory"}));
  OpNode emb;
  emb.kind = OpKind::EmbeddingLookup;
  emb.bytes = 100;
  model.cost(emb);
  EXPECT_EQ(model.used_entries().back(), "compute.efficiency.embedding");
}

TEST(LogCurve, InterpolatesInLogXAndClamps) {
  LogCurve c;
  c.points = {{1e9, 0.2}, {1e11, 0.6}};
  EXPECT_DOUBLE_EQ(c.at(1e10), 0.4);
  EXPECT_DOUBLE_EQ(c.at(1e3), 0.2);
  EXPECT_DOUBLE_EQ(c.at(1e20), 0.6);
  EXPECT_NEAR(c.at(std::pow(10.0, 9.5)), 0.3, 1e-12);
}

TEST(GemmTable, ValidateRejectsBadGrids) {
  GemmTable t;
  t.m_values = {2, 1};
  t.n_values = {1};
  t.k_values = {1};
  t.achieved_flops_per_s = {1, 1};
  EXPECT_THROW(t.validate(), std::invalid_argument);
  t.m_values = {1, 2};
  t.achieved_flops_per_s = {1};
  EXPECT_THROW(t.validate(), std::invalid_argument);
}

// The memo key holds every field cost() reads and nothing that varies between repeats of
// a layer's op (name, layer, microbatch, stream, pairing, communication fields).
TEST(OpCostKey, IgnoresWhatCostDoesNotRead) {
  const OpNode a = gemm_op("L0.mb0.fwd.qkv", 4096, 4096, 4096);
  OpNode b = a;
  b.name = "L7.mb3.fwd.qkv";
  b.layer = 7;
  b.microbatch = 3;
  b.stream = StreamKind::TensorComm;
  b.pair_partner = 12;
  b.comm_group = 2;
  b.comm_bytes = 1 << 20;
  EXPECT_TRUE(OpCostKey::of(a) == OpCostKey::of(b));
  EXPECT_EQ(OpCostKey::Hash{}(OpCostKey::of(a)), OpCostKey::Hash{}(OpCostKey::of(b)));
}

TEST(OpCostKey, EachCostFieldChangesTheKey) {
  const OpNode base = gemm_op("qkv", 4096, 4096, 4096);
  const std::vector<void (*)(OpNode&)> changes = {
      [](OpNode& o) { o.kind = OpKind::Gemv; },
      [](OpNode& o) { o.phase = Phase::Backward; },
      [](OpNode& o) { o.precision = Precision::FP8; },
      [](OpNode& o) { o.fp8_block_scaled = true; },
      [](OpNode& o) { o.recompute = true; },
      [](OpNode& o) { o.gemm.m = 4095; },
      [](OpNode& o) { o.gemm.n = 4095; },
      [](OpNode& o) { o.gemm.k = 4095; },
      [](OpNode& o) { o.gemm.batch = 2; },
      [](OpNode& o) { o.attention.head_dim = 128; },
      [](OpNode& o) { o.attention.seq_len = 8192; },
      [](OpNode& o) { o.attention.query_tiles = 64; },
      [](OpNode& o) { o.flops = 1e9; },
      [](OpNode& o) { o.bytes = 1 << 20; },
  };
  for (std::size_t i = 0; i < changes.size(); ++i) {
    OpNode changed = base;
    changes[i](changed);
    EXPECT_FALSE(OpCostKey::of(base) == OpCostKey::of(changed)) << "change " << i;
  }
}

}  // namespace
}  // namespace overlapsim::sim
