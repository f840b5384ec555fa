#include "sim/profile/gemm_table.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "sim/profile/table_axis.hpp"

namespace overlapsim::sim {

void GemmWaveModel::validate() const {
  if (!(mainloop_flops_per_s > 0))
    throw std::invalid_argument("gemm wave model: mainloop_flops_per_s is not positive");
  if (!(fixed_s >= 0) || !(output_s_per_element >= 0))
    throw std::invalid_argument("gemm wave model: fixed_s and output_s_per_element must be >= 0");
  if ((tile_m > 0) != (tile_n > 0) || tile_m < 0 || tile_n < 0)
    throw std::invalid_argument("gemm wave model: tile needs both sides positive");
  if (tile_per_shape && tile_m > 0)
    throw std::invalid_argument("gemm wave model: a fixed tile and a tile per shape");
  if (quantised() && sms <= 0) throw std::invalid_argument("gemm wave model: a tile needs sms > 0");
  if (whole_tiles_below_one_wave && !(tile_m > 0))
    throw std::invalid_argument("gemm wave model: below_one_wave: whole_tiles needs a fixed tile");
  if (best_of_choices() && (tile_per_shape || tile_m > 0))
    throw std::invalid_argument("gemm wave model: choices with a fixed tile or a tile per shape");
  // A split is a whole K block of a tile, and every split is tried for every shape: a bound
  // keeps a mistyped value from looping for minutes (cuBLASLt's own split-K stays far below).
  if (max_split_k < 1 || max_split_k > kMaxSplitK)
    throw std::invalid_argument(
        fmt::format("gemm wave model: max_split_k {} is outside 1..{}", max_split_k, kMaxSplitK));
  if (!(partial_wave_floor >= 0 && partial_wave_floor <= 1))
    throw std::invalid_argument("gemm wave model: partial_wave_floor must be in [0, 1]");
  if (partial_wave_floor != 1 && !(tile_m > 0))
    throw std::invalid_argument("gemm wave model: partial_wave_floor needs a fixed tile");
  for (const GemmKernelChoice& c : choices) {
    if (c.tile_m < 0 || c.tile_n < 0 || (c.tile_m > 0) != (c.tile_n > 0))
      throw std::invalid_argument("gemm wave model: a choice's tile needs both sides positive");
    if (!(c.efficiency > 0))
      throw std::invalid_argument("gemm wave model: a choice's efficiency is not positive");
  }
}

namespace {

double rounded_area(double m, double n, double tm, double tn, double sms, bool split_k,
                    double partial_wave_floor = 1) {
  const double tiles = std::ceil(m / tm) * std::ceil(n / tn);
  if (tiles < sms && split_k) return m * n;
  if (partial_wave_floor == 1) return std::ceil(tiles / sms) * sms * tm * tn;
  const double full = std::floor(tiles / sms);
  const double part = tiles / sms - full;
  const double waves =
      part > 0 ? full + partial_wave_floor + (1 - partial_wave_floor) * part : full;
  return waves * sms * tm * tn;
}

}  // namespace

double GemmWaveModel::charged_outputs(double m, double n) const {
  if (best_of_choices()) return charge(m, n, 1).outputs;
  if (!quantised()) return m * n;
  if (!tile_per_shape)
    return rounded_area(m, n, tile_m, tile_n, sms, !whole_tiles_below_one_wave, partial_wave_floor);
  double best = rounded_area(m, n, kVendorTiles[0][0], kVendorTiles[0][1], sms, true);
  for (const auto& t : kVendorTiles)
    best = std::min(best, rounded_area(m, n, t[0], t[1], sms, true));
  return best;
}

GemmCharge GemmWaveModel::charge(double m, double n, double k) const {
  if (!best_of_choices()) {
    const double outputs = charged_outputs(m, n);
    return {outputs, 2 * outputs * k};
  }
  GemmCharge best;
  double best_s = 0;
  const auto consider = [&](const GemmCharge& c) {
    const double t = time_of(c);
    if (best.outputs == 0 || t < best_s) {
      best = c;
      best_s = t;
    }
  };
  for (const GemmKernelChoice& c : choices) {
    if (c.stream_k()) {
      consider({m * n, 2 * m * n * k / c.efficiency});
      continue;
    }
    const double tiles = std::ceil(m / c.tile_m) * std::ceil(n / c.tile_n);
    for (int split = 1; split <= max_split_k; ++split) {
      const double outputs = std::ceil(tiles * split / sms) * sms * c.tile_m * c.tile_n;
      consider({outputs, 2 * outputs * k / split / c.efficiency, c.tile_m, c.tile_n, split});
    }
  }
  return best;
}

double GemmWaveModel::time_of(const GemmCharge& c) const {
  return fixed_s + c.outputs * output_s_per_element + c.mainloop_flops / mainloop_flops_per_s;
}

double GemmWaveModel::time_s(double m, double n, double k) const {
  return time_of(charge(m, n, k));
}

void GemmTable::validate() const {
  const bool wave = is_wave_model();
  if (wave) {
    waves.validate();
    if (!achieved_flops_per_s.empty())
      throw std::invalid_argument("gemm table: both a wave model and a rate grid");
    if (time_factor.empty()) return;
  } else if (!time_factor.empty()) {
    throw std::invalid_argument("gemm table: a time_factor grid without a wave model");
  }
  const std::vector<double>& grid = wave ? time_factor : achieved_flops_per_s;
  const char* what = wave ? "time factors" : "rates";
  check_table_axis(m_values, "gemm table: m");
  check_table_axis(n_values, "gemm table: n");
  check_table_axis(k_values, "gemm table: k");
  const std::size_t want = m_values.size() * n_values.size() * k_values.size();
  if (grid.size() != want)
    throw std::invalid_argument(fmt::format("gemm table: {} {} for a {}x{}x{} grid (expected {})",
                                            grid.size(), what, m_values.size(), n_values.size(),
                                            k_values.size(), want));
  for (std::size_t i = 0; i < want; ++i)
    if (!(grid[i] > 0))
      throw std::invalid_argument(fmt::format("gemm table: {} {} is not positive", what, i));
}

void GemmTable::scale_rates(double factor) {
  for (double& r : achieved_flops_per_s) r *= factor;
  if (is_wave_model()) {
    // Every choice's time scales alike, so the choice per shape stays the same.
    waves.fixed_s /= factor;
    waves.output_s_per_element /= factor;
    waves.mainloop_flops_per_s *= factor;
  }
}

double GemmTable::compute_s(double m, double n, double k) const {
  if (!is_wave_model()) return 2 * m * n * k / rate_flops_per_s(m, n, k);
  const double t = waves.time_s(m, n, k);
  return time_factor.empty() ? t : t * std::exp(log_interpolate(time_factor, m, n, k));
}

double GemmTable::rate_flops_per_s(double m, double n, double k) const {
  if (is_wave_model()) return 2 * m * n * k / compute_s(m, n, k);
  return std::exp(log_interpolate(achieved_flops_per_s, m, n, k));
}

double GemmTable::log_interpolate(const std::vector<double>& grid, double m, double n,
                                  double k) const {
  const AxisPosition pm = axis_position(m_values, m, true);
  const AxisPosition pn = axis_position(n_values, n, true);
  const AxisPosition pk = axis_position(k_values, k, true);
  const std::size_t nn = n_values.size();
  const std::size_t nk = k_values.size();
  double log_value = 0;
  for (int dm = 0; dm < 2; ++dm) {
    const double wm = dm ? pm.w : 1 - pm.w;
    if (wm == 0) continue;
    for (int dn = 0; dn < 2; ++dn) {
      const double wn = dn ? pn.w : 1 - pn.w;
      if (wn == 0) continue;
      for (int dk = 0; dk < 2; ++dk) {
        const double wk = dk ? pk.w : 1 - pk.w;
        if (wk == 0) continue;
        const std::size_t idx = ((pm.lo + dm) * nn + (pn.lo + dn)) * nk + (pk.lo + dk);
        log_value += wm * wn * wk * std::log(grid[idx]);
      }
    }
  }
  return log_value;
}

}  // namespace overlapsim::sim
