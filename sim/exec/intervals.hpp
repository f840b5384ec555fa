#pragma once
// Lengths of unions and intersections of time intervals (for overlapped-communication
// accounting).
#include <utility>
#include <vector>

namespace overlapsim::sim {

using Interval = std::pair<double, double>;  // [start, end), start <= end

// Sorts and merges overlapping or touching intervals.
std::vector<Interval> merge_intervals(std::vector<Interval> intervals);
double total_length(const std::vector<Interval>& merged);
// Length of the intersection of two merged (sorted, disjoint) interval lists.
double intersection_length(const std::vector<Interval>& a, const std::vector<Interval>& b);
// Length of [a0, a1) ∩ [b0, b1).
inline double overlap_length(double a0, double a1, double b0, double b1) {
  const double lo = a0 > b0 ? a0 : b0;
  const double hi = a1 < b1 ? a1 : b1;
  return hi > lo ? hi - lo : 0.0;
}

}  // namespace overlapsim::sim
