#include "sim/profile/table_axis.hpp"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

namespace overlapsim::sim {

void check_table_axis(const std::vector<double>& axis, const std::string& what) {
  if (axis.empty()) throw std::invalid_argument(fmt::format("{} is empty", what));
  for (std::size_t i = 0; i < axis.size(); ++i) {
    if (!(axis[i] > 0) || !std::isfinite(axis[i]))
      throw std::invalid_argument(fmt::format("{}[{}] is not positive", what, i));
    if (i > 0 && !(axis[i] > axis[i - 1]))
      throw std::invalid_argument(
          fmt::format("{} is not strictly increasing at index {}", what, i));
  }
}

AxisPosition axis_position(const std::vector<double>& axis, double x, bool log_scale) {
  if (axis.size() == 1 || !(x > axis.front())) return {0, 0.0};
  if (x >= axis.back()) return {axis.size() - 2, 1.0};
  std::size_t hi = 1;
  while (axis[hi] < x) ++hi;
  const double x0 = log_scale ? std::log(axis[hi - 1]) : axis[hi - 1];
  const double x1 = log_scale ? std::log(axis[hi]) : axis[hi];
  return {hi - 1, ((log_scale ? std::log(x) : x) - x0) / (x1 - x0)};
}

}  // namespace overlapsim::sim
