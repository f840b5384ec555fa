// compute.concurrent_comm_slowdown: how much slower a vendor GEMM runs while NCCL moves data
// beside it on NCCL's default CTAs, the factor by which the executor slows any compute op
// that runs beside its rank's communication (docs/simulate.md, "Executor semantics"). From
// overlap-bench's interference rows (kernels/bench/interference_runner.hpp): a burst of
// GEMMs alone and the same burst while collectives run back to back on the comm stream, in
// one loop of rounds; the median of beside / alone over every GEMM shape, collective and
// size measured at the default CTA limit (chunks 0).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>
#include <vector>

#include "calibration/fit.hpp"

namespace overlapsim::calibration {

void fit_concurrent_comm_slowdown(const FitData& data, FitOutput& out) {
  using Key = std::tuple<std::string, std::int64_t, std::int64_t, std::int64_t, std::uint64_t>;
  struct Pair {
    const Measurement* alone = nullptr;
    const Measurement* beside = nullptr;
  };
  std::map<Key, Pair> pairs;
  for (const auto& r : data.rows) {
    if (r.op != "interference" || r.chunks != 0 || r.design.rfind("gemm|", 0) != 0) continue;
    const auto colon = r.design.find(':');
    if (colon == std::string::npos) continue;
    const std::string other = r.design.substr(5, colon - 5);
    const std::string how = r.design.substr(colon + 1);
    Pair& p = pairs[Key{other, r.m, r.n, r.k, r.bytes}];
    if (how == "alone") p.alone = &r;
    if (how == "beside") p.beside = &r;
  }
  std::vector<double> ratios;
  std::vector<const Measurement*> rows;
  for (const auto& [key, p] : pairs)
    if (p.alone && p.beside && p.alone->time_s > 0) {
      ratios.push_back(p.beside->time_s / p.alone->time_s);
      rows.push_back(p.alone);
      rows.push_back(p.beside);
    }
  constexpr std::size_t kMinPairs = 3;
  if (ratios.size() < kMinPairs) return;
  std::vector<double> sorted = ratios;
  std::sort(sorted.begin(), sorted.end());
  const std::size_t n = sorted.size();
  const double median = n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
  // A GEMM never runs faster for NCCL beside it: a median below 1 is noise, charged as none.
  const double slowdown = rounded(std::max(1.0, median), 4);
  // The fit's error: the median absolute relative deviation of the ratios from it.
  std::vector<double> dev;
  for (double r : ratios) dev.push_back(std::abs(r - slowdown) / r);
  std::sort(dev.begin(), dev.end());
  const double spread = dev[dev.size() / 2];
  out.profile.compute.concurrent_comm_slowdown = measured_value(
      slowdown,
      "overlap-bench interference rows, a cuBLAS GEMM burst beside back-to-back NCCL "
      "collectives on NCCL's default CTAs over the same burst alone, median of " +
          std::to_string(ratios.size()) + " pairs: " + cite_rows(data.label, rows),
      spread);
  out.comments["compute.concurrent_comm_slowdown"] = fmt::format(
      "Median over {} (GEMM shape, collective, size) pairs of the GEMM burst's time beside\n"
      "NCCL on its default CTAs / alone (ratios {:.3f} .. {:.3f}): the executor slows compute\n"
      "by this factor while its rank's communication moves data (docs/calibration.md).",
      ratios.size(), sorted.front(), sorted.back());
  out.notes.push_back(fmt::format(
      "compute.concurrent_comm_slowdown: {:.4g} from {} pairs (ratios {:.3f} .. {:.3f}), median "
      "deviation {:.1f}%",
      slowdown, ratios.size(), sorted.front(), sorted.back(), 100 * spread));
}

}  // namespace overlapsim::calibration
