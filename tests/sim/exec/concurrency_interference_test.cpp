// The step's own concurrency pays interference (ExecOptions::concurrent_comm_slowdown): a
// compute op that runs while a collective of its rank moves data progresses at 1/s of its
// rate for that time. Closed forms on the unit profile and bytes / 1 GB/s collectives.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

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

StepResult run(const StepGraph& step, double slowdown, LogCurve gemm_curve = {},
               LogCurve memory_curve = {}, LogCurve attention_curve = {}) {
  ExecOptions o;
  o.concurrent_comm_slowdown = slowdown;
  o.gemm_comm_slowdown = std::move(gemm_curve);
  o.memory_comm_slowdown = std::move(memory_curve);
  o.attention_comm_slowdown = std::move(attention_curve);
  return testing::run_sequential(step, o);
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

// Per rank: a 3 ms collective beside a 1 ms op of `kind` (both ready at 0), then a 1 ms
// GEMM after both.
StepGraph op_under_collective(OpKind kind, std::int64_t batch = 1, int launches = 1) {
  StepGraph step = testing::numbered_step(2, {{"dp", {0, 1}}});
  for (auto& prog : step.ranks) {
    const OpVertex ar = add(prog, collective_op("ar", 0, 3.0));
    OpNode op = compute_op("g", 1.0);
    op.kind = kind;
    op.gemm.batch = batch;
    op.launches = launches;
    if (kind != OpKind::Gemm) op.bytes = 1'000'000'000;  // 1 ms at the unit profile's 1 TB/s
    const OpVertex g = add(prog, op);
    add(prog, compute_op("h", 1.0), {ar, g});
  }
  return step;
}

TEST(ConcurrencyInterference, ComputeUnderCommunicationTakesExactlyItsSlowTime) {
  // The collective outlasts the op, so the op runs at 1/s of its rate throughout: s ms.
  // Near s = 2 each correction would lose almost what it charges, so the last one is
  // charged at the slow rate, not measured again.
  for (double s : {1.078, 1.5, 1.9, 2.0, 3.0}) {
    const StepResult r = run(op_under_collective(OpKind::Gemm), s);
    const double g = std::min(s, 3.0);  // the collective ends at 3 ms
    EXPECT_NEAR(r.step_time_s, std::max(g, 3.0) * 1e-3 + 1e-3, 1e-12) << s;
  }
  // s 2: the op ends at 2 ms, under the collective; the step is 3 + 1 ms.
  const StepResult r = run(op_under_collective(OpKind::Gemm), 2.0);
  EXPECT_NEAR(r.compute_s, 3e-3, 1e-12);  // 2 ms of g, 1 of h
}

// A curve of slowdown by kernel time: 2x up to 0.1 ms, 1.25x from 1 ms.
LogCurve curve() {
  LogCurve c;
  c.points = {{1e-4, 2.0}, {1e-3, 1.25}};
  return c;
}

TEST(ConcurrencyInterference, GemmsPayTheCurveAtTheirTimePerKernel) {
  // A 1 ms GEMM: 1.25 (the curve at 1 ms), not the factor 1.5; it ends under the
  // collective at 1.25 ms, and h runs after the collective.
  StepResult r = run(op_under_collective(OpKind::Gemm), 1.5, curve());
  EXPECT_NEAR(r.compute_s, 2.25e-3, 1e-12);
  // The same op as a grouped GEMM of 10 kernels of 0.1 ms each: 2x.
  r = run(op_under_collective(OpKind::Gemm, 10), 1.5, curve());
  EXPECT_NEAR(r.compute_s, 3e-3, 1e-12);
  // Batch 3: 0.333 ms a kernel, log-linear between the points: 2 - 0.75 x log10(3.33).
  r = run(op_under_collective(OpKind::Gemm, 3), 1.5, curve());
  const double s = 2.0 - 0.75 * std::log10(1e-3 / 3 / 1e-4);
  EXPECT_NEAR(r.compute_s, (s + 1) * 1e-3, 1e-12);
  // Not a GEMM: the factor.
  r = run(op_under_collective(OpKind::Elementwise), 1.5, curve());
  EXPECT_NEAR(r.compute_s, 2.5e-3, 1e-12);
}

TEST(ConcurrencyInterference, ElementwiseOpsPayTheMemoryCurveAtTheirTimePerKernel) {
  // A 1 ms elementwise op of one kernel: 1.25 from the memory curve (the GEMM curve and the
  // factor do not apply to it).
  LogCurve memory = curve();
  StepResult r = run(op_under_collective(OpKind::Elementwise), 1.5, {}, memory);
  EXPECT_NEAR(r.compute_s, 2.25e-3, 1e-12);
  // The same op as 10 launches of ~0.1 ms: 2x. (Its time includes the unit profile's
  // launch overhead, 0 here.)
  r = run(op_under_collective(OpKind::Elementwise, 1, 10), 1.5, {}, memory);
  EXPECT_NEAR(r.compute_s, 3e-3, 1e-9);
  // A GEMM beside it keeps the factor when only the memory curve is given.
  r = run(op_under_collective(OpKind::Gemm), 1.5, {}, memory);
  EXPECT_NEAR(r.compute_s, 2.5e-3, 1e-12);
}

TEST(ConcurrencyInterference, AttentionOpsPayTheAttentionCurve) {
  const StepGraph step = op_under_collective(OpKind::Attention);
  const double alone = run(step, 1.0).compute_s - 1e-3;  // the op's own time (h is 1 ms)
  ASSERT_GT(alone, 0);
  ASSERT_LT(2 * alone, 3e-3);  // it ends under the collective at any slowdown here
  const LogCurve c = curve();
  StepResult r = run(step, 1.5, {}, {}, c);
  EXPECT_NEAR(r.compute_s, c.at(alone) * alone + 1e-3, 1e-9);
  // The GEMM and memory curves do not apply to it: the factor.
  r = run(step, 1.5, c, c);
  EXPECT_NEAR(r.compute_s, 1.5 * alone + 1e-3, 1e-9);
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
