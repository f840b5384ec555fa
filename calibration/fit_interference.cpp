// Interference stage of the fit: overlap-bench `--op interference` rows (design
// "<victim>|<other>:<alone|beside>", chunks = the NCCL CTA limit c, 0 = NCCL's default
// config) -> the profile's interference curves.
//   compute_under_comm, victim gemm: x = c (NCCL CTAs running beside), slowdown = the
//     median over shapes, collectives and sizes of T_beside / T_alone of the GEMM.
//   comm_under_compute, victim = each collective: x = (SMs - c) / SMs, the share of the
//     SMs the GEMM holds while the collective's c CTAs run (cuBLAS launches on every SM;
//     the NCCL CTAs still get theirs, as the GEMM's CTAs retire and the comm stream's
//     higher priority wins the freed SMs), slowdown = the median of the collective's
//     T_beside / T_alone at that c.
// Rows at c = 0 are left out of the curves (NCCL's default CTA count is not in the data)
// and reported in the notes. A median below 1 (no measurable slowdown) is written as 1,
// the floor of the profile format, and said so. fit_error = the relative RMS of the curve
// point against the per-row ratios behind it.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "calibration/fit.hpp"
#include "config/error.hpp"

namespace overlapsim::calibration {
namespace {

struct Design {
  std::string victim, other;
  bool beside = false;
};

// "gemm|allreduce:beside" -> {gemm, allreduce, true}; throws naming the row otherwise.
Design parse_design(const Measurement& r) {
  const auto bar = r.design.find('|');
  const auto colon = r.design.rfind(':');
  const std::string half = colon == std::string::npos ? "" : r.design.substr(colon + 1);
  if (bar == std::string::npos || colon == std::string::npos || colon < bar ||
      (half != "alone" && half != "beside"))
    throw config::ConfigError(fmt::format(
        "{}:1: design: '{}' (expected <victim>|<other>:<alone|beside> for op interference, "
        "e.g. gemm|allreduce:beside)",
        r.where(), r.design));
  Design d{r.design.substr(0, bar), r.design.substr(bar + 1, colon - bar - 1), half == "beside"};
  const bool gemm_victim = d.victim == "gemm" && is_collective_op(d.other);
  const bool coll_victim = is_collective_op(d.victim) && d.other == "gemm";
  if (!gemm_victim && !coll_victim)
    throw config::ConfigError(
        fmt::format("{}:1: design: '{}' (expected gemm|<collective> or <collective>|gemm)",
                    r.where(), r.design));
  return d;
}

double rounded(double v, int digits) { return std::stod(fmt::format("{:.{}g}", v, digits)); }

// One alone/beside pair of rows: the same victim, other, shape, size and CTA limit.
using PointKey = std::tuple<std::string, std::string, std::int64_t, std::int64_t, std::int64_t,
                            std::uint64_t, int>;

struct Ratio {
  double value = 0;
  const Measurement* alone = nullptr;
  const Measurement* beside = nullptr;
};

struct Curve {
  std::map<int, std::vector<Ratio>> by_ctas;  // c -> ratios
};

}  // namespace

void fit_interference(const FitData& data, FitOutput& out) {
  std::map<PointKey, std::pair<const Measurement*, const Measurement*>> pairs;
  for (const Measurement& r : data.rows) {
    if (r.op != "interference") continue;
    const Design d = parse_design(r);
    if (r.chunks < 0)
      throw config::ConfigError(
          fmt::format("{}:1: chunks: {} (expected the NCCL CTA limit >= 0)", r.where(), r.chunks));
    auto& slot = pairs[{d.victim, d.other, r.m, r.n, r.k, r.bytes, r.chunks}];
    (d.beside ? slot.second : slot.first) = &r;
  }
  if (pairs.empty()) return;

  // victim -> curve; unpaired rows are listed, not used.
  std::map<std::string, Curve> curves;
  std::vector<std::string> unpaired;
  for (const auto& [key, rows] : pairs) {
    const auto& [victim, other, m, n, k, bytes, ctas] = key;
    if (rows.first == nullptr || rows.second == nullptr) {
      const Measurement* r = rows.first ? rows.first : rows.second;
      unpaired.push_back(fmt::format("{} ({} without its {} row)", r->where(), r->design,
                                     rows.first ? "beside" : "alone"));
      continue;
    }
    curves[victim].by_ctas[ctas].push_back(
        {rows.second->time_s / rows.first->time_s, rows.first, rows.second});
  }
  for (const auto& u : unpaired) out.notes.push_back("interference: left out " + u);

  const int sms = out.profile.device.sms;
  if (sms <= 0)
    throw config::ConfigError(
        "interference: the base profile has no device.sms (expected the SM count, to express "
        "NCCL CTAs as the share of SMs the GEMM holds)");
  // Measured curves replace the base profile's for the same victims.
  const auto replace = [](std::vector<sim::InterferenceCurve>& list, sim::InterferenceCurve c) {
    list.erase(std::remove_if(list.begin(), list.end(),
                              [&](const auto& x) { return x.victim == c.victim; }),
               list.end());
    list.push_back(std::move(c));
  };

  std::string comment;
  for (const auto& [victim, curve] : curves) {
    const bool gemm = victim == "gemm";
    sim::InterferenceCurve ic;
    ic.victim = victim;
    std::vector<double> pred, meas;
    std::vector<const Measurement*> cited;
    std::vector<std::string> point_text;
    // compute: x = c ascending; comm: x = (sms - c) / sms ascending, so c descending.
    std::vector<int> order;
    for (const auto& [c, ratios] : curve.by_ctas)
      if (c > 0 && c < sms) order.push_back(c);
    if (!gemm) std::reverse(order.begin(), order.end());
    for (int c : order) {
      const auto& ratios = curve.by_ctas.at(c);
      std::vector<double> values;
      for (const Ratio& r : ratios) values.push_back(r.value);
      const double med = median(values);
      const double slowdown = rounded(std::max(1.0, med), 5);
      const double x = gemm ? c : rounded(static_cast<double>(sms - c) / sms, 6);
      ic.points.emplace_back(x, slowdown);
      for (const Ratio& r : ratios) {
        pred.push_back(slowdown);
        meas.push_back(r.value);
        cited.push_back(r.alone);
        cited.push_back(r.beside);
      }
      point_text.push_back(fmt::format("c={} x={} {:.4f} ({} pairs{})", c, x, med, ratios.size(),
                                       med < 1 ? ", below 1: written as 1" : ""));
    }
    if (curve.by_ctas.count(0)) {
      std::vector<double> values;
      for (const Ratio& r : curve.by_ctas.at(0)) values.push_back(r.value);
      out.notes.push_back(fmt::format(
          "interference {}: NCCL default config (c = 0, CTA count unknown, not in the curve): "
          "median slowdown {:.4f} over {} pairs",
          victim, median(values), values.size()));
    }
    if (ic.points.empty()) continue;
    // A collective beside a GEMM that holds every SM (cuBLAS's persistent kernels) waits
    // for SMs: its beside time follows the GEMM's time, not its own, so ratios at one x
    // spread with the shapes and sizes. Say so when they do: the curve is their median.
    const auto [lo, hi] = std::minmax_element(meas.begin(), meas.end());
    if (!meas.empty() && *hi > 2 * *lo)
      out.notes.push_back(fmt::format(
          "interference {}: per-pair ratios span {:.2f} .. {:.2f}: one slowdown per x does not "
          "describe them (see fit_error){}",
          victim, *lo, *hi,
          gemm ? "" : "; a collective beside a GEMM on every SM waits for SMs to free up"));
    const double err = rounded(relative_rms(pred, meas), 4);
    ic.source = {sim::SourceKind::Measured,
                 fmt::format("overlap-bench --op interference, T_beside / T_alone medians, {}",
                             cite_rows(data.label, cited)),
                 err};
    out.notes.push_back(fmt::format("interference.{}.{}: {} point(s): {}; fit error {:.1f}%",
                                    gemm ? "compute_under_comm" : "comm_under_compute", victim,
                                    ic.points.size(), fmt::join(point_text, ", "), 100 * err));
    comment += fmt::format("{}{}: {}", comment.empty() ? "" : "\n", victim,
                           gemm ? "x = NCCL CTAs beside (communicator maxCTAs = x, no clusters)"
                                : fmt::format("x = (SMs - c) / SMs with c the collective's CTA "
                                              "limit and {} SMs",
                                              sms));
    replace(gemm ? out.profile.interference.compute_under_comm
                 : out.profile.interference.comm_under_compute,
            std::move(ic));
  }
  if (!comment.empty())
    out.comments["interference"] =
        "Measured side by side (overlap-bench --op interference, alone and beside interleaved);\n"
        "slowdown = median T_beside / T_alone over shapes and sizes at each x:\n" +
        comment;
}

}  // namespace overlapsim::calibration
