#pragma once
// A min-heap with D children per node over a std::vector, in the style of std::push_heap /
// std::pop_heap. With a million pending flow completions a binary heap pops through ~20
// levels, each a cache miss; with D = 8 it is ~7 levels whose 8 children share one or two
// cache lines. `less(a, b)` orders the heap: the least element is at v.front().
#include <cstddef>
#include <utility>
#include <vector>

namespace overlapsim::sim {

template <std::size_t D, typename T, typename Less>
void dary_sift_down(std::vector<T>& v, std::size_t i, Less less) {
  const std::size_t n = v.size();
  T item = std::move(v[i]);
  for (;;) {
    const std::size_t first = D * i + 1;
    if (first >= n) break;
    const std::size_t last = first + D < n ? first + D : n;
    std::size_t best = first;
    for (std::size_t c = first + 1; c < last; ++c)
      if (less(v[c], v[best])) best = c;
    if (!less(v[best], item)) break;
    v[i] = std::move(v[best]);
    i = best;
  }
  v[i] = std::move(item);
}

template <std::size_t D, typename T, typename Less>
void dary_sift_up(std::vector<T>& v, std::size_t i, Less less) {
  T item = std::move(v[i]);
  while (i > 0) {
    const std::size_t parent = (i - 1) / D;
    if (!less(item, v[parent])) break;
    v[i] = std::move(v[parent]);
    i = parent;
  }
  v[i] = std::move(item);
}

template <std::size_t D, typename T, typename Less>
void dary_make_heap(std::vector<T>& v, Less less) {
  if (v.size() < 2) return;
  for (std::size_t i = (v.size() - 2) / D + 1; i-- > 0;) dary_sift_down<D>(v, i, less);
}

// Sifts up v.back(), just appended.
template <std::size_t D, typename T, typename Less>
void dary_push_heap(std::vector<T>& v, Less less) {
  dary_sift_up<D>(v, v.size() - 1, less);
}

// Removes v.front().
template <std::size_t D, typename T, typename Less>
void dary_pop_heap(std::vector<T>& v, Less less) {
  v.front() = std::move(v.back());
  v.pop_back();
  if (!v.empty()) dary_sift_down<D>(v, 0, less);
}

}  // namespace overlapsim::sim
