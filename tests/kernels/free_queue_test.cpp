// The parked frees of rank threads (kernels/harness/free_queue.hpp): nothing is freed
// before release_all, which frees in parking order; the queue is per thread and scoped.
// Host only: the releaser is a recorder, not cudaFree.
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "kernels/harness/free_queue.hpp"

namespace overlapsim::kernels {
namespace {

std::vector<void*>& released() {
  thread_local std::vector<void*> log;
  return log;
}
void record(const PendingFree& f) { released().push_back(f.ptr); }

int a = 0, b = 0, c = 0;

TEST(FreeQueue, NothingIsFreedBeforeReleaseAllThenAllInOrder) {
  released().clear();
  FreeQueue q(&record);
  q.push({&a, 0, false});
  q.push({&b, 1, false});
  q.push({&c, -1, true});
  EXPECT_EQ(q.size(), 3u);
  EXPECT_TRUE(released().empty());
  EXPECT_EQ(q.release_all(), 3u);
  EXPECT_EQ(released(), (std::vector<void*>{&a, &b, &c}));
  EXPECT_EQ(q.size(), 0u);
  EXPECT_EQ(q.release_all(), 0u);
  EXPECT_EQ(released().size(), 3u);
}

TEST(FreeQueue, ScopeInstallsForThisThreadOnlyAndReleasesWhatIsLeft) {
  released().clear();
  EXPECT_EQ(thread_free_queue(), nullptr);
  FreeQueue q(&record);
  {
    ScopedFreeQueue scope(q);
    EXPECT_EQ(thread_free_queue(), &q);
    FreeQueue* seen_elsewhere = &q;
    std::thread([&] { seen_elsewhere = thread_free_queue(); }).join();
    EXPECT_EQ(seen_elsewhere, nullptr) << "another thread must free at once";
    thread_free_queue()->push({&a, 0, false});
    EXPECT_TRUE(released().empty());
  }
  EXPECT_EQ(thread_free_queue(), nullptr);
  EXPECT_EQ(released(), std::vector<void*>{&a});
}

TEST(FreeQueue, NestedScopesRestoreTheOuterQueue) {
  released().clear();
  FreeQueue outer(&record), inner(&record);
  ScopedFreeQueue o(outer);
  {
    ScopedFreeQueue i(inner);
    EXPECT_EQ(thread_free_queue(), &inner);
    inner.push({&b, 0, false});
  }
  EXPECT_EQ(released(), std::vector<void*>{&b});
  EXPECT_EQ(thread_free_queue(), &outer);
  outer.push({&c, 0, false});
  EXPECT_EQ(released().size(), 1u);
  outer.release_all();
  EXPECT_EQ(released(), (std::vector<void*>{&b, &c}));
}

TEST(FreeQueue, DestructionReleasesWhatWasNeverReleased) {
  released().clear();
  {
    FreeQueue q(&record);
    q.push({&a, 0, false});
  }
  EXPECT_EQ(released(), std::vector<void*>{&a});
}

}  // namespace
}  // namespace overlapsim::kernels
