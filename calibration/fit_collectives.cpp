// Collective stage of the fit: per op, rank count and CTA limit, alpha-beta bands over
// message size (fit_alpha_beta.hpp) written as the profile's latency + bus-bandwidth
// segments.
#include <fmt/format.h>

#include <map>
#include <tuple>

#include "calibration/fit.hpp"
#include "calibration/fit_alpha_beta.hpp"
#include "calibration/ops.hpp"
#include "config/units.hpp"

namespace overlapsim::calibration {

void fit_collectives(const FitData& data, FitOutput& out) {
  // (op, ranks, ctas) -> rows
  std::map<std::tuple<std::string, int, int>, std::vector<const Measurement*>> groups;
  for (const auto& r : data.rows)
    if (is_collective_op(r.op) && collective_of(r.op))
      groups[{r.op, r.world, effective_ctas(r)}].push_back(&r);
  for (const auto& [key, rows] : groups) {
    const auto& [op_name, ranks, ctas] = key;
    const sim::CollectiveOp op = *collective_of(op_name);
    std::map<std::uint64_t, std::vector<double>> by_size;
    for (const Measurement* r : rows) by_size[r->bytes].push_back(r->time_s);
    std::vector<SizedTime> points;
    for (const auto& [bytes, times] : by_size) points.push_back({bytes, median(times)});
    AlphaBetaChoice choice;
    const auto bands = fit_alpha_beta(points, {}, &choice);
    const std::string label = fmt::format("{} ranks={} ctas={}", op_name, ranks, ctas);
    if (bands.empty()) {
      out.notes.push_back(fmt::format("collectives {}: {} size(s), not fitted (needs 2+ sizes)",
                                      label, by_size.size()));
      continue;
    }
    const double factor = sim::busbw_factor(op, ranks);
    sim::CollectiveCurve curve;
    curve.op = op;
    curve.algo = sim::Algorithm::Auto;
    curve.scope = sim::CommScope::IntraNode;
    curve.ranks = ranks;
    curve.ctas = ctas;
    std::string bands_text;
    for (const auto& b : bands) {
      sim::CollectiveSegment s;
      s.min_bytes = b.min_bytes;
      s.latency_s = std::stod(fmt::format("{:.6g}", b.alpha_s));
      s.bus_bandwidth_Bps = std::stod(fmt::format("{:.6g}", factor / b.beta_s_per_byte));
      curve.segments.push_back(s);
      bands_text +=
          fmt::format("\nfrom {}: {} + bytes x {:.4g} / {}", config::format_bytes(s.min_bytes),
                      config::format_duration(s.latency_s), factor,
                      config::format_bandwidth(s.bus_bandwidth_Bps));
    }
    std::vector<double> pred, meas;
    for (const Measurement* r : rows) {
      pred.push_back(curve.time_s(r->bytes, ranks));
      meas.push_back(r->time_s);
    }
    const double err = relative_rms(pred, meas);
    curve.source.kind = sim::SourceKind::Measured;
    curve.source.fit_error = std::stod(fmt::format("{:.4g}", err));
    curve.source.citation = fmt::format("overlap-bench {} rows{}, {}", op_name,
                                        ctas ? fmt::format(" (NCCL limited to {} CTAs)", ctas) : "",
                                        cite_rows(data.label, rows));
    out.comments[fmt::format("collectives.{}", out.profile.collectives.curves.size())] =
        fmt::format(
            "{} on {} GPUs{}: {} sizes {}..{} ({} rows, median per size), {} band(s) of least\n"
            "squares on the relative error, switches at the {} (leave-one-size-out: geometric\n"
            "mean {:.4g}, faster line {:.4g}):{}",
            op_name, ranks,
            ctas ? fmt::format(", NCCL limited to {} CTAs (communicator split with maxCTAs)", ctas)
                 : ", NCCL's default CTAs",
            by_size.size(), config::format_bytes(by_size.begin()->first),
            config::format_bytes(by_size.rbegin()->first), rows.size(), bands.size(),
            to_string(choice.rule), choice.geometric_mean_cost, choice.faster_line_cost,
            bands_text);
    out.notes.push_back(
        fmt::format("collectives {}: {} sizes, {} rows, {} band(s), fit error {:.1f}%", label,
                    by_size.size(), rows.size(), bands.size(), 100 * err));
    out.profile.collectives.curves.push_back(std::move(curve));
  }
}

}  // namespace overlapsim::calibration
