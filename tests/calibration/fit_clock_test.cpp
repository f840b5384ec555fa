// compute.idle_clock_boost: GEMMs timed inside pair loops run faster than back to back by
// 1 + boost * f, f the loop collective's share; the fit recovers a known boost from
// synthetic rows that follow that law exactly, and validate applies it to the pairs.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "calibration/fit.hpp"
#include "calibration/pair_loop.hpp"
#include "tests/calibration/calib_test_util.hpp"

namespace overlapsim::calibration {
namespace {

namespace fs = std::filesystem;
using namespace overlapsim::calibration::testing;

struct LoopShape {
  long m, n, k;
};

// One directory per test: ctest runs each test in its own process, in parallel.
fs::path clock_data(const Truth& t, double boost, const std::string& test) {
  const fs::path dir = fs::temp_directory_path() / ("overlapsim_fit_clock_test_" + test);
  fs::remove_all(dir);
  std::string header = kBenchHeader;
  header.pop_back();
  std::string csv = header + ",ctas,case\n";
  for (unsigned long long b = 4096; b <= (1ull << 30); b *= 4)
    csv += case_row("allreduce", "nccl", 0, 0, 0, b, allreduce_s(t, static_cast<double>(b)),
                    "collectives/allreduce/ctas0/4096..1073741824");
  for (long m : {1024, 4096})
    for (long n : {1024, 4096})
      for (long k : {1024, 8192})
        csv += case_row("gemm", "cublas", m, n, k, 0, gemm_s(t, m, n, k),
                        "gemm/gemm/cublas/1024x1024x1024..4096x4096x8192");
  const std::string loop = "designs/gemm+allreduce/sequential/1024x4096x8192..4096x4096x1024";
  for (const LoopShape s : {LoopShape{1024, 4096, 8192}, LoopShape{4096, 4096, 8192},
                            LoopShape{4096, 1024, 1024}, LoopShape{4096, 4096, 1024}}) {
    const auto bytes = static_cast<unsigned long long>(s.m * s.n * 2);
    const double g = gemm_s(t, s.m, s.n, s.k), c = allreduce_s(t, static_cast<double>(bytes));
    const double fast_g = g / (1 + boost * c / (g + c));
    csv += case_row("gemm", "cublas", s.m, s.n, s.k, 0, fast_g, loop);
    csv += case_row("allreduce", "nccl", s.m, s.n, s.k, bytes, c, loop);
    csv += case_row("gemm+allreduce", "sequential", s.m, s.n, s.k, bytes, fast_g + c, loop);
  }
  write_text(dir / "manifest.yaml", manifest_yaml("NVIDIA H200", {"bench.csv"}));
  write_text(dir / "bench.csv", csv);
  return dir;
}

TEST(FitIdleClockBoost, RecoversTheBoostPerIdleFraction) {
  const Truth t;
  const double boost = 0.4;
  const FitResult r = fit_profile(clock_data(t, boost, "recover").string());
  ASSERT_TRUE(r.profile.compute.idle_clock_boost.has_value());
  EXPECT_NEAR(r.profile.compute.idle_clock_boost->value, boost, 0.01 * boost);
  EXPECT_LT(r.profile.compute.idle_clock_boost->source.fit_error, 0.01);
  EXPECT_EQ(r.profile.compute.idle_clock_boost->source.kind, sim::SourceKind::Measured);
  EXPECT_NEAR(r.profile.compute.clock_speedup(0.25), 1 + 0.25 * boost, 0.01);
  EXPECT_EQ(r.profile.compute.clock_speedup(2.0), r.profile.compute.clock_speedup(1.0));
}

TEST(FitIdleClockBoost, LoopCollectiveFoundByCaseAndShape) {
  const Truth t;
  const fs::path dir = clock_data(t, 0.4, "loops");
  const FitResult r = fit_profile(dir.string());
  const auto rows = read_measurements((dir / "bench.csv").string());
  const PairLoops loops(rows);
  int in_loop = 0;
  for (const Measurement& m : rows) {
    const auto loop = loops.of(m);
    if (m.op == "gemm" && m.case_key.rfind("designs/", 0) == 0) {
      ASSERT_TRUE(loop.has_value()) << m.where();
      EXPECT_EQ(loop->collective, "allreduce");
      EXPECT_EQ(loop->bytes, static_cast<std::uint64_t>(m.m * m.n * 2));
      const double g = gemm_s(t, m.m, m.n, m.k),
                   c = allreduce_s(t, static_cast<double>(loop->bytes));
      EXPECT_NEAR(loop_idle_fraction(r.profile, m, *loop), c / (g + c), 0.01 * c / (g + c));
      ++in_loop;
    }
    if (m.op == "gemm" && m.case_key.rfind("gemm/", 0) == 0) EXPECT_FALSE(loop.has_value());
  }
  EXPECT_EQ(in_loop, 4);
}


// The tile-wise runner's own rows in a pair case run in loops of their own: its own GEMMs
// back to back, its CTA-limited NCCL and peer copies alone. Only the pair loop's parts get
// the loop's clock.
TEST(FitIdleClockBoost, TilewiseRunnersOwnRowsAreNotInThePairLoop) {
  const std::string key = "tilewise/gemm+allreduce/sequential+tilewise/8192x8192x4096";
  Measurement m;
  m.case_key = key;
  m.op = "gemm";
  for (const char* design : {"own", "own_interleaved", "own_signal", "own_signal_ce"}) {
    m.design = design;
    EXPECT_FALSE(measured_in_pair_loop(m)) << design;
  }
  m.design = "cublas";
  EXPECT_TRUE(measured_in_pair_loop(m));
  m.op = "allreduce";
  m.design = "nccl";
  EXPECT_TRUE(measured_in_pair_loop(m));
  m.design = "nccl_tilewise";
  EXPECT_FALSE(measured_in_pair_loop(m));
  m.op = "peer_copy";
  m.design = "copy_engine";
  EXPECT_FALSE(measured_in_pair_loop(m));
}

}  // namespace
}  // namespace overlapsim::calibration
