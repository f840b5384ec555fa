// Compute stages of the fit: cuBLAS GEMM rate tables, and the GEMV / embedding-bag
// bandwidth folded into the memory and embedding efficiency curves.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include "calibration/fit.hpp"
#include "calibration/ops.hpp"
#include "sim/compute/compute_model.hpp"

namespace overlapsim::calibration {
namespace {

using Shape = std::tuple<std::int64_t, std::int64_t, std::int64_t>;

// Unmeasured grid nodes: inverse-square-distance weighting of the measured log rates, the
// distance taken in log2(m), log2(n), log2(k). Bounded by the measured rates (no
// extrapolation beyond what was seen), smooth, and exact at measured nodes.
double idw_rate(const std::map<Shape, double>& measured, double m, double n, double k) {
  double wsum = 0, lsum = 0;
  for (const auto& [s, rate] : measured) {
    const double dm = std::log2(m / static_cast<double>(std::get<0>(s)));
    const double dn = std::log2(n / static_cast<double>(std::get<1>(s)));
    const double dk = std::log2(k / static_cast<double>(std::get<2>(s)));
    const double d2 = dm * dm + dn * dn + dk * dk;
    if (d2 == 0) return rate;
    const double w = 1.0 / d2;
    wsum += w;
    lsum += w * std::log(rate);
  }
  return std::exp(lsum / wsum);
}

void fit_gemm_tables(const FitData& data, FitOutput& out) {
  std::map<std::string, std::vector<const Measurement*>> by_dtype;
  for (const auto& r : data.rows)
    if (r.op == "gemm" && r.design == "cublas") by_dtype[r.dtype].push_back(&r);
  const double launch_s = out.profile.compute.launch_overhead_s.value;
  for (const auto& [dtype, rows] : by_dtype) {
    const sim::Precision prec = precision_of(dtype);
    std::map<Shape, std::vector<double>> times;
    for (const Measurement* r : rows) times[{r->m, r->n, r->k}].push_back(r->time_s);
    std::map<Shape, double> rate;
    std::set<double> ms, ns, ks;
    for (const auto& [s, t] : times) {
      const auto [m, n, k] = s;
      const double flops = 2.0 * static_cast<double>(m) * static_cast<double>(n) *
                           static_cast<double>(k);
      rate[s] = flops / std::max(median(t) - launch_s, 1e-9);
      ms.insert(static_cast<double>(m));
      ns.insert(static_cast<double>(n));
      ks.insert(static_cast<double>(k));
    }
    sim::GemmTable table;
    table.m_values.assign(ms.begin(), ms.end());
    table.n_values.assign(ns.begin(), ns.end());
    table.k_values.assign(ks.begin(), ks.end());
    for (double m : table.m_values)
      for (double n : table.n_values)
        for (double k : table.k_values) {
          // Six significant digits: the YAML stays readable and reloads to these values.
          const double r = idw_rate(rate, m, n, k);
          table.achieved_flops_per_s.push_back(std::stod(fmt::format("{:.6g}", r)));
        }
    table.source.kind = sim::SourceKind::Measured;
    table.source.citation = "overlap-bench gemm cublas rows, " + cite_rows(data.label, rows);
    out.profile.compute.gemm_tables[prec] = table;

    const sim::ComputeModel model(out.profile.compute);
    std::vector<double> pred, meas;
    for (const Measurement* r : rows) {
      pred.push_back(model.time_s(compute_op(*r, "gemm")));
      meas.push_back(r->time_s);
    }
    const double err = relative_rms(pred, meas);
    out.profile.compute.gemm_tables[prec].source.fit_error = std::stod(fmt::format("{:.4g}", err));
    const std::size_t nodes = table.achieved_flops_per_s.size();
    out.comments[fmt::format("compute.gemm_tables.{}", dtype)] = fmt::format(
        "cuBLASLt {} GEMM rates (overlap-bench design cublas): rate = 2mnk / (median time -\n"
        "launch_overhead_s) at the {} measured shapes ({} rows); the other {} of the {} grid\n"
        "nodes by inverse-square-distance weighting of the measured log rates in log2 shape\n"
        "space. fit_error: relative RMS of the compute model's time against every row\n"
        "(repeats included: it carries the run-to-run spread).",
        dtype, rate.size(), rows.size(), nodes - rate.size(), nodes);
    out.notes.push_back(fmt::format(
        "compute.gemm_tables.{}: {} shapes, {} rows, grid {}x{}x{}, fit error {:.1f}%", dtype,
        rate.size(), rows.size(), table.m_values.size(), table.n_values.size(),
        table.k_values.size(), 100 * err));
  }
}

// Memory-bound ops measured by overlap-bench (GEMV, embedding bags): the efficiency
// bytes / (peak bandwidth * (time - launch)) at each measured size (median of repeats)
// replaces the base curve over the measured range; beyond it the base curve's shape is
// kept, scaled to meet the first (below) or last (above) measured point, so the spliced
// curve is continuous.
void fit_bandwidth_curve(const FitData& data, FitOutput& out, const std::string& op,
                         sim::LogCurve& curve, const std::string& key) {
  std::vector<const Measurement*> rows;
  for (const auto& r : data.rows)
    if (r.op == op && r.dtype != "") rows.push_back(&r);
  if (rows.empty()) return;
  const double bw = out.profile.compute.memory_bandwidth_Bps.value;
  const double launch_s = out.profile.compute.launch_overhead_s.value;
  std::map<double, std::vector<double>> eff_at;
  for (const Measurement* r : rows) {
    const double bytes = sim::ComputeModel::op_bytes(compute_op(*r, op));
    eff_at[bytes].push_back(std::min(1.0, bytes / (bw * std::max(r->time_s - launch_s, 1e-9))));
  }
  const double x_lo = eff_at.begin()->first, x_hi = eff_at.rbegin()->first;
  const double scale_lo = median(eff_at.begin()->second) / curve.at(x_lo);
  const double scale_hi = median(eff_at.rbegin()->second) / curve.at(x_hi);
  std::vector<std::pair<double, double>> pts;
  for (const auto& [x, y] : curve.points) {
    if (x >= x_lo && x <= x_hi) continue;
    const double scaled = y * (x < x_lo ? scale_lo : scale_hi);
    pts.emplace_back(x, std::stod(fmt::format("{:.4g}", std::clamp(scaled, 1e-6, 1.0))));
  }
  for (const auto& [x, effs] : eff_at)
    pts.emplace_back(std::round(x), std::stod(fmt::format("{:.4g}", median(effs))));
  std::sort(pts.begin(), pts.end());
  const std::string kept = fmt::format("x {:.4g} below {:.3g} B, x {:.4g} above {:.3g} B", scale_lo,
                                       x_lo, scale_hi, x_hi);
  const std::string base_citation = curve.source.citation;
  curve.points = pts;
  curve.source.kind = sim::SourceKind::Measured;
  curve.source.citation =
      fmt::format("overlap-bench {} rows, {}; beyond them scaled from: {}", op,
                  cite_rows(data.label, rows), base_citation);
  const sim::ComputeModel model(out.profile.compute);
  std::vector<double> pred, meas;
  for (const Measurement* r : rows) {
    pred.push_back(model.time_s(compute_op(*r, op)));
    meas.push_back(r->time_s);
  }
  const double err = relative_rms(pred, meas);
  curve.source.fit_error = std::stod(fmt::format("{:.4g}", err));
  out.comments["compute.efficiency." + key] = fmt::format(
      "{}: efficiency = bytes / (memory_bandwidth_Bps * (median time - launch_overhead_s)) at\n"
      "the {} measured size(s) ({} rows); beyond them the base curve scaled {}.",
      op, eff_at.size(), rows.size(), kept);
  out.notes.push_back(fmt::format("compute.efficiency.{}: {} size(s) from {} {} rows, fit error {:.1f}%",
                                  key, eff_at.size(), rows.size(), op, 100 * err));
}

}  // namespace

void fit_compute(const FitData& data, FitOutput& out) {
  fit_gemm_tables(data, out);
  fit_bandwidth_curve(data, out, "gemv", out.profile.compute.memory_efficiency, "memory");
  fit_bandwidth_curve(data, out, "embedding", out.profile.compute.embedding_efficiency,
                      "embedding");
}

}  // namespace overlapsim::calibration
