// A sweep gives what a serial loop of run_scenario gives, in order, on any thread count,
// and reports a failing scenario's error.
#include "planning/sweep.hpp"

#include <gtest/gtest.h>

#include "sim/overlap/pair_simulation.hpp"
#include "sim/topology/builders.hpp"
#include "tests/sim/overlap/overlap_test_util.hpp"

namespace overlapsim::planning {
namespace {

// One GEMM of m x 4096 x 4096 then an all-reduce of `bytes` on each of two ranks.
sim::StepGraph step_of(std::int64_t m, std::uint64_t bytes) {
  sim::PairCase pc;
  pc.compute = sim::testing::gemm_op("gemm", m, 4096, 4096);
  pc.comm_bytes = bytes;
  return sim::pair_step(pc);
}

TEST(Sweep, ThreadsGiveTheSerialResultsInOrder) {
  const sim::Topology topo = sim::build_nvswitch_node({2, 400e9, 0.0});
  const sim::Profile profile = sim::testing::design_profile(false);
  std::vector<sim::StepGraph> steps;
  for (std::int64_t m : {1024, 2048, 4096, 8192, 16384})
    steps.push_back(step_of(m, static_cast<std::uint64_t>(m) * 4096 * 2));
  sim::ScenarioOptions o;
  o.designs = {"sequential", "decomposed", "tilewise"};
  o.zero_wall_times = true;
  std::vector<sim::Scenario> scenarios;
  for (const auto& s : steps) scenarios.push_back({s, topo, profile, o});
  std::vector<double> serial;
  for (const auto& sc : scenarios)
    for (const auto& run : sim::run_scenario(sc).runs) serial.push_back(run.result.step_time_s);
  for (int threads : {1, 2, 3, 8}) {
    const auto results = run_sweep(scenarios, {threads});
    ASSERT_EQ(results.size(), scenarios.size());
    std::vector<double> swept;
    for (const auto& r : results)
      for (const auto& run : r.runs) swept.push_back(run.result.step_time_s);
    EXPECT_EQ(swept, serial) << threads << " threads";
  }
}

TEST(Sweep, AFailingScenarioRethrowsItsError) {
  const sim::Topology topo = sim::build_nvswitch_node({2, 400e9, 0.0});
  const sim::Profile profile = sim::testing::design_profile(false);
  const sim::StepGraph step = step_of(1024, 1 << 20);
  sim::ScenarioOptions bad;
  bad.designs = {"no-such-design"};
  const std::vector<sim::Scenario> scenarios = {{step, topo, profile, {}},
                                                {step, topo, profile, bad}};
  EXPECT_THROW(run_sweep(scenarios, {2}), std::invalid_argument);
  EXPECT_THROW(run_sweep(scenarios, {0}), std::invalid_argument);
}

}  // namespace
}  // namespace overlapsim::planning
