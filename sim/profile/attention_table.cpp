#include "sim/profile/attention_table.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace overlapsim::sim {
namespace {

void check_table_axis(const std::vector<double>& axis, const char* name) {
  if (axis.empty()) throw std::invalid_argument(fmt::format("{}: empty", name));
  for (std::size_t i = 0; i < axis.size(); ++i) {
    if (!(axis[i] > 0) || !std::isfinite(axis[i]))
      throw std::invalid_argument(fmt::format("{}: {} is not a positive number", name, axis[i]));
    if (i > 0 && !(axis[i] > axis[i - 1]))
      throw std::invalid_argument(fmt::format("{}: not strictly increasing at {}", name, axis[i]));
  }
}

// Index i and weight w of x between axis[i] and axis[i + 1] (w = 0 at the edges).
std::pair<std::size_t, double> axis_position(const std::vector<double>& axis, double x, bool log_scale) {
  if (axis.size() == 1 || x <= axis.front()) return {0, 0.0};
  if (x >= axis.back()) return {axis.size() - 1, 0.0};
  const std::size_t hi = static_cast<std::size_t>(
      std::upper_bound(axis.begin(), axis.end(), x) - axis.begin());
  const std::size_t lo = hi - 1;
  const double w = log_scale ? std::log(x / axis[lo]) / std::log(axis[hi] / axis[lo])
                             : (x - axis[lo]) / (axis[hi] - axis[lo]);
  return {lo, w};
}

void check_occupancy(const std::vector<std::pair<double, double>>& points, const char* name) {
  for (std::size_t i = 0; i < points.size(); ++i) {
    const auto [tiles, factor] = points[i];
    if (!(tiles > 0) || !std::isfinite(tiles))
      throw std::invalid_argument(
          fmt::format("{}: {} query tiles is not a positive number", name, tiles));
    if (!(factor > 0 && factor <= 1))
      throw std::invalid_argument(fmt::format("{}: factor {} outside (0, 1]", name, factor));
    if (i > 0 && !(tiles > points[i - 1].first && factor >= points[i - 1].second))
      throw std::invalid_argument(
          fmt::format("{}: tiles must increase and factors not decrease (at {})", name, tiles));
  }
}

double occupancy_factor(const std::vector<std::pair<double, double>>& points, double tiles) {
  if (points.empty() || !(tiles > 0)) return 1;
  if (tiles <= points.front().first) return points.front().second;
  if (tiles >= points.back().first) return points.back().second;
  const auto hi = std::upper_bound(points.begin(), points.end(), tiles,
                                   [](double x, const auto& p) { return x < p.first; });
  const auto lo = hi - 1;
  const double w = std::log(tiles / lo->first) / std::log(hi->first / lo->first);
  return lo->second * (1 - w) + hi->second * w;
}

}  // namespace

void AttentionTable::validate() const {
  check_table_axis(head_dims, "head_dims");
  check_table_axis(seq_lens, "seq_lens");
  const std::size_t cells = head_dims.size() * seq_lens.size();
  for (const auto* grid : {&forward, &backward}) {
    const char* name = grid == &forward ? "forward" : "backward";
    if (grid->size() != cells)
      throw std::invalid_argument(fmt::format("{}: {} values for {} head dimensions x {} "
                                              "sequence lengths",
                                              name, grid->size(), head_dims.size(),
                                              seq_lens.size()));
    for (double e : *grid)
      if (!(e > 0 && e <= 1))
        throw std::invalid_argument(fmt::format("{}: efficiency {} outside (0, 1]", name, e));
  }
  check_occupancy(occupancy_forward, "occupancy_forward");
  check_occupancy(occupancy_backward, "occupancy_backward");
}

double AttentionTable::efficiency(bool backward_kernel, double head_dim, double seq_len,
                                  double query_tiles) const {
  const std::vector<double>& grid = backward_kernel ? backward : forward;
  const auto [d, wd] = axis_position(head_dims, head_dim, false);
  const auto [s, ws] = axis_position(seq_lens, seq_len, true);
  const std::size_t n = seq_lens.size();
  auto at = [&](std::size_t i, std::size_t j) {
    return grid[std::min(i, head_dims.size() - 1) * n + std::min(j, n - 1)];
  };
  const double lo = at(d, s) * (1 - ws) + at(d, s + 1) * ws;
  const double hi = at(d + 1, s) * (1 - ws) + at(d + 1, s + 1) * ws;
  return (lo * (1 - wd) + hi * wd) *
         occupancy_factor(backward_kernel ? occupancy_backward : occupancy_forward, query_tiles);
}

}  // namespace overlapsim::sim
