#include "sim/exec/intervals.hpp"

#include <algorithm>

namespace overlapsim::sim {

std::vector<Interval> merge_intervals(std::vector<Interval> intervals) {
  // A rank's intervals are recorded as simulated time advances, so they mostly come sorted;
  // checking is linear, sorting a million of them was a few percent of a long pipeline.
  if (!std::is_sorted(intervals.begin(), intervals.end()))
    std::sort(intervals.begin(), intervals.end());
  std::vector<Interval> out;
  for (const auto& iv : intervals) {
    if (iv.second <= iv.first) continue;
    if (!out.empty() && iv.first <= out.back().second)
      out.back().second = std::max(out.back().second, iv.second);
    else
      out.push_back(iv);
  }
  return out;
}

double total_length(const std::vector<Interval>& merged) {
  double sum = 0;
  for (const auto& [a, b] : merged) sum += b - a;
  return sum;
}

double intersection_length(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  double sum = 0;
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    sum += overlap_length(a[i].first, a[i].second, b[j].first, b[j].second);
    if (a[i].second < b[j].second)
      ++i;
    else
      ++j;
  }
  return sum;
}

}  // namespace overlapsim::sim
