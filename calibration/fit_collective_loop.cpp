// collectives.*.in_compute_loop_factor. nccl-tests times a collective back to back with
// itself; in a pair loop (and in a training step) the same collective runs between GEMMs,
// and on 2 x H200 it ran 1.4-8 % slower there (all-to-all 14 %; clock, power and L2 state
// after a GEMM), which a curve fitted to both kinds of rows splits the difference of. The
// curve now holds the alone rows; this fits one time factor per op for the rest.
//
// One factor per op and rank count, not per size: on the 2-GPU runs the ratios do not
// order by message size (allreduce 64, 128, 256 MiB: 1.056, 1.014, 1.051 against the alone
// rows), they follow the loop's GEMM, and a curve has 2-3 such sizes to fit from. The
// geometric mean because the ratios are multiplicative (a log-symmetric average) and with
// 2-6 rows a median discards half of them; rows unstable by 2x are already left out. The
// factor must earn its place: fitted from at least 2 rows, and kept only where it predicts
// each row left out (from the others) better than no factor does.
#include <fmt/format.h>

#include <cmath>

#include "calibration/fit.hpp"
#include "config/units.hpp"

namespace overlapsim::calibration {
namespace {

double geometric_mean_ratio(const std::vector<std::pair<double, double>>& pred_meas) {
  std::vector<double> ratios;
  for (const auto& [pred, meas] : pred_meas) ratios.push_back(meas / pred);
  return geometric_mean(ratios);
}

}  // namespace

InLoopFactorFit fit_in_compute_loop_factor(const sim::CollectiveCurve& curve,
                                           const std::vector<const Measurement*>& loop_rows,
                                           const std::string& data_label) {
  InLoopFactorFit out;
  const std::string what = fmt::format("{} on {} GPUs", sim::to_string(curve.op), curve.ranks);
  std::vector<std::pair<double, double>> pm;  // (curve time, measured time) per row
  for (const Measurement* r : loop_rows)
    pm.emplace_back(curve.time_s(r->bytes, curve.ranks), r->time_s);
  std::string ratios;  // four to a comment line
  for (std::size_t i = 0; i < pm.size(); ++i)
    ratios += fmt::format("{}{} {:.3f}",
                          i == 0  ? ""
                          : i % 4 ? ", "
                                  : ",\n",
                          config::format_bytes(loop_rows[i]->bytes), pm[i].second / pm[i].first);
  // A factor needs one row to fit it and another to check it on.
  if (pm.size() < 2) {
    out.factor.value = 1;
    out.factor.source.kind = sim::SourceKind::Assumed;
    out.factor.source.citation =
        pm.empty() ? fmt::format(
                         "not measured: {} has no {} rows timed inside pair loops beside "
                         "enough rows timed alone for a curve; 1 = as alone",
                         data_label, what)
                   : fmt::format(
                         "not measured: one {} row timed inside a pair loop ({}), too "
                         "few to fit and check a factor; 1 = as alone",
                         what, cite_rows(data_label, loop_rows));
    if (!pm.empty())
      out.comment =
          fmt::format("The one row of the pair loops, measured / this curve: {}.", ratios);
    out.note = fmt::format("collectives {} in_compute_loop_factor: not measured ({} row), 1", what,
                           pm.size());
    return out;
  }
  // Leave-one-out: each row by the factor of the other rows (from other loops), against no
  // factor; the factor is kept only if it predicts rows it did not see better than 1.
  double with = 0, without = 0;
  for (std::size_t i = 0; i < pm.size(); ++i) {
    std::vector<std::pair<double, double>> rest = pm;
    rest.erase(rest.begin() + static_cast<std::ptrdiff_t>(i));
    const double f = geometric_mean_ratio(rest);
    with += std::pow((f * pm[i].first - pm[i].second) / pm[i].second, 2);
    without += std::pow((pm[i].first - pm[i].second) / pm[i].second, 2);
  }
  const double n = static_cast<double>(pm.size());
  const double loo_with = std::sqrt(with / n), loo_without = std::sqrt(without / n);
  const bool keep = loo_with < loo_without;
  const double factor = keep ? std::stod(fmt::format("{:.4g}", geometric_mean_ratio(pm))) : 1.0;
  std::vector<double> predicted, measured;
  for (const auto& [pred, meas] : pm) {
    predicted.push_back(factor * pred);
    measured.push_back(meas);
  }
  const double err = relative_rms(predicted, measured);
  out.factor = measured_value(
      factor,
      fmt::format("overlap-bench {} rows timed inside pair loops vs this curve{}, {}",
                  sim::to_string(curve.op), keep ? "" : " (no factor: leave-one-out)",
                  cite_rows(data_label, loop_rows)),
      err);
  out.comment = fmt::format(
      "{} of measured / this curve over the {} rows timed inside pair loops\n"
      "(the collective between GEMMs):\n{}.\n"
      "Leave-one-out relative RMS {:.2f} % with a factor, {:.2f} % without{}.",
      keep ? "Geometric mean"
           : "No factor: 1 predicts left-out rows better than the geometric mean",
      pm.size(), ratios, 100 * loo_with, 100 * loo_without, keep ? "" : " (1 is kept)");
  out.note = fmt::format(
      "collectives {} in_compute_loop_factor: {:.4f} from {} rows (leave-one-out {:.2f}% vs "
      "{:.2f}% without), fit error {:.1f}%",
      what, factor, pm.size(), 100 * loo_with, 100 * loo_without, 100 * err);
  return out;
}

}  // namespace overlapsim::calibration
