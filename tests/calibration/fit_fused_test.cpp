// The fused fit against closed forms (rows made from known costs come back), its refusal
// of rows that cannot determine it, and the shipped profiles against the fit of the
// shipped measurements.
#include "calibration/fit_fused.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
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

TEST(FitFused, MissingFileIsAConfigError) {
  EXPECT_THROW(load_fused_rows(OVERLAPSIM_SOURCE_DIR, {"no/such/file.csv"}), config::ConfigError);
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
    EXPECT_EQ(it->second.size(), fit.params.size() + 1) << e.path();
    // The NVLink rate per direction, from the datasheet: 450 GB/s (H100, H200), 300 (A100).
    const sim::Sourced* nvlink = p.designs.find("fused", "nvlink_store_Bps");
    ASSERT_NE(nvlink, nullptr) << e.path();
    EXPECT_EQ(nvlink->value, a100 ? 300e9 : 450e9) << e.path();
    EXPECT_EQ(nvlink->source.kind, sim::SourceKind::Datasheet) << e.path();
    for (const auto& [key, v] : fit.params) {
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
