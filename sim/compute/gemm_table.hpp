#pragma once
// Measured GEMM throughput over a grid of shapes: achieved FLOP/s at every (m, n, k) of
// m_values x n_values x k_values, interpolated trilinearly in log(m), log(n), log(k),
// log(rate) and clamped to the grid's edges. Calibrated profiles fill this from
// overlap-bench runs; where a table exists for a precision it replaces the GEMM
// efficiency curve.
#include <cstdint>
#include <vector>

#include "sim/compute/provenance.hpp"

namespace overlapsim::sim {

struct GemmTable {
  std::vector<double> m_values, n_values, k_values;  // each strictly increasing, > 0
  // achieved_flops_per_s[(im * n_values.size() + in) * k_values.size() + ik]
  std::vector<double> achieved_flops_per_s;
  Provenance source;

  bool empty() const { return achieved_flops_per_s.empty(); }
  // Throws std::invalid_argument naming what is wrong (sizes, ordering, non-positive).
  void validate() const;
  double rate_flops_per_s(double m, double n, double k) const;
};

}  // namespace overlapsim::sim
