#include "calibration/fit_fused.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <tuple>

#include "calibration/measurement.hpp"
#include "config/error.hpp"

namespace overlapsim::calibration {
namespace {

using sim::FusedPair;

struct PairNames {
  FusedPair pair;
  const char* pair_op;
  const char* part_op;
  const char* part_design;
  const char* collective;
};
constexpr std::array<PairNames, 3> kPairs = {{
    {FusedPair::EmbeddingAllToAll, "embedding+alltoall", "embedding_bag", "fused_local",
     "alltoall"},
    {FusedPair::GemvAllReduce, "gemv+allreduce", "gemv", "own", "allreduce"},
    {FusedPair::GemmAllToAll, "gemm+alltoall", "gemm", "own", "alltoall"},
}};

// Unknowns: memory-bound overhead fraction, memory-bound s/byte, GEMM s/byte, all-to-all
// finish, all-reduce finish.
constexpr int kN = 5;
using Vec = std::array<double, kN>;

Vec features(const FusedRow& r) {
  Vec f{};
  if (sim::memory_bound(r.pair)) {
    f[0] = r.op_s;
    f[1] = r.pushed_bytes();
  } else {
    f[2] = r.pushed_bytes();
  }
  (r.pair == FusedPair::GemvAllReduce ? f[4] : f[3]) = 1;
  return f;
}

// Weighted least squares over the unknowns in `free` (others 0): normal equations by
// Gaussian elimination with partial pivoting. False when singular.
bool solve(const std::vector<FusedRow>& rows, const std::array<bool, kN>& free, Vec& x) {
  std::array<std::array<double, kN + 1>, kN> a{};
  for (const FusedRow& r : rows) {
    const Vec f = features(r);
    const double w = 1 / (r.fused_s * r.fused_s), y = r.fused_s - r.op_s;
    for (int i = 0; i < kN; ++i) {
      if (!free[i]) continue;
      for (int j = 0; j < kN; ++j)
        if (free[j]) a[i][j] += w * f[i] * f[j];
      a[i][kN] += w * f[i] * y;
    }
  }
  // Scale each unknown to its diagonal so seconds and seconds per byte mix well.
  Vec scale{};
  for (int i = 0; i < kN; ++i) {
    if (!free[i]) {
      a[i][i] = 1;
      scale[i] = 1;
      continue;
    }
    if (a[i][i] <= 0) return false;
    scale[i] = 1 / std::sqrt(a[i][i]);
  }
  for (int i = 0; i < kN; ++i) {
    for (int j = 0; j < kN; ++j) a[i][j] *= scale[i] * scale[j];
    a[i][kN] *= scale[i];
  }
  for (int c = 0; c < kN; ++c) {
    int p = c;
    for (int i = c + 1; i < kN; ++i)
      if (std::abs(a[i][c]) > std::abs(a[p][c])) p = i;
    if (std::abs(a[p][c]) < 1e-12) return false;
    std::swap(a[c], a[p]);
    for (int i = 0; i < kN; ++i) {
      if (i == c) continue;
      const double m = a[i][c] / a[c][c];
      for (int j = c; j <= kN; ++j) a[i][j] -= m * a[c][j];
    }
  }
  for (int i = 0; i < kN; ++i) x[i] = free[i] ? a[i][kN] / a[i][i] * scale[i] : 0;
  return true;
}

double rounded(double v) { return std::stod(fmt::format("{:.4g}", v)); }

sim::FusedCosts costs_of(const Vec& x) {
  sim::FusedCosts c;
  c.memory_bound_overhead_fraction = rounded(x[0]);
  // A zero cost per byte (clamped) is an infinite rate: the largest double keeps it finite.
  c.memory_bound_store_Bps = x[1] > 0 ? rounded(1 / x[1]) : 1e300;
  c.gemm_store_Bps = x[2] > 0 ? rounded(1 / x[2]) : 1e300;
  c.alltoall_finish_s = rounded(x[3]);
  c.allreduce_finish_s = rounded(x[4]);
  return c;
}

double rms(const std::vector<FusedRow>& rows, const std::vector<double>& pred,
           bool (*use)(FusedPair)) {
  double s = 0;
  int n = 0;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (!use(rows[i].pair)) continue;
    const double e = (pred[i] - rows[i].fused_s) / rows[i].fused_s;
    s += e * e;
    ++n;
  }
  return n ? std::sqrt(s / n) : 0;
}

std::string files_of(const std::vector<FusedRow>& rows, bool (*use)(FusedPair)) {
  std::map<std::string, int> count;
  for (const FusedRow& r : rows)
    if (use(r.pair)) ++count[r.where.substr(0, r.where.rfind(':'))];
  std::string out;
  for (const auto& [file, n] : count)
    out += fmt::format("{}{} ({} rows)", out.empty() ? "" : ", ", file, n);
  return out;
}

}  // namespace

const std::vector<std::string>& fused_measurement_files() {
  static const std::vector<std::string> files = {
      "benchmarks/results/h100x4/embedding_alltoall/ours_w2.csv",
      "benchmarks/results/h100x4/embedding_alltoall/ours_w4.csv",
      "benchmarks/results/h100x4/fused_gemv_allreduce/run2/fused_tp2.csv",
      "benchmarks/results/h100x4/fused_gemv_allreduce/run2/fused_tp4.csv",
      "benchmarks/results/h100x2/gemm_alltoall/ours_w2.csv",
  };
  return files;
}

double FusedRow::pushed_bytes() const {
  return sim::fused_pushed_bytes(pair, static_cast<double>(comm_bytes), world);
}

std::vector<FusedRow> load_fused_rows(const std::string& root,
                                      const std::vector<std::string>& files) {
  std::vector<FusedRow> out;
  for (const std::string& file : files) {
    const std::string path = (std::filesystem::path(root) / file).string();
    if (!std::filesystem::exists(path))
      throw config::ConfigError(
          fmt::format("{}: no such measurement file (expected an overlap-bench CSV)", path));
    const std::vector<Measurement> rows = read_measurements(path);
    using Key = std::tuple<int, std::string, std::string, std::int64_t, std::int64_t, std::int64_t>;
    std::map<Key, double> time;
    for (const Measurement& r : rows)
      if (r.wrong == 0) time[{r.world, r.op, r.design, r.m, r.n, r.k}] = r.time_s;
    auto at = [&](const Measurement& r, const std::string& op, const std::string& design) {
      auto it = time.find({r.world, op, design, r.m, r.n, r.k});
      return it == time.end() ? 0.0 : it->second;
    };
    for (const Measurement& r : rows) {
      if (r.design != "fused" || r.wrong != 0) continue;
      for (const PairNames& p : kPairs) {
        if (r.op != p.pair_op) continue;
        FusedRow f;
        f.pair = p.pair;
        f.where = fmt::format("{}:{}", file, r.line);
        f.world = r.world;
        f.m = r.m;
        f.n = r.n;
        f.k = r.k;
        f.comm_bytes = r.bytes;
        f.fused_s = r.time_s;
        f.op_s = at(r, p.part_op, p.part_design);
        f.sequential_own_s = at(r, p.pair_op, "sequential_own");
        f.collective_s = at(r, p.collective, "nccl");
        if (f.op_s > 0 && f.fused_s > 0) out.push_back(f);
      }
    }
  }
  return out;
}

FusedFit fit_fused(const std::vector<FusedRow>& rows, double nvlink_store_Bps) {
  bool kinds[3] = {false, false, false};
  for (const FusedRow& r : rows) kinds[static_cast<int>(r.pair)] = true;
  if (!kinds[0] || !kinds[1] || !kinds[2])
    throw config::ConfigError(
        "fit_fused: the rows lack a pair kind (expected embedding+alltoall, gemv+allreduce and "
        "gemm+alltoall rows with their compute parts)");
  // Least squares; an unknown that comes out negative is fixed at 0 and the rest refitted.
  std::array<bool, kN> free{};
  free.fill(true);
  Vec x{};
  for (;;) {
    if (!solve(rows, free, x))
      throw config::ConfigError("fit_fused: the rows do not determine the fused parameters");
    int worst = -1;
    for (int i = 0; i < kN; ++i)
      if (free[i] && x[i] < 0 && (worst < 0 || x[i] < x[worst])) worst = i;
    if (worst < 0) break;
    free[worst] = false;
  }
  FusedFit fit;
  fit.costs = costs_of(x);
  fit.costs.nvlink_store_Bps = nvlink_store_Bps;
  double s = 0;
  for (const FusedRow& r : rows) {
    fit.predicted_s.push_back(
        sim::fused_times(fit.costs, r.pair, r.op_s, r.pushed_bytes()).total_s());
    const double e = (fit.predicted_s.back() - r.fused_s) / r.fused_s;
    s += e * e;
  }
  fit.relative_rms = std::sqrt(s / static_cast<double>(rows.size()));

  auto any = [](FusedPair) { return true; };
  auto mem = [](FusedPair p) { return sim::memory_bound(p); };
  auto gemm = [](FusedPair p) { return p == FusedPair::GemmAllToAll; };
  auto a2a = [](FusedPair p) { return p != FusedPair::GemvAllReduce; };
  auto ar = [](FusedPair p) { return p == FusedPair::GemvAllReduce; };
  const std::string how = fmt::format(
      "fused time = op (1 + f) + pushed bytes / rate + finish (sim/overlap/fused_model.hpp), "
      "one weighted least squares on the relative error over {} fused rows with their compute "
      "part measured alone (4 x H100 and 2 x H100): ",
      rows.size());
  auto put = [&](const char* key, double value, bool (*use)(FusedPair), const char* what) {
    sim::Sourced v;
    v.value = value;
    v.source = {sim::SourceKind::Measured, fmt::format("{}; {}{}", what, how, files_of(rows, use)),
                std::stod(fmt::format("{:.4g}", rms(rows, fit.predicted_s, use)))};
    fit.params[key] = v;
  };
  (void)any;
  put("memory_bound_overhead_fraction", fit.costs.memory_bound_overhead_fraction, mem,
      "an embedding or GEMV kernel's slowdown from storing its rows into peers");
  put("memory_bound_store_Bps", fit.costs.memory_bound_store_Bps, mem,
      "what a memory-bound kernel's NVLink stores cost it per byte, as a rate");
  put("gemm_store_Bps", fit.costs.gemm_store_Bps, gemm,
      "what the GEMM epilogue's NVLink stores cost it per byte, as a rate (they serialise with "
      "the tile's math)");
  put("alltoall_finish_s", fit.costs.alltoall_finish_s, a2a,
      "after the last store: a fence, the per-source counters, the receiver's poll");
  put("allreduce_finish_s", fit.costs.allreduce_finish_s, ar,
      "after the GEMV: its partials to the peers, flags, the last arriver's reduction");
  return fit;
}

}  // namespace overlapsim::calibration
