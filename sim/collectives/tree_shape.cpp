#include "sim/collectives/tree_shape.hpp"

namespace overlapsim::sim::detail {

std::vector<int> in_order_tree_parents(int m) {
  std::vector<int> parent(static_cast<std::size_t>(m), -1);
  struct Range {
    int lo, hi, parent;
  };
  std::vector<Range> todo;
  if (m > 1) todo.push_back({1, m - 1, 0});
  while (!todo.empty()) {
    const Range r = todo.back();
    todo.pop_back();
    int pivot = r.lo;
    for (int bit = 30; bit >= 0; --bit) {
      const int v = (r.hi >> bit) << bit;
      if (v >= r.lo) {
        pivot = v;
        break;
      }
    }
    parent[static_cast<std::size_t>(pivot)] = r.parent;
    if (r.lo <= pivot - 1) todo.push_back({r.lo, pivot - 1, pivot});
    if (pivot + 1 <= r.hi) todo.push_back({pivot + 1, r.hi, pivot});
  }
  return parent;
}

std::vector<int> second_tree_parents(const std::vector<int>& first) {
  const int m = static_cast<int>(first.size());
  auto label = [m](int q) { return m % 2 == 0 ? m - 1 - q : (q + 1) % m; };
  std::vector<int> parent(first.size(), -1);
  for (int q = 0; q < m; ++q) {
    const int p = first[static_cast<std::size_t>(q)];
    parent[static_cast<std::size_t>(label(q))] = p < 0 ? -1 : label(p);
  }
  return parent;
}

}  // namespace overlapsim::sim::detail
