#include "sim/profile/compute_profile.hpp"

#include <algorithm>

namespace overlapsim::sim {

double ComputeProfile::clock_speedup(double idle_fraction) const {
  if (!idle_clock_boost) return 1.0;
  return 1.0 + idle_clock_boost->value * std::clamp(idle_fraction, 0.0, 1.0);
}

std::optional<ComputeProfile> own_gemm_profile(const ComputeProfile& c) {
  if (c.own_gemm_tables.empty()) return std::nullopt;
  ComputeProfile own = c;
  own.gemm_tables = c.own_gemm_tables;
  own.own_gemm_tables.clear();
  return own;
}

ComputeProfile with_gemm_rates_scaled(ComputeProfile c, double factor) {
  for (auto& [prec, table] : c.gemm_tables) table.scale_rates(factor);  // grid or wave model
  for (auto& [prec, table] : c.own_gemm_tables) table.scale_rates(factor);
  for (auto& [prec, curve] : c.gemm_efficiency)
    for (auto& point : curve.points) point.second *= factor;
  return c;
}

}  // namespace overlapsim::sim
