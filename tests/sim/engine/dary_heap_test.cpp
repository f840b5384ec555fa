#include "sim/engine/dary_heap.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

using namespace overlapsim::sim;

namespace {
bool less(const int& a, const int& b) { return a < b; }
}  // namespace

TEST(DaryHeap, PopsInOrderAfterMixedPushesAndHeapify) {
  std::mt19937_64 rng(5);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<int> heap, all;
    for (int i = 0; i < static_cast<int>(rng() % 300); ++i)
      heap.push_back(static_cast<int>(rng() % 1000));
    all = heap;
    dary_make_heap<8>(heap, less);
    std::vector<int> popped;
    for (int step = 0; step < 400; ++step) {
      if (rng() % 3 != 0) {
        const int x = static_cast<int>(rng() % 1000);
        heap.push_back(x);
        all.push_back(x);
        dary_push_heap<8>(heap, less);
      } else if (!heap.empty()) {
        const int top = heap.front();
        EXPECT_EQ(top, *std::min_element(heap.begin(), heap.end()));
        dary_pop_heap<8>(heap, less);
        all.erase(std::find(all.begin(), all.end(), top));
      }
    }
    while (!heap.empty()) {
      popped.push_back(heap.front());
      dary_pop_heap<8>(heap, less);
    }
    std::sort(all.begin(), all.end());
    EXPECT_EQ(popped, all);
  }
}
