#pragma once
// Synthetic calibration data for the calibration tests: a data directory whose rows
// follow known alpha-beta bands, GEMM rates and overheads exactly, so fits can be checked
// against closed forms.
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace overlapsim::calibration::testing {

inline constexpr const char* kBenchHeader =
    "gpu,driver,cuda,nccl,world,op,design,dtype,m,n,k,bytes,chunks,time_us,time_min_us,"
    "time_max_us,tflops,algbw_GBps,busbw_GBps,wrong\n";

inline std::string bench_row(const std::string& op, const std::string& design, long m, long n,
                             long k, unsigned long long bytes, int chunks, double time_s,
                             const std::string& gpu = "NVIDIA H200", int world = 2) {
  return fmt::format(
      "{},580.159.04,13.0,2.28.3,{},{},{},bf16,{},{},{},{},{},{:.6f},{:.6f},{:.6f},0,0,0,0\n", gpu,
      world, op, design, m, n, k, bytes, chunks, time_s * 1e6, time_s * 1e6 * 0.99,
      time_s * 1e6 * 1.02);
}

// A calibrate row: bench_row plus the ctas (0) and case columns calibrate writes.
inline std::string case_row(const std::string& op, const std::string& design, long m, long n,
                            long k, unsigned long long bytes, double time_s,
                            const std::string& case_key) {
  std::string row = bench_row(op, design, m, n, k, bytes, 1, time_s);
  row.pop_back();  // the newline
  return row + ",0," + case_key + "\n";
}

inline void write_text(const std::filesystem::path& p, const std::string& text) {
  std::filesystem::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

inline std::string manifest_yaml(const std::string& gpu, const std::vector<std::string>& files,
                                 const std::string& heldout = "") {
  std::string s = fmt::format(
      "format: 1\ngpu: \"{}\"\ngpus: 2\ndriver: \"580.159.04\"\ncuda: \"13.0\"\nnccl: "
      "\"2.28.3\"\nhost: test\ndate: \"2026-01-01\"\nfiles:\n",
      gpu);
  for (const auto& f : files)
    s += fmt::format("  - {{path: \"{}\", gpus: 2, origin: synthetic}}\n", f);
  if (!heldout.empty()) s += fmt::format("heldout: \"{}\"\n", heldout);
  return s;
}

// Known ground truth of the synthetic data.
struct Truth {
  // allreduce on 2 GPUs (busbw factor 1): two bands split between 1 MiB and 4 MiB.
  double alpha1_s = 10e-6, busbw1_Bps = 50e9;
  double alpha2_s = 30e-6, busbw2_Bps = 300e9;
  double launch_s = 1.03e-6;                         // datasheet-h200.yaml's launch_overhead_s
  double rate(double m, double n, double k) const {  // GEMM FLOP/s, varies over the grid
    return 5e14 + 1e13 * (m / 1024.0) + 2e13 * (n / 1024.0) - 1e13 * (k / 1024.0) / 8;
  }
  double per_chunk_overhead_s = 5e-6;
};

inline double allreduce_s(const Truth& t, double bytes) {
  return bytes <= 1048576 ? t.alpha1_s + bytes / t.busbw1_Bps : t.alpha2_s + bytes / t.busbw2_Bps;
}

inline double gemm_s(const Truth& t, long m, long n, long k) {
  return 2.0 * m * n * k / t.rate(m, n, k) + t.launch_s;
}

// Rows: allreduce at 4 KiB .. 1 GiB (x4), GEMMs on a 2x2x2 grid, decomposed
// gemm+allreduce rows at k = 2, 4 on the grid's largest shape.
inline std::string synthetic_csv(const Truth& t, const std::string& gpu = "NVIDIA H200") {
  std::string csv = kBenchHeader;
  for (unsigned long long b = 4096; b <= (1ull << 30); b *= 4)
    csv +=
        bench_row("allreduce", "nccl", 0, 0, 0, b, 1, allreduce_s(t, static_cast<double>(b)), gpu);
  for (long m : {1024, 4096})
    for (long n : {1024, 4096})
      for (long k : {1024, 8192})
        csv += bench_row("gemm", "cublas", m, n, k, 0, 1, gemm_s(t, m, n, k), gpu);
  const long m = 4096, n = 4096, k = 8192;
  const unsigned long long bytes = static_cast<unsigned long long>(m * n * 2);
  const double t_op = gemm_s(t, m, n, k), t_coll = allreduce_s(t, static_cast<double>(bytes));
  csv += bench_row("allreduce", "nccl", m, n, k, bytes, 1, t_coll, gpu);
  for (int c : {2, 4}) {
    const double g = t_op / c, x = t_coll / c;
    const double time = g + x + (c - 1) * std::max(g, x) + c * t.per_chunk_overhead_s;
    csv += bench_row("gemm+allreduce", "decomposed", m, n, k, bytes, c, time, gpu);
  }
  return csv;
}

}  // namespace overlapsim::calibration::testing
