// A collective beside memory-bound ops (ExecOptions::collective_memory_slowdown) progresses
// at 1/s of its rate while a member runs one, s the curve at the op's time per kernel; its
// end moves later by the work so lost. Closed forms on the unit profile and bytes / 1 GB/s
// collectives.
#include <gtest/gtest.h>

#include "sim/exec/step_executor.hpp"
#include "tests/sim/exec/exec_test_util.hpp"

namespace overlapsim::sim {
namespace {

using testing::add;
using testing::collective_op;
using testing::compute_op;

// Per rank, both from 0: a 2 ms collective, and an op of `kind` of `ms` on the compute
// stream (`launches` kernels); then a 1 ms GEMM after both.
StepGraph collective_beside_op(OpKind kind, double ms, int launches = 1) {
  StepGraph step = testing::numbered_step(2, {{"dp", {0, 1}}});
  for (auto& prog : step.ranks) {
    const OpVertex ar = add(prog, collective_op("ar", 0, 2.0));
    OpNode g = compute_op("g", ms);
    g.kind = kind;
    g.launches = launches;
    if (kind != OpKind::Gemm) g.bytes = ms * 1e9;  // ms at the unit profile's 1 TB/s
    const OpVertex gv = add(prog, g);
    add(prog, compute_op("h", 1.0), {ar, gv});
  }
  return step;
}

// Slowdown 2 up to 0.1 ms a kernel, 1.25 from 1 ms.
LogCurve memory_curve() {
  LogCurve c;
  c.points = {{1e-4, 2.0}, {1e-3, 1.25}};
  return c;
}

double memory_step_s(const StepGraph& step, LogCurve c) {
  ExecOptions o;
  o.collective_memory_slowdown = std::move(c);
  return testing::run_sequential(step, o).step_time_s;
}

TEST(CollectiveMemorySlowdown, WithoutTheCurveNothingChanges) {
  EXPECT_NEAR(memory_step_s(collective_beside_op(OpKind::Elementwise, 1.0), {}), 3e-3, 1e-9);
}

TEST(CollectiveMemorySlowdown, AShortMemoryBoundOpDelaysTheCollectiveByTheWorkItCost) {
  // Ten 0.1 ms kernels (s 2) for 1 ms: 0.5 ms of the collective's work lost, so it ends
  // at 2.5 ms; h 2.5-3.5.
  EXPECT_NEAR(memory_step_s(collective_beside_op(OpKind::Elementwise, 1.0, 10), memory_curve()), 3.5e-3, 1e-9);
  // One 1 ms kernel (s 1.25): 0.2 ms lost.
  EXPECT_NEAR(memory_step_s(collective_beside_op(OpKind::Elementwise, 1.0), memory_curve()), 3.2e-3, 1e-9);
}

TEST(CollectiveMemorySlowdown, AnOpOutlastingTheCollectiveSlowsItThroughout) {
  // A 3 ms op of 0.1 ms kernels (s 2): by 3 ms the collective has done 1.5 ms of its 2 ms
  // of work, the rest at full rate: it ends at 3.5 ms; h 3.5-4.5.
  EXPECT_NEAR(memory_step_s(collective_beside_op(OpKind::Elementwise, 3.0, 30), memory_curve()), 4.5e-3, 1e-9);
}

TEST(CollectiveMemorySlowdown, AGemmDoesNotSlowIt) {
  EXPECT_NEAR(memory_step_s(collective_beside_op(OpKind::Gemm, 1.0), memory_curve()), 3e-3, 1e-12);
}

}  // namespace
}  // namespace overlapsim::sim
