// Design stage of the fit: overhead parameters of the overlap designs from the pair rows
// and the tilewise helper's rows, each against a stated model (docs/calibration.md).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "calibration/fit.hpp"
#include "calibration/ops.hpp"

namespace overlapsim::calibration {
namespace {

using Shape = std::tuple<std::int64_t, std::int64_t, std::int64_t>;

const char* compute_design(const std::string& compute) {
  return compute == "embedding" ? "own" : "cublas";
}

void set_param(FitOutput& out, const std::string& design, const std::string& key, double value,
               double err, const std::string& citation, const std::string& comment) {
  sim::Sourced s;
  s.value = value;
  s.source = {sim::SourceKind::Measured, citation, rounded(err, 4)};
  out.profile.designs.by_design[design][key] = s;
  out.comments[fmt::format("designs.{}.{}", design, key)] = comment;
}

// Medians of single-op rows by (op, design, dtype, shape) and of default-CTA collectives by
// (op, bytes).
struct Parts {
  std::map<std::tuple<std::string, std::string, std::string, Shape>, std::vector<double>> compute;
  std::map<std::pair<std::string, std::uint64_t>, std::vector<double>> collective;
  explicit Parts(const FitData& data) {
    for (const auto& r : data.rows) {
      if (is_compute_op(r.op))
        compute[{r.op, r.design, r.dtype, {r.m, r.n, r.k}}].push_back(r.time_s);
      if (is_collective_op(r.op) && r.design == "nccl" && effective_ctas(r) == 0)
        collective[{r.op, r.bytes}].push_back(r.time_s);
    }
  }
  double op_s(const std::string& op, const std::string& design, const std::string& dtype,
              const Shape& s) const {
    auto it = compute.find({op, design, dtype, s});
    return it == compute.end() ? 0 : median(it->second);
  }
  double coll_s(const std::string& op, std::uint64_t bytes) const {
    auto it = collective.find({op, bytes});
    return it == collective.end() ? 0 : median(it->second);
  }
};

// decomposed: k chunks pipelined over two streams; with g = T_op/k and c = T_coll/k the
// ideal pipeline takes g + c + (k-1) max(g, c), and each chunk costs per_chunk_overhead_s
// beyond it (launches, less efficient chunk GEMMs, stream events). Least squares on the
// relative error, overhead >= 0.
void fit_decomposed(const FitData& data, const Parts& parts, FitOutput& out) {
  std::vector<const Measurement*> rows;
  std::vector<double> pipe, meas, k;
  for (const auto& r : data.rows) {
    if (r.design != "decomposed" || r.chunks < 2) continue;
    const auto pp = pair_parts(r.op);
    if (!pp) continue;
    const double t_op = parts.op_s(pp->compute, compute_design(pp->compute), r.dtype,
                                    {r.m, r.n, r.k});
    const double t_coll = parts.coll_s(pp->collective, r.bytes);
    if (t_op <= 0 || t_coll <= 0) continue;
    const double kc = r.chunks, g = t_op / kc, c = t_coll / kc;
    rows.push_back(&r);
    pipe.push_back(g + c + (kc - 1) * std::max(g, c));
    meas.push_back(r.time_s);
    k.push_back(kc);
  }
  if (rows.empty()) return;
  double num = 0, den = 0;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const double w = 1.0 / (meas[i] * meas[i]);
    num += w * k[i] * (meas[i] - pipe[i]);
    den += w * k[i] * k[i];
  }
  const double unconstrained = num / den;
  const double o = rounded(std::max(0.0, unconstrained), 6);
  std::vector<double> pred;
  for (std::size_t i = 0; i < rows.size(); ++i) pred.push_back(pipe[i] + k[i] * o);
  const double err = relative_rms(pred, meas);
  set_param(
      out, "decomposed", "per_chunk_overhead_s", o, err,
      "overlap-bench decomposed rows with their parts' medians, " + cite_rows(data.label, rows),
      fmt::format("T = g + c + (k-1) max(g, c) + k * per_chunk_overhead_s, g = T_op/k, c = "
                  "T_coll/k (parts measured alone);\nleast squares on the relative error "
                  "over {} rows (k = 2..8){}.",
                  rows.size(),
                  unconstrained < 0 ? fmt::format("; unconstrained optimum {:.3g} us "
                                                  "clamped to 0",
                                                  unconstrained * 1e6)
                                    : ""));
  out.notes.push_back(
      fmt::format("designs.decomposed.per_chunk_overhead_s: {:.2f} us from {} rows, "
                  "fit error {:.1f}%",
                  o * 1e6, rows.size(), 100 * err));
}

void fit_tilewise(const FitData& data, const Parts& parts, FitOutput& out) {
  const int sms = out.profile.device.sms;
  // Own GEMM vs cuBLAS on the same shapes: the geometric mean of the per-shape ratios.
  std::vector<const Measurement*> own_rows;
  std::map<Shape, double> cublas_at;
  double log_sum = 0;
  int shapes = 0;
  for (const auto& [key, times] : parts.compute) {
    const auto& [op, design, dtype, shape] = key;
    if (op != "gemm" || design != "own") continue;
    const double cub = parts.op_s("gemm", "cublas", dtype, shape);  // same input type
    if (cub <= 0) continue;
    cublas_at[shape] = cub;
    log_sum += std::log(median(times) / cub);
    ++shapes;
  }
  for (const auto& r : data.rows)
    if (r.op == "gemm" && r.design == "own" && cublas_at.count({r.m, r.n, r.k}))
      own_rows.push_back(&r);
  if (shapes > 0) {
    const double ratio = rounded(std::exp(log_sum / shapes), 6);
    std::vector<double> pred, meas;
    for (const Measurement* r : own_rows) {
      pred.push_back(ratio * cublas_at[{r->m, r->n, r->k}]);
      meas.push_back(r->time_s);
    }
    const double err = relative_rms(pred, meas);
    set_param(
        out, "tilewise", "own_gemm_time_ratio", ratio, err,
        "overlap-bench gemm own rows against cublas medians, " + cite_rows(data.label, own_rows),
        fmt::format("own GEMM time / cuBLAS time: geometric mean over {} shapes ({} own rows)",
                    shapes, own_rows.size()));
    out.notes.push_back(
        fmt::format("designs.tilewise.own_gemm_time_ratio: {:.4f} over {} shapes, "
                    "fit error {:.1f}%",
                    ratio, shapes, 100 * err));
  }

  // Own GEMM with per-tile signals on all SMs (own_signal, chunks 0) vs without, and on
  // sms - s CTAs (chunks s): time ~ T_signal * (sms / (sms - s))^exponent.
  std::vector<const Measurement*> sig_rows, carve_rows;
  std::vector<double> fractions;
  std::map<std::pair<std::string, Shape>, std::vector<double>> sig0;
  for (const auto& r : data.rows)
    if (r.op == "gemm" && r.design == "own_signal" && r.chunks == 0)
      sig0[{r.dtype, {r.m, r.n, r.k}}].push_back(r.time_s);
  for (const auto& [key, times] : sig0) {
    const double own = parts.op_s("gemm", "own", key.first, key.second);
    if (own > 0) fractions.push_back(median(times) / own - 1);
  }
  for (const auto& r : data.rows) {
    if (r.op != "gemm" || r.design != "own_signal") continue;
    if (r.chunks == 0 && parts.op_s("gemm", "own", r.dtype, {r.m, r.n, r.k}) > 0)
      sig_rows.push_back(&r);
    if (r.chunks > 0 && r.chunks < sms && sig0.count({r.dtype, {r.m, r.n, r.k}}))
      carve_rows.push_back(&r);
  }
  if (!fractions.empty()) {
    const double f = rounded(median(fractions), 6);
    std::vector<double> pred, meas;
    for (const Measurement* r : sig_rows) {
      pred.push_back((1 + f) * parts.op_s("gemm", "own", r->dtype, {r->m, r->n, r->k}));
      meas.push_back(r->time_s);
    }
    const double err = relative_rms(pred, meas);
    set_param(out, "tilewise", "signal_overhead_fraction", f, err,
              "overlap-bench gemm own_signal (all SMs) rows against own medians, " +
                  cite_rows(data.label, sig_rows),
              fmt::format("own GEMM with remapped stores and per-tile signals / own GEMM - 1, all "
                          "SMs: median over {} shapes\n(own and own_signal were timed one after "
                          "the other, not interleaved: clock drift is in it)",
                          fractions.size()));
    out.notes.push_back(
        fmt::format("designs.tilewise.signal_overhead_fraction: {:.4f} over {} "
                    "shapes, fit error {:.1f}%",
                    f, fractions.size(), 100 * err));
  }
  if (!carve_rows.empty()) {
    double num = 0, den = 0;
    for (const Measurement* r : carve_rows) {
      const double a = std::log(static_cast<double>(sms) / (sms - r->chunks));
      const double b = std::log(r->time_s / median(sig0[{r->dtype, {r->m, r->n, r->k}}]));
      num += a * b;
      den += a * a;
    }
    const double e = rounded(num / den, 6);
    std::vector<double> pred, meas;
    for (const Measurement* r : carve_rows) {
      pred.push_back(median(sig0[{r->dtype, {r->m, r->n, r->k}}]) *
                     std::pow(static_cast<double>(sms) / (sms - r->chunks), e));
      meas.push_back(r->time_s);
    }
    const double err = relative_rms(pred, meas);
    set_param(
        out, "tilewise", "sm_scaling_exponent", e, err,
        "overlap-bench gemm own_signal rows on sms - s CTAs, " + cite_rows(data.label, carve_rows),
        fmt::format("GEMM on sms - s CTAs (s SMs left to NCCL) takes T_all_SMs * (sms / "
                    "(sms - s))^exponent;\nleast squares in log space over {} rows",
                    carve_rows.size()));
    out.notes.push_back(
        fmt::format("designs.tilewise.sm_scaling_exponent: {:.3f} from {} rows, fit error {:.1f}%",
                    e, carve_rows.size(), 100 * err));
  }
}

}  // namespace

void fit_designs(const FitData& data, FitOutput& out) {
  const Parts parts(data);
  fit_decomposed(data, parts, out);
  fit_tilewise(data, parts, out);
}

}  // namespace overlapsim::calibration
