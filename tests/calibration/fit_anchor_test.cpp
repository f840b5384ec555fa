// Tables carried from the base for input types the data did not measure are brought to
// the data's machine: a run whose bf16 GEMMs take exactly 1.1x the base's bf16 table gets
// the base's fp16 and fp8 tables (and its own GEMM's, by the cuBLAS ratio when the own
// GEMM has no type in common) at rates / 1.1, and says so in their citations.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>

#include "calibration/fit.hpp"
#include "sim/profile/profile_load.hpp"
#include "sim/profile/gemm_table.hpp"
#include "tests/calibration/calib_test_util.hpp"

namespace overlapsim::calibration {
namespace {

namespace fs = std::filesystem;
using namespace overlapsim::calibration::testing;

constexpr const char* kBase = "calibration/profiles/h200-1gpu.yaml";  // bf16, fp16, fp8 tables

fs::path write_run(const std::string& name, double slower) {
  const sim::Profile base = sim::load_profile(kBase);
  const sim::GemmTable& bf16 = base.compute.gemm_tables.at(sim::Precision::BF16);
  const double launch_s = base.compute.launch_overhead_s.value;
  std::string csv = kBenchHeader;
  for (long m : {1024, 4096, 16384})
    for (long n : {2048, 8192})
      for (long k : {1024, 4096, 16384})
        csv += bench_row("gemm", "cublas", m, n, k, 0, 1,
                         launch_s + slower * bf16.compute_s(m, n, k));
  const fs::path dir = fs::temp_directory_path() / ("overlapsim_fit_anchor_" + name);
  fs::remove_all(dir);
  write_text(dir / "rows.csv", csv);
  write_text(dir / "manifest.yaml", manifest_yaml("NVIDIA H200", {"rows.csv"}));
  return dir;
}

double rate(const sim::GemmTable& t) { return t.rate_flops_per_s(8192, 7168, 2048); }

TEST(AnchorCarriedGemmTables, CarriedTypesTakeTheMeasuredTypesSlowdown) {
  FitOptions o;
  o.base_profile = kBase;
  const FitResult r = fit_profile(write_run("slow", 1.1).string(), o);
  const sim::Profile base = sim::load_profile(kBase);
  const auto& fitted = r.profile.compute;
  for (auto prec : {sim::Precision::FP16, sim::Precision::FP8}) {
    const sim::GemmTable& carried = fitted.gemm_tables.at(prec);
    EXPECT_NEAR(rate(carried), rate(base.compute.gemm_tables.at(prec)) / 1.1,
                1e-9 * rate(carried))
        << sim::to_string(prec);
    EXPECT_NE(carried.source.citation.find("rates / 1.1: this run's cublas GEMMs took 1.1 x"),
              std::string::npos)
        << carried.source.citation;
    EXPECT_NE(carried.source.citation.find("rows.csv:2-19"), std::string::npos)
        << carried.source.citation;
  }
  // The own GEMM measured no type the base has: the cuBLAS ratio, said so.
  const sim::GemmTable& own = fitted.own_gemm_tables.at(sim::Precision::FP16);
  EXPECT_NEAR(rate(own), rate(base.compute.own_gemm_tables.at(sim::Precision::FP16)) / 1.1,
              1e-9 * rate(own));
  EXPECT_NE(own.source.citation.find("the cuBLAS ratio"), std::string::npos);
  // The measured type is refitted from the rows, not scaled.
  EXPECT_EQ(fitted.gemm_tables.at(sim::Precision::BF16).source.citation.find("rates /"),
            std::string::npos);
}

// compute.fp8_block_scaling_time_factor: the geometric mean of block-scaled / per-tensor
// kernel times over the shapes timed both ways (1.2 and 1.05 here), cited, written and
// read back; carried down the chain like any measured number.
TEST(FitFp8BlockScaling, GeometricMeanOfTheShapesRatios) {
  const double launch_s = sim::load_profile(kBase).compute.launch_overhead_s.value;
  std::string csv = kBenchHeader;
  const auto row = [&](const std::string& design, long m, double kernel_s) {
    std::string r = bench_row("gemm", design, m, 4096, 4096, 0, 1, launch_s + kernel_s);
    return r.replace(r.find(",bf16,"), 6, ",fp8,");
  };
  csv += row("cublas", 1024, 100e-6) + row("cublas_block128", 1024, 120e-6);
  csv += row("cublas", 2048, 200e-6) + row("cublas_block128", 2048, 210e-6);
  const fs::path dir = fs::temp_directory_path() / "overlapsim_fit_fp8_block";
  fs::remove_all(dir);
  write_text(dir / "rows.csv", csv);
  write_text(dir / "manifest.yaml", manifest_yaml("NVIDIA H200", {"rows.csv"}));
  FitOptions o;
  o.base_profile = kBase;
  const FitResult r = fit_profile(dir.string(), o);
  ASSERT_TRUE(r.profile.compute.fp8_block_scaling_time_factor);
  const sim::Sourced& f = *r.profile.compute.fp8_block_scaling_time_factor;
  EXPECT_NEAR(f.value, std::sqrt(1.2 * 1.05), 6e-4);  // written to 4 significant digits
  EXPECT_EQ(f.source.kind, sim::SourceKind::Measured);
  EXPECT_NE(f.source.citation.find("rows.csv:2-5"), std::string::npos) << f.source.citation;
  EXPECT_NE(r.yaml.find("fp8_block_scaling_time_factor:"), std::string::npos);
  // The shipped 1-GPU profile has it measured; the 8-GPU one carries it.
  const sim::Profile eight = sim::load_profile("calibration/profiles/h200-nvswitch-8gpu.yaml");
  ASSERT_TRUE(eight.compute.fp8_block_scaling_time_factor);
  EXPECT_NE(eight.compute.fp8_block_scaling_time_factor->source.citation.find("[carried from"),
            std::string::npos);
}

TEST(AnchorCarriedGemmTables, SameSpeedLeavesCarriedTablesAsTheyWere) {
  FitOptions o;
  o.base_profile = kBase;
  const FitResult r = fit_profile(write_run("same", 1.0).string(), o);
  const sim::Profile base = sim::load_profile(kBase);
  EXPECT_NEAR(rate(r.profile.compute.gemm_tables.at(sim::Precision::FP8)),
              rate(base.compute.gemm_tables.at(sim::Precision::FP8)), 1e-9 * 1e15);
}

TEST(AnchorCarriedGemmTables, NothingToAnchorOnADatasheetBase) {
  const FitResult r = fit_profile(write_run("datasheet", 1.1).string());  // datasheet-h200
  EXPECT_EQ(r.profile.compute.gemm_tables.count(sim::Precision::FP8), 0u);
  for (const auto& note : r.notes) EXPECT_EQ(note.find("carried, rates"), std::string::npos);
}

}  // namespace
}  // namespace overlapsim::calibration
