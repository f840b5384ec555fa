#include "calibration/fit_gemm_model.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <set>
#include <string>

namespace overlapsim::calibration {
namespace {

double six_digits(double v) { return std::stod(fmt::format("{:.6g}", v)); }

// Rounds of re-choosing the kernel per shape and refitting the coefficients; on the
// calibration data the choices settled within 3.
constexpr int kChoiceRounds = 4;

// Partial-wave floors tried: 1, 0.95, ..., 0 (steps of 1 / kPartialWaveSteps).
constexpr int kPartialWaveSteps = 20;

// Solves the n x n system a x = b (n <= 3) by Gaussian elimination with partial pivoting;
// false when singular.
bool solve(std::array<std::array<double, 3>, 3> a, std::array<double, 3> b, int n,
           std::array<double, 3>& x) {
  for (int c = 0; c < n; ++c) {
    int p = c;
    for (int r = c + 1; r < n; ++r)
      if (std::abs(a[r][c]) > std::abs(a[p][c])) p = r;
    if (!(std::abs(a[p][c]) > 1e-300)) return false;
    std::swap(a[c], a[p]);
    std::swap(b[c], b[p]);
    for (int r = 0; r < n; ++r) {
      if (r == c) continue;
      const double f = a[r][c] / a[c][c];
      for (int j = c; j < n; ++j) a[r][j] -= f * a[c][j];
      b[r] -= f * b[c];
    }
  }
  for (int i = 0; i < n; ++i) x[i] = b[i] / a[i][i];
  return true;
}

}  // namespace

namespace {

// The wave model's three coefficients for fixed charges: least squares on the relative error
// of the shapes' kernel times (median - launch), each coefficient >= 0 (every subset of the
// fixed and per-output terms with the main loop, the best feasible one kept). Terms scaled
// to O(1) for conditioning: fixed in us, outputs in 1e-9 s per 1e9 outputs, main loop in s
// per 1e12 FLOPs. ok = false when no subset gives a positive main-loop rate.
struct TermFit {
  bool ok = false;
  double fixed_s = 0, output_s_per_element = 0, mainloop_flops_per_s = 0;
};

TermFit fit_terms(const std::vector<GemmShapeTimes>& shapes, double launch_s,
                  const std::function<sim::GemmCharge(double, double, double)>& charge_of) {
  // Terms per shape, divided by the measured kernel time: least squares on these rows
  // against 1 is least squares on the relative error.
  struct Row {
    std::array<double, 3> x;
  };
  std::vector<Row> rows;
  for (const auto& st : shapes) {
    const auto [m, n, k] = st.shape;
    const double t = st.median_s - launch_s;
    if (!(t > 0)) continue;
    const sim::GemmCharge c =
        charge_of(static_cast<double>(m), static_cast<double>(n), static_cast<double>(k));
    rows.push_back({{1e-6 / t, c.outputs * 1e-9 / t, c.mainloop_flops * 1e-12 / t}});
  }
  TermFit best;
  double best_obj = 0;
  // Subsets of {fixed, outputs}, the main loop always in (bit 0: fixed, bit 1: outputs).
  for (int subset = 3; subset >= 0; --subset) {
    std::vector<int> terms;
    if (subset & 1) terms.push_back(0);
    if (subset & 2) terms.push_back(1);
    terms.push_back(2);
    const int n = static_cast<int>(terms.size());
    if (static_cast<int>(rows.size()) < n) continue;
    std::array<std::array<double, 3>, 3> a{};
    std::array<double, 3> b{}, c{};
    for (const Row& r : rows)
      for (int i = 0; i < n; ++i) {
        b[i] += r.x[terms[i]];
        for (int j = 0; j < n; ++j) a[i][j] += r.x[terms[i]] * r.x[terms[j]];
      }
    if (!solve(a, b, n, c)) continue;
    if (std::any_of(c.begin(), c.begin() + n, [](double v) { return !(v >= 0); })) continue;
    if (!(c[n - 1] > 0)) continue;
    std::array<double, 3> full{};
    for (int i = 0; i < n; ++i) full[terms[i]] = c[i];
    double obj = 0;
    for (const Row& r : rows) {
      const double e = full[0] * r.x[0] + full[1] * r.x[1] + full[2] * r.x[2] - 1;
      obj += e * e;
    }
    if (best.ok && !(obj < best_obj)) continue;
    best = {true, full[0] * 1e-6, full[1] * 1e-9, 1e12 / full[2]};
    best_obj = obj;
  }
  return best;
}

// Sum of squared relative errors of the model's kernel times over the shapes.
double squared_error(const sim::GemmWaveModel& w, const std::vector<GemmShapeTimes>& shapes,
                     double launch_s) {
  double obj = 0;
  for (const auto& st : shapes) {
    const auto [m, n, k] = st.shape;
    const double t = st.median_s - launch_s;
    if (!(t > 0)) continue;
    const double e =
        w.time_s(static_cast<double>(m), static_cast<double>(n), static_cast<double>(k)) / t - 1;
    obj += e * e;
  }
  return obj;
}

// The best-of model's coefficients for given efficiencies: start from every choice charged
// as if each were equally fast (the least-quantised, first on ties), then alternate
// least squares and re-choosing the fastest choice per shape; the rounds' best kept.
sim::GemmWaveModel fit_choices_coefficients(sim::GemmWaveModel w,
                                            const std::vector<GemmShapeTimes>& shapes,
                                            double launch_s) {
  w.fixed_s = 0;
  w.output_s_per_element = 0;
  w.mainloop_flops_per_s = 1;
  sim::GemmWaveModel best;
  double best_obj = 0;
  for (int round = 0; round < kChoiceRounds; ++round) {
    const TermFit f = fit_terms(shapes, launch_s,
                                [&](double m, double n, double k) { return w.charge(m, n, k); });
    if (!f.ok) break;
    w.fixed_s = f.fixed_s;
    w.output_s_per_element = f.output_s_per_element;
    w.mainloop_flops_per_s = f.mainloop_flops_per_s;
    const double obj = squared_error(w, shapes, launch_s);
    if (best.empty() || obj < best_obj) {
      best = w;
      best_obj = obj;
    }
  }
  return best;
}

}  // namespace

sim::GemmWaveModel fit_gemm_wave_model(const std::vector<GemmShapeTimes>& shapes, double launch_s,
                                       int tile_m, int tile_n, int sms, bool whole_tiles,
                                       bool fit_partial_wave) {
  sim::GemmWaveModel shape_of;
  shape_of.tile_per_shape = tile_m < 0;
  shape_of.whole_tiles_below_one_wave = whole_tiles && tile_m > 0;
  shape_of.tile_m = std::max(tile_m, 0);
  shape_of.tile_n = std::max(tile_n, 0);
  shape_of.sms = sms;
  sim::GemmWaveModel best;
  double best_obj = 0;
  // The partial wave's floor from 1 (whole waves) down to 0 in steps of 0.05, the least
  // squared relative error kept (the earlier, larger floor on ties).
  const int floors = fit_partial_wave && tile_m > 0 ? kPartialWaveSteps : 0;
  for (int i = 0; i <= floors; ++i) {
    shape_of.partial_wave_floor = 1.0 - static_cast<double>(i) / kPartialWaveSteps;
    const TermFit f = fit_terms(
        shapes, launch_s, [&](double m, double n, double k) { return shape_of.charge(m, n, k); });
    if (!f.ok) continue;
    sim::GemmWaveModel w = shape_of;
    w.fixed_s = six_digits(f.fixed_s);
    w.output_s_per_element = six_digits(f.output_s_per_element);
    w.mainloop_flops_per_s = six_digits(f.mainloop_flops_per_s);
    const double obj = floors ? squared_error(w, shapes, launch_s) : 0;
    if (best.empty() || obj < best_obj) {
      best = w;
      best_obj = obj;
    }
  }
  return best;
}

sim::GemmWaveModel fit_gemm_best_of_model(const std::vector<GemmShapeTimes>& shapes,
                                          double launch_s, int sms, int max_split_k,
                                          bool stream_k) {
  sim::GemmWaveModel w;
  w.sms = sms;
  w.max_split_k = max_split_k;
  for (const auto& t : sim::GemmWaveModel::kVendorTiles) w.choices.push_back({t[0], t[1], 1.0});
  if (stream_k) w.choices.push_back({0, 0, 1.0});
  sim::GemmWaveModel best = fit_choices_coefficients(w, shapes, launch_s);
  if (best.empty()) return best;
  double best_obj = squared_error(best, shapes, launch_s);
  // Coordinate search over the efficiencies (the first choice's stays 1: the main-loop rate
  // is its rate), multiplicative steps, each kept while it lowers the squared error.
  for (double step : {1.04, 1.01}) {
    for (std::size_t i = 1; i < w.choices.size(); ++i)
      for (double f : {step, 1 / step})
        for (;;) {
          sim::GemmWaveModel trial = best;
          trial.choices[i].efficiency *= f;
          if (trial.choices[i].efficiency > 4 || trial.choices[i].efficiency < 0.25) break;
          trial = fit_choices_coefficients(trial, shapes, launch_s);
          if (trial.empty()) break;
          const double obj = squared_error(trial, shapes, launch_s);
          if (!(obj < best_obj * (1 - 1e-9))) break;
          best = trial;
          best_obj = obj;
        }
  }
  best.fixed_s = six_digits(best.fixed_s);
  best.output_s_per_element = six_digits(best.output_s_per_element);
  best.mainloop_flops_per_s = six_digits(best.mainloop_flops_per_s);
  for (auto& c : best.choices) c.efficiency = six_digits(c.efficiency);
  return best;
}

IdwLogMeanGrid::IdwLogMeanGrid(const std::map<GemmShape3, double>& values,
                               const std::vector<double>& ms, const std::vector<double>& ns,
                               const std::vector<double>& ks) {
  const std::size_t count = values.size();
  for (const auto& [s, v] : values) {
    value_.push_back(v);
    log_value_.push_back(std::log(v));
  }
  const auto axis = [&](const std::vector<double>& grid, auto coordinate,
                        std::vector<double>& out) {
    out.reserve(grid.size() * count);
    for (double x : grid)
      for (const auto& [s, v] : values) out.push_back(std::log2(x / coordinate(s)));
  };
  axis(
      ms, [](const GemmShape3& s) { return static_cast<double>(std::get<0>(s)); }, dm_);
  axis(
      ns, [](const GemmShape3& s) { return static_cast<double>(std::get<1>(s)); }, dn_);
  axis(
      ks, [](const GemmShape3& s) { return static_cast<double>(std::get<2>(s)); }, dk_);
}

double IdwLogMeanGrid::at(std::size_t i, std::size_t j, std::size_t l) const {
  const std::size_t count = value_.size();
  const double* dm = dm_.data() + i * count;
  const double* dn = dn_.data() + j * count;
  const double* dk = dk_.data() + l * count;
  double wsum = 0, lsum = 0;
  for (std::size_t x = 0; x < count; ++x) {
    const double d2 = dm[x] * dm[x] + dn[x] * dn[x] + dk[x] * dk[x];
    if (d2 == 0) return value_[x];
    wsum += 1.0 / d2;
    lsum += log_value_[x] / d2;
  }
  return std::exp(lsum / wsum);
}

sim::GemmTable with_time_correction(const sim::GemmWaveModel& waves,
                                    const std::vector<GemmShapeTimes>& shapes, double launch_s) {
  sim::GemmTable t;
  t.waves = waves;
  if (waves.empty()) return t;
  std::map<GemmShape3, double> factor;
  std::set<double> ms, ns, ks;
  for (const auto& st : shapes) {
    const auto [m, n, k] = st.shape;
    const double dm = static_cast<double>(m), dn = static_cast<double>(n),
                 dk = static_cast<double>(k);
    const double kernel_s = st.median_s - launch_s;
    if (!(kernel_s > 0)) continue;
    factor[st.shape] = kernel_s / waves.time_s(dm, dn, dk);
    ms.insert(dm);
    ns.insert(dn);
    ks.insert(dk);
  }
  if (factor.empty()) return t;
  t.m_values.assign(ms.begin(), ms.end());
  t.n_values.assign(ns.begin(), ns.end());
  t.k_values.assign(ks.begin(), ks.end());
  const IdwLogMeanGrid grid(factor, t.m_values, t.n_values, t.k_values);
  for (std::size_t i = 0; i < t.m_values.size(); ++i)
    for (std::size_t j = 0; j < t.n_values.size(); ++j)
      for (std::size_t l = 0; l < t.k_values.size(); ++l)
        t.time_factor.push_back(six_digits(grid.at(i, j, l)));
  return t;
}

double abs_quantile(std::vector<double> values, double q) {
  if (values.empty()) return 0;
  for (double& v : values) v = std::abs(v);
  std::sort(values.begin(), values.end());
  const double pos = q * static_cast<double>(values.size() - 1);
  const std::size_t lo = static_cast<std::size_t>(std::floor(pos));
  const std::size_t hi = std::min(lo + 1, values.size() - 1);
  return values[lo] + (values[hi] - values[lo]) * (pos - static_cast<double>(lo));
}

CrossValidation leave_one_shape_out(const std::vector<GemmShapeTimes>& shapes, double launch_s,
                                    const GemmModelBuilder& build) {
  CrossValidation cv;
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    std::vector<GemmShapeTimes> others;
    for (std::size_t j = 0; j < shapes.size(); ++j)
      if (j != i) others.push_back(shapes[j]);
    const sim::GemmTable model = build(others);
    const auto [m, n, k] = shapes[i].shape;
    const double pred =
        model.empty() ? 0
                      : launch_s + model.compute_s(static_cast<double>(m), static_cast<double>(n),
                                                   static_cast<double>(k));
    for (double t : shapes[i].times_s) cv.rel_errors.push_back(pred > 0 ? pred / t - 1 : 1e9);
  }
  cv.median_abs = abs_quantile(cv.rel_errors, 0.5);
  cv.p90_abs = abs_quantile(cv.rel_errors, 0.9);
  cv.max_abs = abs_quantile(cv.rel_errors, 1.0);
  return cv;
}

}  // namespace overlapsim::calibration
