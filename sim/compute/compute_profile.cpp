#include "sim/compute/compute_profile.hpp"

namespace overlapsim::sim {

ComputeProfile with_gemm_rates_scaled(ComputeProfile c, double factor) {
  for (auto& [prec, table] : c.gemm_tables)
    for (double& r : table.achieved_flops_per_s) r *= factor;
  for (auto& [prec, curve] : c.gemm_efficiency)
    for (auto& point : curve.points) point.second *= factor;
  return c;
}

}  // namespace overlapsim::sim
