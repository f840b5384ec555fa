// The fused fit against closed forms (rows made from known costs come back), its refusal
// of rows that cannot determine it, and the shipped profiles against the fit of the
// shipped measurements.
#include "calibration/fit_fused.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <string>

#include "config/error.hpp"
#include "sim/profile/profile_load.hpp"

namespace overlapsim::calibration {
namespace {

using sim::FusedPair;

FusedRow row(FusedPair pair, int world, double op_s, std::uint64_t bytes) {
  FusedRow r;
  r.pair = pair;
  r.where = "synthetic.csv:1";
  r.world = world;
  r.comm_bytes = bytes;
  r.op_s = op_s;
  return r;
}

sim::FusedCosts known() {
  sim::FusedCosts c;
  c.memory_bound_overhead_fraction = 0.02;
  c.memory_bound_store_Bps = 2e12;
  c.gemm_store_Bps = 5e11;
  c.alltoall_finish_s = 5e-6;
  c.allreduce_finish_s = 11e-6;
  c.nvlink_store_Bps = 1e300;  // no link bound: the rows are the fit's linear model
  return c;
}

std::vector<FusedRow> exact_rows(const sim::FusedCosts& c) {
  std::vector<FusedRow> rows;
  for (int w : {2, 4})
    for (double op_s : {20e-6, 300e-6, 2e-3}) {
      rows.push_back(row(FusedPair::EmbeddingAllToAll, w, op_s, 1ull << 20));
      rows.push_back(row(FusedPair::EmbeddingAllToAll, w, op_s * 2, 100ull << 20));
      rows.push_back(row(FusedPair::GemvAllReduce, w, op_s, 16384ull * w));
    }
  for (std::uint64_t mib : {64, 128, 224, 448})
    rows.push_back(
        row(FusedPair::GemmAllToAll, 2, 1e-3 * static_cast<double>(mib) / 64, mib << 20));
  for (FusedRow& r : rows)
    r.fused_s = sim::fused_times(c, r.pair, r.op_s, r.pushed_bytes()).total_s();
  return rows;
}

TEST(FitFused, RecoversExactCosts) {
  const sim::FusedCosts c = known();
  const FusedFit fit = fit_fused(exact_rows(c), c.nvlink_store_Bps);
  EXPECT_NEAR(fit.costs.memory_bound_overhead_fraction, 0.02, 1e-6);
  EXPECT_NEAR(fit.costs.memory_bound_store_Bps, 2e12, 2e12 * 1e-4);
  EXPECT_NEAR(fit.costs.gemm_store_Bps, 5e11, 5e11 * 1e-4);
  EXPECT_NEAR(fit.costs.alltoall_finish_s, 5e-6, 1e-10);
  EXPECT_NEAR(fit.costs.allreduce_finish_s, 11e-6, 1e-10);
  EXPECT_LT(fit.relative_rms, 1e-4);
  ASSERT_EQ(fit.params.size(), 5u);
  for (const auto& [key, v] : fit.params) {
    EXPECT_EQ(v.source.kind, sim::SourceKind::Measured) << key;
    EXPECT_NE(v.source.citation.find("synthetic.csv"), std::string::npos) << key;
  }
}

// Pushed bytes by the collective: an all-to-all's (W-1)/W of the send buffer, a one-shot
// all-reduce's partial to each of W-1 peers.
TEST(FitFused, PushedBytes) {
  EXPECT_DOUBLE_EQ(row(FusedPair::EmbeddingAllToAll, 4, 1, 400).pushed_bytes(), 300);
  EXPECT_DOUBLE_EQ(row(FusedPair::GemmAllToAll, 2, 1, 400).pushed_bytes(), 200);
  EXPECT_DOUBLE_EQ(row(FusedPair::GemvAllReduce, 4, 1, 400).pushed_bytes(), 1200);
}

// A finish that the rows say is negative is held at 0 and the rest refitted.
TEST(FitFused, NegativeUnknownIsClampedToZero) {
  sim::FusedCosts c = known();
  std::vector<FusedRow> rows = exact_rows(c);
  for (FusedRow& r : rows)
    if (r.pair == FusedPair::GemvAllReduce)
      r.fused_s = r.op_s * 1.02 + r.pushed_bytes() / 2e12 - 3e-6;
  const FusedFit fit = fit_fused(rows, c.nvlink_store_Bps);
  EXPECT_EQ(fit.costs.allreduce_finish_s, 0);
  EXPECT_GE(fit.costs.memory_bound_overhead_fraction, 0);
}

TEST(FitFused, RowsWithoutEveryPairKindAreRefused) {
  std::vector<FusedRow> rows = exact_rows(known());
  std::erase_if(rows, [](const FusedRow& r) { return r.pair == FusedPair::GemmAllToAll; });
  EXPECT_THROW(fit_fused(rows), config::ConfigError);
}

// The stores cannot leave faster than NVLink carries them: where the pushed bytes take
// longer on the link than the op with its stores, the link sets the pair's time.
TEST(FitFused, NvlinkBoundsTheStores) {
  sim::FusedCosts c = known();
  c.nvlink_store_Bps = 450e9;
  const double pushed = 450e6;  // 1 ms on the link
  const sim::FusedTimes slow_link =
      sim::fused_times(c, FusedPair::EmbeddingAllToAll, 100e-6, pushed);
  EXPECT_NEAR(slow_link.total_s(), 1e-3 + 5e-6, 1e-12);
  const sim::FusedTimes long_op = sim::fused_times(c, FusedPair::EmbeddingAllToAll, 2e-3, pushed);
  EXPECT_NEAR(long_op.total_s(), 2e-3 * 1.02 + pushed / 2e12 + 5e-6, 1e-12);
}

// The embedding backward: max(expansion, arrival) + finish, by hand.
sim::FusedCosts known_backward() {
  sim::FusedCosts c = known();
  c.has_backward = true;
  c.backward_expand_factor = 0.9;
  c.backward_store_Bps = 2e12;
  c.backward_finish_s = 9e-6;
  c.backward_owner_step_s = 5e-6;
  c.backward_arrival_Bps = 2e11;
  return c;
}

TEST(FitFusedBackward, ClosedForm) {
  const sim::FusedCosts c = known_backward();
  // 4 ranks, 1 ms of expansion, 100 MB pushed: expansion 0.9 ms + 400 MB / 2 TB/s = 1.1 ms;
  // arrival 3 x 5 us + 100 MB / 200 GB/s + 0.9 ms / 4 = 0.74 ms.
  sim::FusedTimes t = sim::fused_times(c, FusedPair::EmbeddingBackward, 1e-3, 100e6, 4);
  EXPECT_FALSE(t.arrival_bound);
  EXPECT_NEAR(t.total_s(), 1.1e-3 + 9e-6, 1e-12);
  // 20 us of expansion, 4 MB pushed at 2 ranks: expansion 18 us + 8 MB / 2 TB/s = 22 us;
  // arrival 5 us + 20 us + 9 us = 34 us.
  t = sim::fused_times(c, FusedPair::EmbeddingBackward, 20e-6, 4e6, 2);
  EXPECT_TRUE(t.arrival_bound);
  EXPECT_NEAR(t.total_s(), 34e-6 + 9e-6, 1e-12);
  // The last rows cannot land faster than NVLink carries them.
  sim::FusedCosts slow_link = c;
  slow_link.nvlink_store_Bps = 1e11;
  t = sim::fused_times(slow_link, FusedPair::EmbeddingBackward, 20e-6, 4e6, 2);
  EXPECT_NEAR(t.total_s(), 5e-6 + 40e-6 + 9e-6 + 9e-6, 1e-12);
}

std::vector<FusedRow> exact_backward_rows(const sim::FusedCosts& c) {
  std::vector<FusedRow> rows;
  for (int w : {2, 4})
    for (std::uint64_t mib : {1, 8, 64, 256})
      for (double op_per_mib : {2e-6, 10e-6, 40e-6}) {
        FusedRow r =
            row(FusedPair::EmbeddingBackward, w, op_per_mib * static_cast<double>(mib), mib << 20);
        r.fused_s = sim::fused_times(c, r.pair, r.op_s, r.pushed_bytes(), w).total_s();
        rows.push_back(r);
      }
  return rows;
}

TEST(FitFusedBackward, RecoversExactCosts) {
  const sim::FusedCosts c = known_backward();
  const std::vector<FusedRow> rows = exact_backward_rows(c);
  int arrival = 0;
  for (const FusedRow& r : rows)
    arrival += sim::fused_times(c, r.pair, r.op_s, r.pushed_bytes(), r.world).arrival_bound;
  ASSERT_GT(arrival, 4);  // both bounds are on several rows
  ASSERT_LT(arrival, static_cast<int>(rows.size()) - 4);
  const FusedBackwardFit fit = fit_fused_backward(rows, c.nvlink_store_Bps);
  EXPECT_NEAR(fit.costs.backward_expand_factor, 0.9, 1e-4);
  EXPECT_NEAR(fit.costs.backward_store_Bps, 2e12, 2e12 * 1e-3);
  EXPECT_NEAR(fit.costs.backward_finish_s, 9e-6, 1e-9);
  EXPECT_NEAR(fit.costs.backward_owner_step_s, 5e-6, 1e-9);
  EXPECT_NEAR(fit.costs.backward_arrival_Bps, 2e11, 2e11 * 1e-3);
  EXPECT_LT(fit.relative_rms, 1e-3);
  ASSERT_EQ(fit.params.size(), 5u);
  for (const auto& [key, v] : fit.params) {
    EXPECT_EQ(v.source.kind, sim::SourceKind::Measured) << key;
    EXPECT_NE(v.source.citation.find("synthetic.csv"), std::string::npos) << key;
  }
}

// A finish the rows say is negative is held at 0 and the rest refitted.
TEST(FitFusedBackward, NegativeUnknownIsHeldAtZero) {
  const sim::FusedCosts c = known_backward();
  std::vector<FusedRow> rows = exact_backward_rows(c);
  for (FusedRow& r : rows) r.fused_s -= 9e-6 + 2e-6;
  const FusedBackwardFit fit = fit_fused_backward(rows, c.nvlink_store_Bps);
  EXPECT_EQ(fit.costs.backward_finish_s, 0);
  EXPECT_GT(fit.costs.backward_expand_factor, 0);
  EXPECT_GE(fit.costs.backward_owner_step_s, 0);
}

TEST(FitFusedBackward, RefusesRowsThatCannotDetermineIt) {
  std::vector<FusedRow> rows = exact_backward_rows(known_backward());
  rows.resize(4);
  EXPECT_THROW(fit_fused_backward(rows), config::ConfigError);
  EXPECT_THROW(fit_fused_backward(exact_rows(known())), config::ConfigError);
  EXPECT_THROW(fit_fused(exact_backward_rows(known_backward())), config::ConfigError);
}

// The kernel's own push schedule: spread with one push warp from 1 MiB a table block at 3+
// ranks (B x dim x 2 bytes: 4096 samples a rank at dim 128 in bf16).
TEST(FitFusedBackward, CommittedPushSchedule) {
  EXPECT_TRUE(backward_push_spread(4, 4096, 128, 2));
  EXPECT_FALSE(backward_push_spread(4, 4095, 128, 2));
  EXPECT_FALSE(backward_push_spread(2, 32768, 128, 2));
  EXPECT_TRUE(backward_push_spread(3, 2048, 128, 4));
}

// The committed kernel's rows: run 3's at 2 ranks (10) and at 4 ranks under 1 MiB a table
// block (6), run 4's spread rows with one push warp from 1 MiB (4).
TEST(FitFusedBackward, MeasuredRows) {
  const std::vector<FusedRow> rows =
      load_fused_backward_rows(OVERLAPSIM_SOURCE_DIR, fused_backward_measurement_files());
  ASSERT_EQ(rows.size(), 20u);
  const FusedBackwardFit fit = fit_fused_backward(rows);
  for (const auto& [key, v] : fit.params)
    std::printf("%-24s %.6g  (fit error %.2f%%)\n  %s\n", key.c_str(), v.value,
                100 * v.source.fit_error, v.source.citation.c_str());
  std::printf("all rows: relative RMS %.2f%%\n", 100 * fit.relative_rms);
  EXPECT_LT(fit.relative_rms, 0.05);
  for (const FusedRow& r : rows) {
    EXPECT_GT(r.sequential_own_s, 0) << r.where;
    EXPECT_GT(r.collective_s, 0) << r.where;
  }
}

TEST(FitFused, MissingFileIsAConfigError) {
  EXPECT_THROW(load_fused_rows(OVERLAPSIM_SOURCE_DIR, {"no/such/file.csv"}), config::ConfigError);
  EXPECT_THROW(load_fused_backward_rows(OVERLAPSIM_SOURCE_DIR, {{"no/such/file.csv", false}}),
               config::ConfigError);
}

// Every shipped profile's designs.fused is the fit of the shipped measurements: measured
// on H100 and H200 (the same GH100 SMs and NVLink), assumed on A100 (not measured there).
TEST(FitFused, ShippedProfilesCarryTheFit) {
  const std::vector<FusedRow> rows =
      load_fused_rows(OVERLAPSIM_SOURCE_DIR, fused_measurement_files());
  // 20 embedding, 32 GEMV (one left out: wrong = 4, against NCCL's 4-rank rounding), 4 GEMM.
  ASSERT_EQ(rows.size(), 20u + 31u + 4u);
  const FusedFit fit = fit_fused(rows);
  for (const auto& [key, v] : fit.params)
    std::printf("%-32s %.6g  (fit error %.2f%%)\n  %s\n", key.c_str(), v.value,
                100 * v.source.fit_error, v.source.citation.c_str());
  std::printf("all rows: relative RMS %.2f%%\n", 100 * fit.relative_rms);
  EXPECT_LT(fit.relative_rms, 0.10);
  // The embedding backward's keys, fitted from its own rows, sit beside them.
  std::map<std::string, sim::Sourced> fitted = fit.params;
  for (const auto& [key, v] :
       fit_fused_backward(
           load_fused_backward_rows(OVERLAPSIM_SOURCE_DIR, fused_backward_measurement_files()))
           .params)
    fitted[key] = v;
  namespace fs = std::filesystem;
  int profiles = 0;
  for (const auto& e :
       fs::directory_iterator(fs::path(OVERLAPSIM_SOURCE_DIR) / "calibration/profiles")) {
    if (e.path().extension() != ".yaml") continue;
    const sim::Profile p = sim::load_profile(e.path().string());
    auto it = p.designs.by_design.find("fused");
    if (it == p.designs.by_design.end()) continue;
    ++profiles;
    const bool a100 = e.path().filename().string().find("a100") != std::string::npos;
    EXPECT_EQ(it->second.size(), fitted.size() + 1) << e.path();
    // The NVLink rate per direction, from the datasheet: 450 GB/s (H100, H200), 300 (A100).
    const sim::Sourced* nvlink = p.designs.find("fused", "nvlink_store_Bps");
    ASSERT_NE(nvlink, nullptr) << e.path();
    EXPECT_EQ(nvlink->value, a100 ? 300e9 : 450e9) << e.path();
    EXPECT_EQ(nvlink->source.kind, sim::SourceKind::Datasheet) << e.path();
    for (const auto& [key, v] : fitted) {
      const sim::Sourced* s = p.designs.find("fused", key);
      ASSERT_NE(s, nullptr) << e.path() << ": designs.fused." << key;
      EXPECT_NEAR(s->value, v.value, 1e-9 * v.value) << e.path() << ": designs.fused." << key;
      EXPECT_EQ(s->source.kind, a100 ? sim::SourceKind::Assumed : sim::SourceKind::Measured)
          << e.path() << ": designs.fused." << key;
    }
  }
  EXPECT_GE(profiles, 8);
}

}  // namespace
}  // namespace overlapsim::calibration
