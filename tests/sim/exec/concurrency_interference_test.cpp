// The step's own concurrency pays interference (ExecOptions::concurrent_comm_slowdown): a
// compute op that runs while a collective of its rank moves data progresses at 1/s of its
// rate for that time. Closed forms on the unit profile and bytes / 1 GB/s collectives.
#include <gtest/gtest.h>

#include "sim/exec/step_executor.hpp"
#include "tests/sim/exec/exec_test_util.hpp"

namespace overlapsim::sim {
namespace {

using testing::add;
using testing::collective_op;
using testing::compute_op;

// Per rank: a 1 ms collective on the data-parallel stream beside a 3 ms GEMM (both ready
// at 0), then a 1 ms GEMM after both.
StepGraph gemm_beside_collective() {
  StepGraph step = testing::numbered_step(2, {{"dp", {0, 1}}});
  for (auto& prog : step.ranks) {
    const OpVertex ar = add(prog, collective_op("ar", 0, 1.0));
    const OpVertex g = add(prog, compute_op("g", 3.0));
    add(prog, compute_op("h", 1.0), {ar, g});
  }
  return step;
}

StepResult run(const StepGraph& step, double slowdown) {
  testing::UnitExecRig rig(2, 8);
  ExecOptions o;
  o.concurrent_comm_slowdown = slowdown;
  StepExecutor exec(step, rig.model, rig.net, o);
  std::vector<CollectiveRequest> log;
  exec.set_collective_launcher(testing::ClosedFormLauncher{&rig.sim, &log});
  SequentialDesign seq;
  return exec.run(seq);
}

TEST(ConcurrencyInterference, ComputeBesideCommunicationSlowsByTheFactor) {
  const StepGraph step = gemm_beside_collective();
  EXPECT_NEAR(run(step, 1.0).step_time_s, 4e-3, 1e-12);
  // g: 1 ms at 1/s of its rate (1/s ms of work), then the rest alone: 3 + 1 (1 - 1/s) ms.
  for (double s : {1.25, 2.0}) {
    const StepResult r = run(step, s);
    EXPECT_NEAR(r.step_time_s, 4e-3 + 1e-3 * (1 - 1 / s), 1e-12) << s;
    EXPECT_NEAR(r.compute_s, r.step_time_s, 1e-12);  // still no idle: the identity holds
    EXPECT_NEAR(r.compute_s + r.exposed_comm_s + r.bubble_s, r.step_time_s, 1e-12);
  }
}

TEST(ConcurrencyInterference, ComputeAfterCommunicationIsNotCharged) {
  StepGraph step = testing::numbered_step(2, {{"dp", {0, 1}}});
  for (auto& prog : step.ranks) {
    const OpVertex ar = add(prog, collective_op("ar", 0, 1.0));
    add(prog, compute_op("g", 3.0), {ar});
  }
  EXPECT_NEAR(run(step, 2.0).step_time_s, 4e-3, 1e-12);
}

}  // namespace
}  // namespace overlapsim::sim
