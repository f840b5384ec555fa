#pragma once
// One axis of a measured table (compute.gemm_tables' m, n, k; compute.attention_table's
// head dimensions and sequences): its check and where a value falls on it.
#include <cstddef>
#include <string>
#include <vector>

namespace overlapsim::sim {

// Non-empty, positive, strictly increasing; else std::invalid_argument starting with `what`
// ("gemm table: m", "attention table: seq_lens").
void check_table_axis(const std::vector<double>& axis, const std::string& what);

// The grid point below x and the weight of the one above it, linear in log(x) or in x,
// clamped at the ends (the last point with weight 1 at or above it).
struct AxisPosition {
  std::size_t lo = 0;
  double w = 0;
};
AxisPosition axis_position(const std::vector<double>& axis, double x, bool log_scale);

}  // namespace overlapsim::sim
