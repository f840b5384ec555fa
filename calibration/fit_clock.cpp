// compute.idle_clock_boost: an H200 runs back-to-back GEMMs at its power-limited clock and
// faster when the GPU spends part of its time without compute (the same 8192x8192x4096
// GEMM: 822 us back to back, 724-770 us inside pair loops, calibration/data/h200x2). The
// GEMM tables hold the back-to-back rates; this stage fits how the rate grows with the
// share f of a pair loop the collective takes: rate x (1 + boost * f), on the GEMM-alone
// rows of the pair loops. (A single ratio over all loops, the form before, left 4-6 %
// errors between loops whose collective shares differ.)
#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "calibration/fit.hpp"
#include "calibration/ops.hpp"
#include "calibration/pair_loop.hpp"
#include "sim/profile/compute_model.hpp"

namespace overlapsim::calibration {

void fit_idle_clock_boost(const FitData& data, FitOutput& out) {
  const PairLoops loops(data.rows);
  std::vector<const Measurement*> rows;
  std::vector<double> fractions, back_to_back, measured;
  const sim::ComputeModel model(out.profile.compute);
  for (const auto& r : data.rows) {
    if (r.op != "gemm" || r.design != "cublas" || !measured_in_pair_loop(r) ||
        !out.profile.compute.gemm_tables.count(precision_of(r.dtype)))
      continue;
    const auto loop = loops.of(r);
    if (!loop) continue;
    const double f = loop_idle_fraction(out.profile, r, *loop);
    if (f <= 0) continue;
    rows.push_back(&r);
    fractions.push_back(f);
    back_to_back.push_back(model.time_s(compute_op(r, "gemm")));
    measured.push_back(r.time_s);
  }
  constexpr std::size_t kMinRows = 3;
  if (rows.size() < kMinRows) return;
  // t_b2b / t = 1 + boost * f: least squares through the origin in (f, ratio - 1).
  double num = 0, den = 0;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    num += fractions[i] * (back_to_back[i] / measured[i] - 1);
    den += fractions[i] * fractions[i];
  }
  const double boost = std::stod(fmt::format("{:.4g}", std::max(0.0, num / den)));
  std::vector<double> predicted;
  for (std::size_t i = 0; i < rows.size(); ++i)
    predicted.push_back(back_to_back[i] / (1 + boost * fractions[i]));
  const double err = relative_rms(predicted, measured);
  out.profile.compute.idle_clock_boost = measured_value(
      boost,
      "overlap-bench cublas GEMMs inside pair loops vs compute.gemm_tables, " +
          cite_rows(data.label, rows),
      err);
  out.comments["compute.idle_clock_boost"] = fmt::format(
      "Least squares over {} GEMM-alone rows of the pair loops (GEMM, collective and pair\n"
      "timed in turn) of table time / measured time - 1 = boost x f, f = T_coll / (T_gemm +\n"
      "T_coll) of the loop by this profile's table and curve (f {:.3f} .. {:.3f}): the clock\n"
      "headroom the collective's share leaves. validate applies it to those rows and to the\n"
      "pairs (docs/calibration.md).",
      rows.size(), *std::min_element(fractions.begin(), fractions.end()),
      *std::max_element(fractions.begin(), fractions.end()));
  out.notes.push_back(fmt::format(
      "compute.idle_clock_boost: {:.4f} from {} rows (collective share {:.3f} .. {:.3f}), fit "
      "error {:.1f}%",
      boost, rows.size(), *std::min_element(fractions.begin(), fractions.end()),
      *std::max_element(fractions.begin(), fractions.end()), 100 * err));
}

}  // namespace overlapsim::calibration
