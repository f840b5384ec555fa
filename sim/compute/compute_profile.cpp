#include "sim/compute/compute_profile.hpp"

namespace overlapsim::sim {

ComputeProfile with_gemm_rates_scaled(ComputeProfile c, double factor) {
  for (auto& [prec, table] : c.gemm_tables) table.scale_rates(factor);  // grid or wave model
  for (auto& [prec, curve] : c.gemm_efficiency)
    for (auto& point : curve.points) point.second *= factor;
  return c;
}

}  // namespace overlapsim::sim
