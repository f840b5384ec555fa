#include "sim/profile/interference_profile.hpp"

namespace overlapsim::sim {

double InterferenceCurve::slowdown(double x) const {
  if (points.empty()) return 1.0;
  if (x <= points.front().first) return points.front().second;
  if (x >= points.back().first) return points.back().second;
  for (std::size_t i = 1; i < points.size(); ++i) {
    if (x <= points[i].first) {
      const auto& [x0, y0] = points[i - 1];
      const auto& [x1, y1] = points[i];
      return y0 + (x - x0) / (x1 - x0) * (y1 - y0);
    }
  }
  return points.back().second;
}

namespace {
double lookup(const std::vector<InterferenceCurve>& curves, const std::string& victim, double x) {
  for (const auto& c : curves)
    if (c.victim == victim) return c.slowdown(x);
  return 1.0;
}
}  // namespace

double InterferenceProfile::compute_slowdown(const std::string& op_kind, double comm_ctas) const {
  return lookup(compute_under_comm, op_kind, comm_ctas);
}

double InterferenceProfile::comm_slowdown(const std::string& collective,
                                          double compute_sm_fraction) const {
  return lookup(comm_under_compute, collective, compute_sm_fraction);
}

}  // namespace overlapsim::sim
