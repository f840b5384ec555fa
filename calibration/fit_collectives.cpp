// Collective stage of the fit: per op, rank count and CTA limit, alpha-beta bands over
// message size (fit_alpha_beta.hpp) written as the profile's latency + bus-bandwidth
// segments. At NCCL's default CTAs the rows timed inside pair loops (between GEMMs) also
// fit the curve's in_compute_loop_factor against it (fit_collective_loop.cpp).
//
// Which rows the bands see, where a curve has loop rows, is chosen per curve by
// leave-one-size-out over its own fit rows (every row of a size left out, as the held-out
// split leaves sizes out; alone rows predicted by the curve, loop rows by curve x factor):
//   face_value   every row at face value, the loop rows too (the form before the factor)
//   alone_only   the rows timed alone; the sizes only pair loops measured drop out
//   alone_first  per size the alone rows where the size has any, else the loop rows
// Bands and factor fitted together (the loop rows divided by the factor) are no candidate:
// at sizes only the loops measured the bands follow the divided rows whatever the factor,
// so the pair has no unique solution (on the 2-GPU data the factor drifted to 0.95 for
// reduce-scatter, whose loop rows all ran slower than alone).
#include <fmt/format.h>

#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include "calibration/fit.hpp"
#include "calibration/fit_alpha_beta.hpp"
#include "calibration/ops.hpp"
#include "calibration/pair_loop.hpp"
#include "config/units.hpp"

namespace overlapsim::calibration {
namespace {

enum class BandRows { FaceValue, AloneOnly, AloneFirst };

const char* to_string(BandRows form) {
  switch (form) {
    case BandRows::FaceValue:
      return "face_value";
    case BandRows::AloneOnly:
      return "alone_only";
    default:
      return "alone_first";
  }
}

struct CurveFit {
  std::vector<AlphaBetaSegment> bands;
  AlphaBetaChoice choice;
  std::map<std::uint64_t, std::vector<double>> by_size;  // the times the bands saw
  std::vector<const Measurement*> rows;                  // the rows they came from
};

// Bands over the median time per size of the rows `form` picks from `rows`.
CurveFit fit_bands(const std::vector<const Measurement*>& rows, BandRows form) {
  std::set<std::uint64_t> alone_sizes;
  for (const Measurement* r : rows)
    if (!collective_in_compute_loop(*r)) alone_sizes.insert(r->bytes);
  CurveFit f;
  for (const Measurement* r : rows) {
    const bool loop = collective_in_compute_loop(*r);
    if (loop && (form == BandRows::AloneOnly ||
                 (form == BandRows::AloneFirst && alone_sizes.count(r->bytes))))
      continue;
    f.by_size[r->bytes].push_back(r->time_s);
    f.rows.push_back(r);
  }
  std::vector<SizedTime> points;
  for (const auto& [bytes, times] : f.by_size) points.push_back({bytes, median(times)});
  f.bands = fit_alpha_beta(points, {}, &f.choice);
  return f;
}

sim::CollectiveCurve curve_of(const std::vector<AlphaBetaSegment>& bands, sim::CollectiveOp op,
                              int ranks, int ctas) {
  const double factor = sim::busbw_factor(op, ranks);
  sim::CollectiveCurve curve;
  curve.op = op;
  curve.algo = sim::Algorithm::Auto;
  curve.scope = sim::CommScope::IntraNode;
  curve.ranks = ranks;
  curve.ctas = ctas;
  for (const auto& b : bands) {
    sim::CollectiveSegment s;
    s.min_bytes = b.min_bytes;
    s.latency_s = std::stod(fmt::format("{:.6g}", b.alpha_s));
    s.bus_bandwidth_Bps = std::stod(fmt::format("{:.6g}", factor / b.beta_s_per_byte));
    curve.segments.push_back(s);
  }
  return curve;
}

std::vector<const Measurement*> loop_rows_of(const std::vector<const Measurement*>& rows) {
  std::vector<const Measurement*> loop;
  for (const Measurement* r : rows)
    if (collective_in_compute_loop(*r)) loop.push_back(r);
  return loop;
}

// Relative RMS over `rows` of predicting every size's rows from the other sizes' rows with
// `form`: the curve for rows timed alone, curve x in_compute_loop_factor for loop rows.
// Sizes whose remaining rows fit no curve are not scored.
double leave_one_size_out(const std::vector<const Measurement*>& rows, BandRows form,
                          sim::CollectiveOp op, int ranks, const std::string& label) {
  std::set<std::uint64_t> sizes;
  for (const Measurement* r : rows) sizes.insert(r->bytes);
  double sum = 0;
  int n = 0;
  for (std::uint64_t left_out : sizes) {
    std::vector<const Measurement*> train;
    for (const Measurement* r : rows)
      if (r->bytes != left_out) train.push_back(r);
    const CurveFit fit = fit_bands(train, form);
    if (fit.bands.empty()) continue;
    const sim::CollectiveCurve curve = curve_of(fit.bands, op, ranks, 0);
    const double factor =
        fit_in_compute_loop_factor(curve, loop_rows_of(train), label).factor.value;
    for (const Measurement* r : rows) {
      if (r->bytes != left_out) continue;
      const double t =
          curve.time_s(r->bytes, ranks) * (collective_in_compute_loop(*r) ? factor : 1.0);
      sum += std::pow((t - r->time_s) / r->time_s, 2);
      ++n;
    }
  }
  return n ? std::sqrt(sum / n) : 0;
}

}  // namespace

void fit_collectives(const FitData& data, FitOutput& out) {
  // (op, ranks, ctas) -> rows
  std::map<std::tuple<std::string, int, int>, std::vector<const Measurement*>> groups;
  for (const auto& r : data.rows)
    if (is_collective_op(r.op) && collective_of(r.op))
      groups[{r.op, r.world, effective_ctas(r)}].push_back(&r);
  for (const auto& [key, rows] : groups) {
    const auto& [op_name, ranks, ctas] = key;
    const sim::CollectiveOp op = *collective_of(op_name);
    const std::vector<const Measurement*> loop_rows = loop_rows_of(rows);

    // The band rows: face value unless a curve with loop rows predicts its left-out sizes
    // better another way (by more than 0.01 points, so near-ties keep the earlier form).
    BandRows form = BandRows::FaceValue;
    std::string form_text;
    if (ctas == 0 && !loop_rows.empty()) {
      double best = 0;
      for (BandRows f : {BandRows::FaceValue, BandRows::AloneOnly, BandRows::AloneFirst}) {
        const double score = leave_one_size_out(rows, f, op, ranks, data.label);
        form_text +=
            fmt::format("{}{} {:.2f} %", form_text.empty() ? "" : ", ", to_string(f), 100 * score);
        if (f == BandRows::FaceValue || score < best - 1e-4) {
          best = score;
          form = f;
        }
      }
    }
    const CurveFit fit = fit_bands(rows, form);
    const std::string label = fmt::format("{} ranks={} ctas={}", op_name, ranks, ctas);
    if (fit.bands.empty()) {
      out.notes.push_back(fmt::format("collectives {}: {} size(s), not fitted (needs 2+ sizes)",
                                      label, fit.by_size.size()));
      continue;
    }
    sim::CollectiveCurve curve = curve_of(fit.bands, op, ranks, ctas);
    std::string bands_text;
    for (const auto& s : curve.segments)
      bands_text +=
          fmt::format("\nfrom {}: {} + bytes x {:.4g} / {}", config::format_bytes(s.min_bytes),
                      config::format_duration(s.latency_s), sim::busbw_factor(op, ranks),
                      config::format_bandwidth(s.bus_bandwidth_Bps));
    std::vector<double> pred, meas;
    for (const Measurement* r : fit.rows) {
      pred.push_back(curve.time_s(r->bytes, ranks));
      meas.push_back(r->time_s);
    }
    const double err = relative_rms(pred, meas);
    curve.source.kind = sim::SourceKind::Measured;
    curve.source.fit_error = std::stod(fmt::format("{:.4g}", err));
    curve.source.citation = fmt::format("overlap-bench {} rows{}, {}", op_name,
                                        ctas ? fmt::format(" (NCCL limited to {} CTAs)", ctas) : "",
                                        cite_rows(data.label, fit.rows));
    const std::size_t index = out.profile.collectives.curves.size();
    const std::string rows_text =
        form_text.empty()
            ? fmt::format("{} rows", fit.rows.size())
            : fmt::format(
                  "{} of {} rows, {} timed inside pair loops: bands from {}\n"
                  "(leave-one-size-out, loop rows x factor: {})",
                  fit.rows.size(), rows.size(), loop_rows.size(), to_string(form), form_text);
    out.comments[fmt::format("collectives.{}", index)] = fmt::format(
        "{} on {} GPUs{}: {} sizes {}..{} ({}; median per size), {} band(s) of least\n"
        "squares on the relative error, switches at the {} (leave-one-size-out: geometric\n"
        "mean {:.4g}, faster line {:.4g}):{}",
        op_name, ranks,
        ctas ? fmt::format(", NCCL limited to {} CTAs (communicator split with maxCTAs)", ctas)
             : ", NCCL's default CTAs",
        fit.by_size.size(), config::format_bytes(fit.by_size.begin()->first),
        config::format_bytes(fit.by_size.rbegin()->first), rows_text, fit.bands.size(),
        to_string(fit.choice.rule), fit.choice.geometric_mean_cost, fit.choice.faster_line_cost,
        bands_text);
    out.notes.push_back(
        fmt::format("collectives {}: {} sizes, {} rows{}, {} band(s), fit error {:.1f}%", label,
                    fit.by_size.size(), fit.rows.size(),
                    form_text.empty() ? "" : fmt::format(" ({})", to_string(form)),
                    fit.bands.size(), 100 * err));
    if (ctas == 0) {
      const InLoopFactorFit loop = fit_in_compute_loop_factor(curve, loop_rows, data.label);
      curve.in_compute_loop_factor = loop.factor;
      if (!loop.comment.empty())
        out.comments[fmt::format("collectives.{}.in_compute_loop_factor", index)] = loop.comment;
      out.notes.push_back(loop.note);
    }
    out.profile.collectives.curves.push_back(std::move(curve));
  }
}

}  // namespace overlapsim::calibration
