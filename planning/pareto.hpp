#pragma once
// The cost-time Pareto front: the points no other point beats on both step time and cost
// (one as fast and at most as costly, and strictly better on one of the two).
#include <cstddef>
#include <vector>

namespace overlapsim::planning {

struct TimeCost {
  double time = 0;
  double cost = 0;
};

// Indices into `points` of the front, ordered by time ascending (ties: by cost, then index).
// Of exact duplicates only the first (lowest index) is kept.
std::vector<std::size_t> pareto_front(const std::vector<TimeCost>& points);

}  // namespace overlapsim::planning
