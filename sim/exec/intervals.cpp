#include "sim/exec/intervals.hpp"

#include <algorithm>

namespace overlapsim::sim {

std::vector<Interval> merge_intervals(std::vector<Interval> intervals) {
  // A rank's intervals are recorded as simulated time advances, so they mostly come sorted;
  // checking is linear, sorting a million of them was a few percent of a long pipeline.
  if (!std::is_sorted(intervals.begin(), intervals.end()))
    std::sort(intervals.begin(), intervals.end());
  // Merged in place: the k merged intervals so far never overtake the one being read.
  std::size_t k = 0;
  for (std::size_t i = 0; i < intervals.size(); ++i) {
    const Interval iv = intervals[i];
    if (iv.second <= iv.first) continue;
    if (k > 0 && iv.first <= intervals[k - 1].second)
      intervals[k - 1].second = std::max(intervals[k - 1].second, iv.second);
    else
      intervals[k++] = iv;
  }
  intervals.resize(k);
  return intervals;
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
