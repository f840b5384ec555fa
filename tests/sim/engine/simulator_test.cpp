#include "sim/engine/simulator.hpp"

#include <cmath>
#include <gtest/gtest.h>
#include <limits>
#include <vector>

using overlapsim::sim::Simulator;

TEST(Simulator, RunsEventsInTimeOrder) {
  Simulator sim;
  std::vector<int> order;
  sim.schedule(3.0, [&] { order.push_back(3); });
  sim.schedule(1.0, [&] { order.push_back(1); });
  sim.schedule(2.0, [&] { order.push_back(2); });
  sim.run();
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3}));
  EXPECT_DOUBLE_EQ(sim.now(), 3.0);
  EXPECT_EQ(sim.events_processed(), 3u);
}

TEST(Simulator, EqualTimesRunInSchedulingOrder) {
  Simulator sim;
  std::vector<int> order;
  for (int i = 0; i < 100; ++i) sim.schedule(1.0, [&order, i] { order.push_back(i); });
  sim.run();
  ASSERT_EQ(order.size(), 100u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(order[i], i);
}

TEST(Simulator, CallbacksCanScheduleRelativeToNow) {
  Simulator sim;
  double fired_at = -1;
  sim.schedule(1.5, [&] { sim.schedule(0.25, [&] { fired_at = sim.now(); }); });
  sim.run();
  EXPECT_DOUBLE_EQ(fired_at, 1.75);
}

TEST(Simulator, RejectsNegativeAndNaNDelays) {
  Simulator sim;
  EXPECT_THROW(sim.schedule(-1e-9, [] {}), std::invalid_argument);
  EXPECT_THROW(sim.schedule(std::nan(""), [] {}), std::invalid_argument);
  EXPECT_THROW(sim.schedule(std::numeric_limits<double>::infinity(), [] {}),
               std::invalid_argument);
  EXPECT_THROW(sim.schedule(1.0, nullptr), std::invalid_argument);
}

TEST(Simulator, CancelledEventsDoNotRunOrAdvanceTime) {
  Simulator sim;
  bool ran = false;
  auto id = sim.schedule(5.0, [&] { ran = true; });
  sim.schedule(1.0, [] {});
  EXPECT_TRUE(sim.cancel(id));
  EXPECT_FALSE(sim.cancel(id));
  sim.run();
  EXPECT_FALSE(ran);
  EXPECT_DOUBLE_EQ(sim.now(), 1.0);
  EXPECT_EQ(sim.events_processed(), 1u);
}

TEST(Simulator, StaleIdDoesNotCancelReusedSlot) {
  Simulator sim;
  auto first = sim.schedule(1.0, [] {});
  sim.run();
  bool ran = false;
  sim.schedule(1.0, [&] { ran = true; });  // reuses the first event's slot
  EXPECT_FALSE(sim.cancel(first));
  sim.run();
  EXPECT_TRUE(ran);
}

TEST(Simulator, RunUntilStopsAtTheLimitAndResumes) {
  Simulator sim;
  std::vector<double> times;
  for (double t : {1.0, 2.0, 3.0}) sim.schedule(t, [&] { times.push_back(sim.now()); });
  sim.run_until(2.0);
  EXPECT_EQ(times.size(), 2u);
  EXPECT_DOUBLE_EQ(sim.now(), 2.0);
  EXPECT_EQ(sim.pending(), 1u);
  sim.run_until(2.5);
  EXPECT_DOUBLE_EQ(sim.now(), 2.5);
  sim.run();
  EXPECT_EQ(times, (std::vector<double>{1.0, 2.0, 3.0}));
  EXPECT_THROW(sim.run_until(1.0), std::invalid_argument);
}

TEST(Simulator, StopEndsRunEarly) {
  Simulator sim;
  int count = 0;
  sim.schedule(1.0, [&] {
    ++count;
    sim.stop();
  });
  sim.schedule(2.0, [&] { ++count; });
  sim.run();
  EXPECT_EQ(count, 1);
  sim.run();
  EXPECT_EQ(count, 2);
}

TEST(Simulator, IdenticalRunsAreBitIdentical) {
  auto trace = [] {
    Simulator sim;
    std::vector<double> out;
    std::function<void(int)> chain = [&](int depth) {
      out.push_back(sim.now());
      if (depth < 200) sim.schedule(0.1 * (depth % 7) + 1e-7, [&, depth] { chain(depth + 1); });
    };
    sim.schedule(0.0, [&] { chain(0); });
    sim.run();
    return out;
  };
  EXPECT_EQ(trace(), trace());
}
