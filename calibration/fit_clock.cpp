// compute.interleaved_gemm_speedup: H200s run back-to-back GEMMs at their power-limited
// clock, 7-14 % below the clock they hold when GEMMs alternate with collectives (the
// same shape in calibrate's gemm section and inside a pair loop: 8192x8192x4096 822 us
// vs 724-770 us, calibration/data/h200x2-cal). The GEMM table holds the back-to-back
// rates; this stage measures the ratio on the GEMM-alone rows of the pair loops.
#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "calibration/fit.hpp"
#include "calibration/ops.hpp"
#include "sim/compute/compute_model.hpp"

namespace overlapsim::calibration {

void fit_interleaved_speedup(const FitData& data, FitOutput& out) {
  std::vector<const Measurement*> rows;
  for (const auto& r : data.rows)
    if (r.op == "gemm" && r.design == "cublas" && measured_in_pair_loop(r) &&
        out.profile.compute.gemm_tables.count(precision_of(r.dtype)))
      rows.push_back(&r);
  constexpr std::size_t kMinRows = 3;
  if (rows.size() < kMinRows) return;
  const sim::ComputeModel model(out.profile.compute);
  std::vector<double> ratios, predicted, measured;
  for (const Measurement* r : rows) {
    predicted.push_back(model.time_s(compute_op(*r, "gemm")));
    measured.push_back(r->time_s);
    ratios.push_back(predicted.back() / r->time_s);
  }
  const double speedup = median(ratios);
  for (double& p : predicted) p /= speedup;
  const double err = relative_rms(predicted, measured);
  sim::Sourced& s = out.profile.compute.interleaved_gemm_speedup;
  s.value = std::stod(fmt::format("{:.4g}", speedup));
  s.source.kind = sim::SourceKind::Measured;
  s.source.citation =
      "overlap-bench cublas GEMMs inside pair loops vs compute.gemm_tables, " +
      cite_rows(data.label, rows);
  s.source.fit_error = std::stod(fmt::format("{:.4g}", err));
  out.comments["compute.interleaved_gemm_speedup"] = fmt::format(
      "Median over {} GEMM-alone rows of the pair loops (GEMM, collective and pair timed in\n"
      "turn) of the table's back-to-back time / the measured time: the clock headroom when\n"
      "tensor cores idle part of the time. validate predicts those rows and the pairs with\n"
      "it; simulate keeps the back-to-back rates (docs/calibration.md).",
      rows.size());
  out.notes.push_back(fmt::format(
      "compute.interleaved_gemm_speedup: {:.4f} from {} rows (ratios {:.3f} .. {:.3f}), fit "
      "error {:.1f}%",
      speedup, rows.size(), *std::min_element(ratios.begin(), ratios.end()),
      *std::max_element(ratios.begin(), ratios.end()), 100 * err));
}

}  // namespace overlapsim::calibration
