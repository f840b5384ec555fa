#pragma once
// A curve y(x) given by points, interpolated linearly in log10(x) and held constant
// beyond its first and last point. Efficiency curves of the profile (GEMM efficiency vs
// FLOPs, memory efficiency vs bytes) are of this form.
#include <utility>
#include <vector>

#include "sim/profile/provenance.hpp"

namespace overlapsim::sim {

struct LogCurve {
  std::vector<std::pair<double, double>> points;  // (x > 0, y), x strictly increasing
  Provenance source;

  bool empty() const { return points.empty(); }
  // Throws std::logic_error when empty (loaders reject empty curves).
  double at(double x) const;
};

}  // namespace overlapsim::sim
