#include "planning/pareto.hpp"

#include <algorithm>
#include <numeric>

namespace overlapsim::planning {

std::vector<std::size_t> pareto_front(const std::vector<TimeCost>& p) {
  std::vector<std::size_t> order(p.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    if (p[a].time != p[b].time) return p[a].time < p[b].time;
    if (p[a].cost != p[b].cost) return p[a].cost < p[b].cost;
    return a < b;
  });
  // Sweeping by time, a point is on the front when it is cheaper than every faster one.
  std::vector<std::size_t> front;
  for (std::size_t i : order)
    if (front.empty() || p[i].cost < p[front.back()].cost) front.push_back(i);
  return front;
}

}  // namespace overlapsim::planning
