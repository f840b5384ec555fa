// The interference stage of the fit on synthetic overlap-bench --op interference rows with
// known slowdowns: the curves recover them (x = CTAs for the GEMM, (SMs - c) / SMs for each
// collective), c = 0 stays out of the curves, a median below 1 is written as 1, output is
// byte-identical and loads back, and bad rows give errors naming the row.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "calibration/fit.hpp"
#include "config/error.hpp"
#include "tests/calibration/calib_test_util.hpp"

namespace overlapsim::calibration {
namespace {

namespace fs = std::filesystem;
using namespace overlapsim::calibration::testing;

constexpr int kSms = 132;  // datasheet-h200.yaml device.sms
const int kCtas[] = {4, 8, 16, 32};

double gemm_slowdown(int c) { return 1.0 + 0.004 * c; }
double coll_slowdown(const std::string& coll, int c) {
  return coll == "allreduce" ? 1.5 - 0.01 * c : 1.3 - 0.005 * c;
}

// Per victim and x, four (shape, size) pairs whose ratios are s * {0.98, 1, 1, 1.02}:
// median s, relative RMS 0.02 / sqrt(2).
std::string interference_rows() {
  std::string csv;
  const double spread[] = {0.98, 1.0, 1.0, 1.02};
  for (const std::string coll : {"allreduce", "alltoall"})
    for (int c : {4, 8, 16, 32, 0}) {
      int i = 0;
      for (long m : {4096L, 8192L})
        for (unsigned long long bytes : {8ull << 20, 32ull << 20}) {
          const double g = c > 0 ? gemm_slowdown(c) : 1.07;
          const double s = c > 0 ? coll_slowdown(coll, c) : 1.2;
          const double tg = 1e-3 * m / 4096, tc = 1e-4 * static_cast<double>(bytes >> 20) / 8;
          csv += bench_row("interference", "gemm|" + coll + ":alone", m, 8192, 4096, bytes, c, tg);
          csv += bench_row("interference", "gemm|" + coll + ":beside", m, 8192, 4096, bytes, c,
                           tg * g * spread[i]);
          csv += bench_row("interference", coll + "|gemm:alone", m, 8192, 4096, bytes, c, tc);
          csv += bench_row("interference", coll + "|gemm:beside", m, 8192, 4096, bytes, c,
                           tc * s * spread[i]);
          ++i;
        }
    }
  // reducescatter measured no slower beside the GEMM (0.97): written as 1.
  csv += bench_row("interference", "reducescatter|gemm:alone", 4096, 8192, 4096, 8 << 20, 8, 1e-4);
  csv +=
      bench_row("interference", "reducescatter|gemm:beside", 4096, 8192, 4096, 8 << 20, 8, 0.97e-4);
  return csv;
}

fs::path data_dir(const std::string& name, const std::string& extra_rows) {
  const fs::path dir = fs::temp_directory_path() / ("overlapsim_fit_interference_test_" + name);
  fs::remove_all(dir);
  write_text(dir / "manifest.yaml", manifest_yaml("NVIDIA H200", {"bench.csv"}));
  write_text(dir / "bench.csv", synthetic_csv(Truth{}) + extra_rows);
  return dir;
}

const sim::InterferenceCurve* find(const std::vector<sim::InterferenceCurve>& list,
                                   const std::string& victim) {
  for (const auto& c : list)
    if (c.victim == victim) return &c;
  return nullptr;
}

TEST(FitInterference, RecoversKnownSlowdowns) {
  const FitResult r = fit_profile(data_dir("recover", interference_rows()).string());
  const auto& i = r.profile.interference;
  ASSERT_EQ(i.compute_under_comm.size(), 1u);
  const sim::InterferenceCurve& g = i.compute_under_comm[0];
  EXPECT_EQ(g.victim, "gemm");
  ASSERT_EQ(g.points.size(), 4u);  // c = 0 is not a point
  for (std::size_t p = 0; p < 4; ++p) {
    EXPECT_DOUBLE_EQ(g.points[p].first, kCtas[p]);
    EXPECT_NEAR(g.points[p].second, gemm_slowdown(kCtas[p]), 1e-4);
  }
  EXPECT_EQ(g.source.kind, sim::SourceKind::Measured);
  EXPECT_NEAR(g.source.fit_error, 0.02 / std::sqrt(2.0), 2e-4);
  EXPECT_NE(g.source.citation.find("bench.csv:"), std::string::npos) << g.source.citation;
  EXPECT_NEAR(i.compute_slowdown("gemm", 12), 0.5 * (gemm_slowdown(8) + gemm_slowdown(16)), 1e-4);

  for (const std::string coll : {"allreduce", "alltoall"}) {
    const sim::InterferenceCurve* c = find(i.comm_under_compute, coll);
    ASSERT_NE(c, nullptr) << coll;
    ASSERT_EQ(c->points.size(), 4u);
    // x ascending = CTA limit descending.
    for (std::size_t p = 0; p < 4; ++p) {
      const int ctas = kCtas[3 - p];
      EXPECT_NEAR(c->points[p].first, static_cast<double>(kSms - ctas) / kSms, 1e-6);
      EXPECT_NEAR(c->points[p].second, coll_slowdown(coll, ctas), 1e-4) << coll << " c=" << ctas;
    }
    EXPECT_NEAR(i.comm_slowdown(coll, (kSms - 16.0) / kSms), coll_slowdown(coll, 16), 1e-4);
  }
  const sim::InterferenceCurve* rs = find(i.comm_under_compute, "reducescatter");
  ASSERT_NE(rs, nullptr);
  ASSERT_EQ(rs->points.size(), 1u);
  EXPECT_DOUBLE_EQ(rs->points[0].second, 1.0);

  std::string notes;
  for (const auto& n : r.notes) notes += n + "\n";
  EXPECT_NE(notes.find("below 1: written as 1"), std::string::npos) << notes;
  EXPECT_NE(notes.find("gemm: NCCL default config (c = 0"), std::string::npos) << notes;
  EXPECT_NE(notes.find("median slowdown 1.0700"), std::string::npos) << notes;
  // The header no longer says interference is unknown; the comment says what x is.
  EXPECT_EQ(r.yaml.find("interference between concurrent compute"), std::string::npos);
  EXPECT_NE(r.yaml.find("# gemm: x = NCCL CTAs beside"), std::string::npos);
}

TEST(FitInterference, ByteIdenticalAndWithoutRowsEmpty) {
  const fs::path dir = data_dir("determinism", interference_rows());
  EXPECT_EQ(fit_profile(dir.string()).yaml, fit_profile(dir.string()).yaml);
  const FitResult none = fit_profile(data_dir("none", "").string());
  EXPECT_TRUE(none.profile.interference.compute_under_comm.empty());
  EXPECT_TRUE(none.profile.interference.comm_under_compute.empty());
  EXPECT_NE(none.yaml.find("interference between concurrent compute"), std::string::npos);
}

TEST(FitInterference, UnpairedRowsAreListedNotUsed) {
  const std::string rows =
      bench_row("interference", "gemm|allreduce:alone", 4096, 8192, 4096, 8 << 20, 8, 1e-3) +
      bench_row("interference", "gemm|allreduce:beside", 4096, 8192, 4096, 8 << 20, 8, 1.1e-3) +
      bench_row("interference", "gemm|allreduce:beside", 4096, 8192, 4096, 8 << 20, 16, 1.2e-3);
  const FitResult r = fit_profile(data_dir("unpaired", rows).string());
  ASSERT_EQ(r.profile.interference.compute_under_comm.size(), 1u);
  EXPECT_EQ(r.profile.interference.compute_under_comm[0].points.size(), 1u);
  bool listed = false;
  for (const auto& n : r.notes)
    listed = listed || n.find("without its alone row") != std::string::npos;
  EXPECT_TRUE(listed);
}

std::string error_of(const std::string& rows, const std::string& csv_header = "") {
  const fs::path dir = data_dir("error", rows);
  if (!csv_header.empty()) write_text(dir / "bench.csv", csv_header + rows);
  try {
    fit_profile(dir.string());
  } catch (const config::ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(FitInterference, BadDesignOrColumnsAreErrorsNamingTheRow) {
  const std::string base = synthetic_csv(Truth{});
  const int next_line = static_cast<int>(std::count(base.begin(), base.end(), '\n')) + 1;
  const std::string bad_half =
      error_of(bench_row("interference", "gemm|allreduce:during", 1, 1, 1, 8, 4, 1e-3));
  EXPECT_NE(bad_half.find("bench.csv:" + std::to_string(next_line)), std::string::npos) << bad_half;
  EXPECT_NE(bad_half.find("<victim>|<other>:<alone|beside>"), std::string::npos) << bad_half;
  const std::string bad_pair =
      error_of(bench_row("interference", "gemm|gemv:alone", 1, 1, 1, 8, 4, 1e-3));
  EXPECT_NE(bad_pair.find("gemm|<collective> or <collective>|gemm"), std::string::npos) << bad_pair;
  // A file without the chunks column (where the CTA limit lives) is refused by the reader.
  const std::string no_chunks = error_of(
      "NVIDIA H200,580.159.04,13.0,2.28.3,2,interference,gemm|allreduce:alone,bf16,1,1,1,8,"
      "10.0,9.0,11.0,0,0,0,0\n",
      "gpu,driver,cuda,nccl,world,op,design,dtype,m,n,k,bytes,time_us,time_min_us,time_max_us,"
      "tflops,algbw_GBps,busbw_GBps,wrong\n");
  EXPECT_NE(no_chunks.find("missing column 'chunks'"), std::string::npos) << no_chunks;
}

}  // namespace
}  // namespace overlapsim::calibration
