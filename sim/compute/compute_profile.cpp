#include "sim/compute/compute_profile.hpp"

#include <algorithm>

namespace overlapsim::sim {

double ComputeProfile::clock_speedup(double idle_fraction) const {
  if (!idle_clock_boost) return 1.0;
  return 1.0 + idle_clock_boost->value * std::clamp(idle_fraction, 0.0, 1.0);
}

ComputeProfile with_gemm_rates_scaled(ComputeProfile c, double factor) {
  for (auto& [prec, table] : c.gemm_tables) table.scale_rates(factor);  // grid or wave model
  for (auto& [prec, curve] : c.gemm_efficiency)
    for (auto& point : curve.points) point.second *= factor;
  return c;
}

}  // namespace overlapsim::sim
