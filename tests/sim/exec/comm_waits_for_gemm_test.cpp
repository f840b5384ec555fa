// NCCL kernels find no SM while a vendor GEMM kernel runs (ExecOptions::
// comm_waits_for_gemm_kernel): a communication op that becomes ready under a GEMM op starts
// at that GEMM's next kernel boundary; on a default-priority stream the same under a
// memory-bound op (comm_waits_for_memory_kernel). Closed forms on the unit profile and
// bytes / 1 GB/s collectives.
#include <gtest/gtest.h>

#include "sim/exec/step_executor.hpp"
#include "tests/sim/exec/exec_test_util.hpp"

namespace overlapsim::sim {
namespace {

using testing::add;
using testing::collective_op;
using testing::compute_op;

// Per rank, both streams from 0: on the compute stream a 4 ms op of `kind` (a GEMM of
// `batch` kernels, or a memory-bound op of `batch` launches); on the data-parallel stream
// collectives of 0.5, 1 and 3.5 ms one after another, on a high-priority stream if
// `high_priority`; then a 1 ms GEMM after the op and the last collective.
StepGraph collectives_beside(OpKind kind, std::int64_t batch, bool high_priority = false) {
  StepGraph step = testing::numbered_step(2, {{"dp", {0, 1}}});
  for (auto& prog : step.ranks) {
    OpNode g = compute_op("g", 4.0);
    g.kind = kind;
    g.gemm.batch = batch;
    if (kind != OpKind::Gemm) {
      g.bytes = 4'000'000'000;  // 4 ms at the unit profile's 1 TB/s
      g.launches = static_cast<int>(batch);
    }
    const OpVertex gv = add(prog, g);
    OpNode c[3] = {collective_op("c0", 0, 0.5), collective_op("c1", 0, 1.0),
                   collective_op("c2", 0, 3.5)};
    for (OpNode& n : c) n.high_priority = high_priority;
    const OpVertex c0 = add(prog, c[0]);
    const OpVertex c1 = add(prog, c[1], {c0});
    const OpVertex c2 = add(prog, c[2], {c1});
    add(prog, compute_op("h", 1.0), {gv, c2});
  }
  return step;
}

double step_s(const StepGraph& step, bool waits, double slowdown = 1.0,
              bool waits_for_memory = false) {
  ExecOptions o;
  o.concurrent_comm_slowdown = slowdown;
  o.comm_waits_for_gemm_kernel = waits;
  o.comm_waits_for_memory_kernel = waits_for_memory;
  return testing::run_sequential(step, o).step_time_s;
}

TEST(CommWaitsForGemmKernel, OffTheCollectivesRunBackToBack) {
  // c0 0-0.5, c1 0.5-1.5, c2 1.5-5, h 5-6.
  EXPECT_NEAR(step_s(collectives_beside(OpKind::Gemm, 1), false), 6e-3, 1e-12);
}

TEST(CommWaitsForGemmKernel, ACollectiveWaitsForTheRunningKernelsEnd) {
  // c0 is ready when g starts and goes first; c1, ready at 0.5 ms under g's one 4 ms
  // kernel, starts when g ends: c1 4-5, c2 5-8.5, h 8.5-9.5.
  EXPECT_NEAR(step_s(collectives_beside(OpKind::Gemm, 1), true), 9.5e-3, 1e-12);
}

TEST(CommWaitsForGemmKernel, AGroupedGemmLetsItInAtItsNextKernelBoundary) {
  // Four kernels of 1 ms: c1 ready at 0.5 starts at 1 (1-2); c2, ready at 2, a boundary,
  // starts at once (2-5.5); h 5.5-6.5.
  EXPECT_NEAR(step_s(collectives_beside(OpKind::Gemm, 4), true), 6.5e-3, 1e-12);
}

TEST(CommWaitsForGemmKernel, AMemoryBoundOpDoesNotHoldTheSms) {
  // Its CTAs retire as they finish: no wait, as with the rule off.
  EXPECT_NEAR(step_s(collectives_beside(OpKind::Elementwise, 1), true), 6e-3, 1e-9);
}

TEST(CommWaitsForGemmKernel, TheWaitLastsUntilTheSlowedGemmEnds) {
  // Slowdown 2 while c0 moves data (0-0.5): g loses 0.25 ms of work and ends at 4.25;
  // c1 waits for that end, not g's 4 ms alone: c1 4.25-5.25, c2 5.25-8.75, h 8.75-9.75.
  EXPECT_NEAR(step_s(collectives_beside(OpKind::Gemm, 1), true, 2.0), 9.75e-3, 1e-12);
}

TEST(CommWaitsForMemoryKernel, ADefaultPriorityCollectiveWaitsForTheKernelsEnd) {
  // As under the GEMM: c1, ready at 0.5 ms under the one 4 ms kernel, runs 4-5; c2 5-8.5,
  // h 8.5-9.5.
  EXPECT_NEAR(step_s(collectives_beside(OpKind::Elementwise, 1), true, 1.0, true), 9.5e-3, 1e-12);
}

TEST(CommWaitsForMemoryKernel, SeveralLaunchesLetItInAtTheNextOne) {
  // Four launches of 1 ms: c1 1-2, c2 2-5.5, h 5.5-6.5.
  EXPECT_NEAR(step_s(collectives_beside(OpKind::Elementwise, 4), true, 1.0, true), 6.5e-3, 1e-12);
}

TEST(CommWaitsForMemoryKernel, AHighPriorityCollectiveGoesFirst) {
  // Its CTAs go ahead of the kernel's remaining ones: back to back as with the rule off.
  EXPECT_NEAR(step_s(collectives_beside(OpKind::Elementwise, 1, true), true, 1.0, true), 6e-3,
              1e-9);
}

TEST(CommWaitsForMemoryKernel, AHighPriorityCollectiveStillWaitsForAGemmKernel) {
  // Priority does not preempt a GEMM kernel that holds every SM: 9.5 ms as at default.
  EXPECT_NEAR(step_s(collectives_beside(OpKind::Gemm, 1, true), true, 1.0, true), 9.5e-3, 1e-12);
}

TEST(CommWaitsForMemoryKernel, OffOnlyGemmsHoldTheSms) {
  EXPECT_NEAR(step_s(collectives_beside(OpKind::Elementwise, 1), true, 1.0, false), 6e-3, 1e-9);
}

}  // namespace
}  // namespace overlapsim::sim
