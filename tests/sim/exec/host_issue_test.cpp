// The host that issues a rank's ops in program order (OpNode::host_s, host_sync): closed
// forms on one rank, every compute op 1 ms unless said otherwise.
#include <gtest/gtest.h>

#include "sim/exec/overlap_design.hpp"
#include "sim/exec/step_executor.hpp"
#include "tests/sim/exec/exec_test_util.hpp"

namespace overlapsim::sim {
// Named, not anonymous: the unity build puts the other executor tests' constants beside these.
namespace host_issue_tests {

using namespace overlapsim::sim::testing;
constexpr double kMs = 1e-3;
constexpr double kTol = 1e-12;

OpNode issued(OpNode node, double host_ms, bool sync = false, double sync_ms = 0) {
  node.host_s = host_ms * kMs;
  node.host_sync = sync;
  node.host_sync_s = sync_ms * kMs;
  return node;
}

StepResult run_one(const StepGraph& step) {
  UnitExecRig rig(step.world_size, 8);
  StepExecutor exec(step, rig.model, rig.net, ExecOptions{});
  std::vector<CollectiveRequest> requests;
  exec.set_collective_launcher(ClosedFormLauncher{&rig.sim, &requests});
  SequentialDesign design;
  StepResult r = exec.run(design);
  // The compute stream's time splits into compute, exposed communication, bubbles and the
  // host's wait.
  EXPECT_NEAR(r.compute_s + r.exposed_comm_s + r.bubble_s + r.host_wait_s, r.step_time_s, kTol);
  return r;
}

// Issued every 2 ms, each op runs 1 ms after its issue: the host sets the pace.
TEST(HostIssue, AHostSlowerThanTheGpuSetsThePace) {
  StepGraph step = numbered_step(1);
  auto& prog = step.ranks[0];
  const OpVertex a = add(prog, issued(compute_op("a", 1.0), 2.0));
  const OpVertex b = add(prog, issued(compute_op("b", 1.0), 2.0), {a});
  add(prog, issued(compute_op("c", 1.0), 2.0), {b});
  const StepResult r = run_one(step);
  EXPECT_NEAR(r.step_time_s, 7.0 * kMs, kTol);  // issued at 2, 4, 6
  EXPECT_NEAR(r.compute_s, 3.0 * kMs, kTol);
  EXPECT_NEAR(r.host_wait_s, 4.0 * kMs, kTol);  // idle 0-2, 3-4, 5-6
  EXPECT_NEAR(r.exposed_comm_s, 0, kTol);
}

// A host faster than the GPU runs ahead: only the first launch is exposed.
TEST(HostIssue, AHostFasterThanTheGpuRunsAhead) {
  StepGraph step = numbered_step(1);
  auto& prog = step.ranks[0];
  const OpVertex a = add(prog, issued(compute_op("a", 1.0), 0.25));
  const OpVertex b = add(prog, issued(compute_op("b", 1.0), 0.25), {a});
  add(prog, issued(compute_op("c", 1.0), 0.25), {b});
  const StepResult r = run_one(step);
  EXPECT_NEAR(r.step_time_s, 3.25 * kMs, kTol);
  EXPECT_NEAR(r.host_wait_s, 0.25 * kMs, kTol);
}

// The host waits for a's result (a device-to-host copy), then the copy's round trip, then
// issues b: b starts at 1 + 0.2 + 0.3 ms, where without the sync it would start at 1 ms.
TEST(HostIssue, ASyncStopsTheHostRunningAhead) {
  for (bool sync : {false, true}) {
    StepGraph step = numbered_step(1);
    auto& prog = step.ranks[0];
    const OpVertex a = add(prog, issued(compute_op("a", 1.0), 0.0, sync, 0.2));
    add(prog, issued(compute_op("b", 1.0), 0.3), {a});
    const StepResult r = run_one(step);
    EXPECT_NEAR(r.step_time_s, (sync ? 2.5 : 2.0) * kMs, kTol) << sync;
    EXPECT_NEAR(r.host_wait_s, (sync ? 0.5 : 0.0) * kMs, kTol) << sync;
  }
}

// An expert-parallel collective is issued inline: after the sync on a it waits 0.5 ms for
// the host, then moves data 1 ms, then b runs. The compute stream idles 1.5 ms: 0.5 host,
// 1.0 exposed communication. (Two ranks: a collective of one rank moves nothing.)
TEST(HostIssue, InlineCollectivesWaitForTheHost) {
  StepGraph step = numbered_step(2, {CommGroup{"ep", {0, 1}}});
  for (auto& prog : step.ranks) {
    const OpVertex a = add(prog, issued(compute_op("a", 1.0), 0.0, true));
    const OpVertex x =
        add(prog, issued(collective_op("x", 0, 1.0, StreamKind::ExpertComm), 0.5), {a});
    add(prog, compute_op("b", 1.0), {x});
  }
  const StepResult r = run_one(step);
  EXPECT_NEAR(r.step_time_s, 3.5 * kMs, kTol);
  EXPECT_NEAR(r.host_wait_s, 0.5 * kMs, kTol);
  EXPECT_NEAR(r.exposed_comm_s, 1.0 * kMs, kTol);
}

// Data-parallel buckets are issued by hooks as gradients complete, not in the graph's
// order: their host time does not hold them back.
TEST(HostIssue, DataParallelBucketsAreNotHeldByTheHost) {
  StepGraph step = numbered_step(2, {CommGroup{"dp", {0, 1}}});
  for (auto& prog : step.ranks) {
    const OpVertex a = add(prog, issued(compute_op("a", 1.0), 0.0));
    add(prog, issued(collective_op("bucket", 0, 1.0, StreamKind::DataComm), 5.0), {a});
  }
  const StepResult r = run_one(step);
  EXPECT_NEAR(r.step_time_s, 2.0 * kMs, kTol);
  EXPECT_NEAR(r.host_wait_s, 0, kTol);
}

}  // namespace host_issue_tests
}  // namespace overlapsim::sim
