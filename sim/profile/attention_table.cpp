#include "sim/profile/attention_table.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "sim/profile/table_axis.hpp"

namespace overlapsim::sim {
namespace {

// Tiles increasing (LogCurve's own rule), factors in (0, 1] and not decreasing.
void check_occupancy(const LogCurve& curve, const char* name) {
  const auto& points = curve.points;
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

}  // namespace

void AttentionTable::validate() const {
  check_table_axis(head_dims, "attention table: head_dims");
  check_table_axis(seq_lens, "attention table: seq_lens");
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
  const LogCurve& occupancy = backward_kernel ? occupancy_backward : occupancy_forward;
  const double factor = occupancy.empty() || !(query_tiles > 0) ? 1 : occupancy.at(query_tiles);
  return (lo * (1 - wd) + hi * wd) * factor;
}

}  // namespace overlapsim::sim
