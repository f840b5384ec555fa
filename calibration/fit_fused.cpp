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
bool solve_rows(const std::vector<Vec>& f, const std::vector<double>& y,
                const std::vector<double>& w, const std::array<bool, kN>& free, Vec& x) {
  std::array<std::array<double, kN + 1>, kN> a{};
  for (std::size_t r = 0; r < f.size(); ++r) {
    for (int i = 0; i < kN; ++i) {
      if (!free[i]) continue;
      for (int j = 0; j < kN; ++j)
        if (free[j]) a[i][j] += w[r] * f[r][i] * f[r][j];
      a[i][kN] += w[r] * f[r][i] * y[r];
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

// Least squares with every unknown in `free` >= 0: one that comes out negative is fixed at
// 0 and the rest refitted. False when singular.
bool solve_nonnegative(const std::vector<Vec>& f, const std::vector<double>& y,
                       const std::vector<double>& w, std::array<bool, kN> free, Vec& x) {
  for (;;) {
    if (!solve_rows(f, y, w, free, x)) return false;
    int worst = -1;
    for (int i = 0; i < kN; ++i)
      if (free[i] && x[i] < 0 && (worst < 0 || x[i] < x[worst])) worst = i;
    if (worst < 0) return true;
    free[worst] = false;
  }
}

bool solve(const std::vector<FusedRow>& rows, const std::array<bool, kN>& free, Vec& x) {
  std::vector<Vec> f;
  std::vector<double> y, w;
  for (const FusedRow& r : rows) {
    f.push_back(features(r));
    y.push_back(r.fused_s - r.op_s);
    w.push_back(1 / (r.fused_s * r.fused_s));
  }
  return solve_rows(f, y, w, free, x);
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

// The backward's unknowns: the expansion factor, seconds per byte of the whole exchange,
// the finish, the push step per owner, seconds per pushed byte on arrival.
enum Backward { kExpand, kStore, kFinish, kStep, kArrival };

Vec backward_features(const FusedRow& r, bool arrival) {
  const double w = r.world, pushed = r.pushed_bytes();
  Vec f{};
  f[kFinish] = 1;
  if (arrival) {
    f[kExpand] = r.op_s / w;
    f[kStep] = w - 1;
    f[kArrival] = pushed;
  } else {
    f[kExpand] = r.op_s;
    f[kStore] = w * pushed;
  }
  return f;
}

double dot(const Vec& a, const Vec& b) {
  double s = 0;
  for (int i = 0; i < kN; ++i) s += a[i] * b[i];
  return s;
}

// True where the arrival bound is the larger under x (the finish is in both).
bool arrival_larger(const FusedRow& r, const Vec& x) {
  return dot(backward_features(r, true), x) > dot(backward_features(r, false), x);
}

double backward_objective(const std::vector<FusedRow>& rows, const Vec& x) {
  double s = 0;
  for (const FusedRow& r : rows) {
    const double pred =
        std::max(dot(backward_features(r, true), x), dot(backward_features(r, false), x));
    const double e = (pred - r.fused_s) / r.fused_s;
    s += e * e;
  }
  return s;
}

// One measurement file's rows, and the time of each correct row by (world, op, design,
// shape): a fused row's parts are the rows of the same shape under other ops and designs.
struct TimedRows {
  std::vector<Measurement> rows;
  using Key = std::tuple<int, std::string, std::string, std::int64_t, std::int64_t, std::int64_t>;
  std::map<Key, double> time;

  TimedRows(const std::string& root, const std::string& file) {
    const std::string path = (std::filesystem::path(root) / file).string();
    if (!std::filesystem::exists(path))
      throw config::ConfigError(
          fmt::format("{}: no such measurement file (expected an overlap-bench CSV)", path));
    rows = read_measurements(path);
    for (const Measurement& r : rows)
      if (r.wrong == 0) time[{r.world, r.op, r.design, r.m, r.n, r.k}] = r.time_s;
  }
  // The time of `op` under `design` at r's world and shape; 0 where none was measured.
  double at(const Measurement& r, const std::string& op, const std::string& design) const {
    auto it = time.find({r.world, op, design, r.m, r.n, r.k});
    return it == time.end() ? 0.0 : it->second;
  }
};

// The fused row `r` of `file`, with the times of its parts measured beside it: the op alone,
// the sequential pair and the collective alone (0 where one was not measured).
FusedRow fused_row(const Measurement& r, sim::FusedPair pair, const std::string& file, double op_s,
                   double sequential_own_s, double collective_s) {
  FusedRow f;
  f.pair = pair;
  f.where = fmt::format("{}:{}", file, r.line);
  f.world = r.world;
  f.m = r.m;
  f.n = r.n;
  f.k = r.k;
  f.comm_bytes = r.bytes;
  f.fused_s = r.time_s;
  f.op_s = op_s;
  f.sequential_own_s = sequential_own_s;
  f.collective_s = collective_s;
  return f;
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
    const TimedRows timed(root, file);
    for (const Measurement& r : timed.rows) {
      if (r.design != "fused" || r.wrong != 0) continue;
      for (const PairNames& p : kPairs) {
        if (r.op != p.pair_op) continue;
        const FusedRow f =
            fused_row(r, p.pair, file, timed.at(r, p.part_op, p.part_design),
                      timed.at(r, p.pair_op, "sequential_own"), timed.at(r, p.collective, "nccl"));
        if (f.op_s > 0 && f.fused_s > 0) out.push_back(f);
      }
    }
  }
  return out;
}

FusedFit fit_fused(const std::vector<FusedRow>& rows, double nvlink_store_Bps) {
  bool kinds[4] = {false, false, false, false};
  for (const FusedRow& r : rows) kinds[static_cast<int>(r.pair)] = true;
  if (kinds[static_cast<int>(FusedPair::EmbeddingBackward)])
    throw config::ConfigError(
        "fit_fused: an embedding backward row (fit those with fit_fused_backward)");
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

const std::vector<FusedBackwardFile>& fused_backward_measurement_files() {
  static const std::vector<FusedBackwardFile> files = {
      {"benchmarks/results/h100x4/embedding_alltoall_backward/run3/ours_w2.csv", false},
      {"benchmarks/results/h100x4/embedding_alltoall_backward/run3/ours_w4.csv", false},
      {"benchmarks/results/h100x4/embedding_alltoall_backward/run4/ours_w4_pw1_1.csv", true},
  };
  return files;
}

bool backward_push_spread(int world, std::int64_t local_batch, std::int64_t dim,
                          int element_bytes) {
  return world >= 3 && local_batch * dim * element_bytes >= (std::int64_t{1} << 20);
}

std::vector<FusedRow> load_fused_backward_rows(const std::string& root,
                                               const std::vector<FusedBackwardFile>& files) {
  std::vector<FusedRow> out;
  for (const FusedBackwardFile& file : files) {
    const TimedRows timed(root, file.path);
    for (const Measurement& r : timed.rows) {
      if (r.op != "alltoall+embedding_bag_backward" || r.design != "fused" || r.wrong != 0)
        continue;
      const int element_bytes = r.dtype == "fp32" ? 4 : 2;
      if (backward_push_spread(r.world, r.m, r.n, element_bytes) != file.spread) continue;
      const FusedRow f = fused_row(r, sim::FusedPair::EmbeddingBackward, file.path,
                                   timed.at(r, "embedding_bag_backward", "own"),
                                   timed.at(r, "alltoall+embedding_bag_backward", "sequential"),
                                   timed.at(r, "alltoall_backward", "nccl"));
      if (f.op_s > 0 && f.fused_s > 0) out.push_back(f);
    }
  }
  return out;
}

FusedBackwardFit fit_fused_backward(const std::vector<FusedRow>& rows, double nvlink_store_Bps) {
  for (const FusedRow& r : rows)
    if (r.pair != FusedPair::EmbeddingBackward || r.world < 2 || r.fused_s <= 0 || r.op_s <= 0)
      throw config::ConfigError(fmt::format(
          "fit_fused_backward: {}: expected an embedding backward row of 2+ ranks with its "
          "expansion alone",
          r.where));
  if (rows.size() < static_cast<std::size_t>(kN))
    throw config::ConfigError(
        fmt::format("fit_fused_backward: {} rows cannot determine the backward's {} parameters",
                    rows.size(), kN));
  // Starting splits: the first t rows by expansion time per pushed byte (the ones whose
  // exchange is long against their expansion) on the arrival bound.
  std::vector<std::size_t> order(rows.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return rows[a].op_s / rows[a].pushed_bytes() < rows[b].op_s / rows[b].pushed_bytes();
  });
  std::vector<double> y, w;
  for (const FusedRow& r : rows) {
    y.push_back(r.fused_s);
    w.push_back(1 / (r.fused_s * r.fused_s));
  }
  Vec best{};
  double best_objective = -1;
  for (std::size_t t = 0; t <= rows.size(); ++t) {
    std::vector<bool> arrival(rows.size(), false);
    for (std::size_t i = 0; i < t; ++i) arrival[order[i]] = true;
    for (int iteration = 0; iteration < 50; ++iteration) {
      std::vector<Vec> f;
      bool any_arrival = false, any_expansion = false;
      for (std::size_t i = 0; i < rows.size(); ++i) {
        f.push_back(backward_features(rows[i], arrival[i]));
        (arrival[i] ? any_arrival : any_expansion) = true;
      }
      // A bound no row is on leaves its own unknowns undetermined: held at 0.
      std::array<bool, kN> free{};
      free.fill(true);
      if (!any_arrival) free[kStep] = free[kArrival] = false;
      if (!any_expansion) free[kStore] = false;
      Vec x{};
      if (!solve_nonnegative(f, y, w, free, x) || x[kExpand] <= 0) break;
      const double objective = backward_objective(rows, x);
      if (best_objective < 0 || objective < best_objective - 1e-15) {
        best_objective = objective;
        best = x;
      }
      std::vector<bool> next(rows.size());
      for (std::size_t i = 0; i < rows.size(); ++i) next[i] = arrival_larger(rows[i], x);
      if (next == arrival) break;
      arrival = std::move(next);
    }
  }
  if (best_objective < 0)
    throw config::ConfigError("fit_fused_backward: the rows do not determine the parameters");

  FusedBackwardFit fit;
  sim::FusedCosts& c = fit.costs;
  c.nvlink_store_Bps = nvlink_store_Bps;
  c.has_backward = true;
  c.backward_expand_factor = rounded(best[kExpand]);
  // A zero cost per byte (clamped) is an infinite rate: the largest double keeps it finite.
  c.backward_store_Bps = best[kStore] > 0 ? rounded(1 / best[kStore]) : 1e300;
  c.backward_finish_s = rounded(best[kFinish]);
  c.backward_owner_step_s = rounded(best[kStep]);
  c.backward_arrival_Bps = best[kArrival] > 0 ? rounded(1 / best[kArrival]) : 1e300;
  double s = 0, s_arrival = 0, s_expansion = 0;
  int n_arrival = 0;
  for (const FusedRow& r : rows) {
    const sim::FusedTimes t = sim::fused_times(c, r.pair, r.op_s, r.pushed_bytes(), r.world);
    fit.predicted_s.push_back(t.total_s());
    fit.arrival_bound.push_back(t.arrival_bound);
    const double e = (t.total_s() - r.fused_s) / r.fused_s;
    s += e * e;
    (t.arrival_bound ? s_arrival : s_expansion) += e * e;
    n_arrival += t.arrival_bound ? 1 : 0;
  }
  const auto n = static_cast<double>(rows.size());
  fit.relative_rms = std::sqrt(s / n);
  const double rms_arrival = n_arrival ? std::sqrt(s_arrival / n_arrival) : 0;
  const double rms_expansion =
      n_arrival < static_cast<int>(rows.size()) ? std::sqrt(s_expansion / (n - n_arrival)) : 0;

  auto all = [](FusedPair) { return true; };
  const std::string how = fmt::format(
      "fused backward time = max(expansion, arrival) + finish (sim/overlap/fused_model.hpp), "
      "least squares on the relative error over {} fused rows of the committed push schedule, "
      "each beside its expansion alone ({} on the arrival bound; 4 x H100 at 2 and 4 ranks): ",
      rows.size(), n_arrival);
  auto put = [&](const char* key, double value, double error, const char* what) {
    sim::Sourced v;
    v.value = value;
    v.source = {sim::SourceKind::Measured, fmt::format("{}; {}{}", what, how, files_of(rows, all)),
                std::stod(fmt::format("{:.4g}", error))};
    fit.params[key] = v;
  };
  put("backward_expand_factor", c.backward_expand_factor, fit.relative_rms,
      "the fused expansion's time against the standalone expansion's (tiles claimed on demand, "
      "not split statically)");
  put("backward_store_Bps", c.backward_store_Bps, rms_expansion,
      "what the exchange costs the busiest owner's expansion per byte of the whole exchange "
      "(W x pushed), as a rate");
  put("backward_finish_s", c.backward_finish_s, fit.relative_rms,
      "after the last expansion: the grid's end and the last counters");
  put("backward_owner_step_s", c.backward_owner_step_s, rms_arrival,
      "a source's push step per owner (push warps' barrier, system fence, counter) before the "
      "last owner's rows land");
  put("backward_arrival_Bps", c.backward_arrival_Bps, rms_arrival,
      "a source's push rate while the rest of its grid expands (the last rows' arrival)");
  return fit;
}

}  // namespace overlapsim::calibration
