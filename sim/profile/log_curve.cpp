#include "sim/profile/log_curve.hpp"

#include <cmath>
#include <stdexcept>

namespace overlapsim::sim {

double LogCurve::at(double x) const {
  if (points.empty()) throw std::logic_error("LogCurve::at on an empty curve");
  if (!(x > points.front().first)) return points.front().second;
  if (x >= points.back().first) return points.back().second;
  const double lx = std::log10(x);
  for (std::size_t i = 1; i < points.size(); ++i) {
    if (x <= points[i].first) {
      const double l0 = std::log10(points[i - 1].first);
      const double l1 = std::log10(points[i].first);
      const double f = (lx - l0) / (l1 - l0);
      return points[i - 1].second + f * (points[i].second - points[i - 1].second);
    }
  }
  return points.back().second;
}

}  // namespace overlapsim::sim
