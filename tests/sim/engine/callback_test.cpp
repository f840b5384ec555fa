#include "sim/engine/callback.hpp"

#include <gtest/gtest.h>

#include <array>
#include <functional>
#include <memory>
#include <utility>

using overlapsim::sim::Callback;

TEST(Callback, RunsSmallAndLargeCaptures) {
  int calls = 0;
  Callback small([&calls] { ++calls; });
  std::array<char, Callback::kInlineBytes + 64> big{};
  big[0] = 3;
  Callback large([&calls, big] { calls += big[0]; });
  small();
  large();
  EXPECT_EQ(calls, 4);
}

TEST(Callback, EmptyFromNullAndFromEmptyStdFunction) {
  EXPECT_FALSE(Callback());
  EXPECT_FALSE(Callback(nullptr));
  EXPECT_FALSE(Callback(std::function<void()>()));
  void (*none)() = nullptr;
  EXPECT_FALSE(Callback(none));
  EXPECT_TRUE(Callback(std::function<void()>([] {})));
}

// Captures are destroyed exactly once, whether the callable sits inline or on the heap,
// after moves and on reset.
TEST(Callback, MovesAndDestroysCapturesOnce) {
  auto token = std::make_shared<int>(7);
  std::array<char, Callback::kInlineBytes> pad{};
  {
    Callback inline_cb([token] { ++*token; });
    Callback heap_cb([token, pad] { *token += pad[0] + 1; });
    EXPECT_EQ(token.use_count(), 3);
    Callback moved(std::move(inline_cb));
    EXPECT_FALSE(inline_cb);  // NOLINT(bugprone-use-after-move): moved-from is empty
    Callback moved_heap;
    moved_heap = std::move(heap_cb);
    EXPECT_EQ(token.use_count(), 3);
    moved();
    moved_heap();
    EXPECT_EQ(*token, 9);
    moved = nullptr;
    EXPECT_EQ(token.use_count(), 2);
  }
  EXPECT_EQ(token.use_count(), 1);
}
