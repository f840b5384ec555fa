#include "sim/exec/step_executor.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

#include "tests/sim/exec/exec_test_util.hpp"

namespace overlapsim::sim {
namespace {

using namespace overlapsim::sim::testing;
constexpr double kMs = 1e-3;
constexpr double kTol = 1e-12;

struct StepRun {
  StepResult result;
  std::vector<CollectiveRequest> requests;
  Timeline timeline;
};

StepRun run_step(const StepGraph& step, int ranks_per_host = 8,
                 BackgroundImages images = BackgroundImages::InterHost) {
  UnitExecRig rig(step.world_size, ranks_per_host);
  ExecOptions opts;
  opts.images = images;
  opts.record_timeline = true;
  StepExecutor exec(step, rig.model, rig.net, opts);
  StepRun out;
  exec.set_collective_launcher(ClosedFormLauncher{&rig.sim, &out.requests});
  SequentialDesign design;
  out.result = exec.run(design);
  out.timeline = exec.timeline();
  // The compute stream's time always splits into compute, exposed comm and bubbles.
  for (const auto& r : out.result.ranks)
    EXPECT_NEAR(r.compute_s + r.exposed_comm_s + r.bubble_s, r.step_time_s, kTol) << r.rank;
  return out;
}

TEST(StepExecutor, TwoDependentOpsRunBackToBack) {
  StepGraph step = numbered_step(1);
  auto& prog = step.ranks[0];
  const OpVertex a = add(prog, compute_op("a", 1.0));
  add(prog, compute_op("b", 2.5), {a});
  const StepRun run = run_step(step);
  EXPECT_NEAR(run.result.step_time_s, 3.5 * kMs, kTol);
  EXPECT_NEAR(run.result.compute_s, 3.5 * kMs, kTol);
  EXPECT_NEAR(run.result.exposed_comm_s, 0, kTol);
  EXPECT_EQ(run.result.design, "sequential");
  ASSERT_EQ(run.timeline.ops.size(), 2u);
  EXPECT_NEAR(run.timeline.ops[1].start_s, 1.0 * kMs, kTol);
}

TEST(StepExecutor, IndependentComputeOpsSerialiseOnTheComputeStream) {
  StepGraph step = numbered_step(1);
  auto& prog = step.ranks[0];
  add(prog, compute_op("a", 1.0));
  add(prog, compute_op("b", 1.0));
  EXPECT_NEAR(run_step(step).result.step_time_s, 2.0 * kMs, kTol);
}

// Program order is topological, lowest index first among the ready ops; with an edge to a
// lower index (here b -> a) that is not index order: b, then a (ready once b is done and
// lower than c), then c.
TEST(StepExecutor, ProgramOrderTakesTheLowestReadyOpWhenAnEdgePointsBack) {
  StepGraph step = numbered_step(1);
  auto& prog = step.ranks[0];
  const OpVertex a = add(prog, compute_op("a", 1.0));
  const OpVertex b = add(prog, compute_op("b", 2.0));
  add(prog, compute_op("c", 4.0));
  boost::add_edge(b, a, prog.graph);
  const StepRun run = run_step(step);
  ASSERT_EQ(run.timeline.ops.size(), 3u);
  EXPECT_EQ(run.timeline.ops[0].name, "b");
  EXPECT_EQ(run.timeline.ops[1].name, "a");
  EXPECT_NEAR(run.timeline.ops[1].start_s, 2.0 * kMs, kTol);
  EXPECT_EQ(run.timeline.ops[2].name, "c");
  EXPECT_NEAR(run.timeline.ops[2].start_s, 3.0 * kMs, kTol);
}

TEST(StepExecutor, CommOnAnotherStreamOverlapsCompute) {
  // a (1 ms) -> allreduce c (2 ms, dp stream); b (1 ms) after a; d after b and c.
  StepGraph step = numbered_step(2, {{"dp", {0, 1}}});
  for (int r = 0; r < 2; ++r) {
    auto& prog = step.ranks[r];
    const OpVertex a = add(prog, compute_op("a", 1.0));
    const OpVertex c = add(prog, collective_op("c", 0, 2.0), {a});
    const OpVertex b = add(prog, compute_op("b", 1.0), {a});
    add(prog, compute_op("d", 1.0), {b, c});
  }
  const StepRun run = run_step(step);
  EXPECT_NEAR(run.result.step_time_s, 4.0 * kMs, kTol);
  EXPECT_NEAR(run.result.compute_s, 3.0 * kMs, kTol);
  EXPECT_NEAR(run.result.comm_s, 2.0 * kMs, kTol);
  EXPECT_NEAR(run.result.overlapped_comm_s, 1.0 * kMs, kTol);  // c under b
  EXPECT_NEAR(run.result.exposed_comm_s, 1.0 * kMs, kTol);     // d waits 2..3 ms
  EXPECT_NEAR(run.result.bubble_s, 0, kTol);
  ASSERT_EQ(run.requests.size(), 1u);  // one collective for both ranks
  EXPECT_EQ(run.requests[0].ranks, (std::vector<int>{0, 1}));
}

TEST(StepExecutor, EveryStreamKindIsAStreamOfItsOwn) {
  // After a (1 ms), one 2 ms all-reduce on each communication stream kind: each kind is its
  // own stream, so they all run at once (a rank had too few streams for ContextComm once).
  StepGraph step = numbered_step(2, {{"g", {0, 1}}});
  int comm_kinds = 0;
  for (int r = 0; r < 2; ++r) {
    auto& prog = step.ranks[r];
    const OpVertex a = add(prog, compute_op("a", 1.0));
    comm_kinds = 0;
    for (int k = 0; k < kNumStreamKinds; ++k) {
      const auto kind = static_cast<StreamKind>(k);
      if (kind == StreamKind::Compute) continue;
      add(prog, collective_op(std::string("c.") + to_string(kind), 0, 2.0, kind), {a});
      ++comm_kinds;
    }
  }
  EXPECT_EQ(comm_kinds, kNumStreamKinds - 1);
  const StepRun run = run_step(step);
  EXPECT_NEAR(run.result.step_time_s, 3.0 * kMs, kTol);
  EXPECT_EQ(run.requests.size(), static_cast<std::size_t>(comm_kinds));
}

TEST(StepExecutor, CollectiveWaitsForItsSlowestMember) {
  // Rank 0 computes 1 ms, rank 1 3 ms, then a 2 ms all-reduce, then 1 ms each.
  StepGraph step = numbered_step(2, {{"dp", {0, 1}}});
  for (int r = 0; r < 2; ++r) {
    auto& prog = step.ranks[r];
    const OpVertex a = add(prog, compute_op("a", r == 0 ? 1.0 : 3.0));
    const OpVertex c = add(prog, collective_op("ar", 0, 2.0), {a});
    add(prog, compute_op("b", 1.0), {c});
  }
  const StepRun run = run_step(step);
  EXPECT_NEAR(run.result.step_time_s, 6.0 * kMs, kTol);
  const RankResult& r0 = run.result.ranks[0];
  EXPECT_NEAR(r0.compute_s, 2.0 * kMs, kTol);
  EXPECT_NEAR(r0.bubble_s, 2.0 * kMs, kTol);  // waiting 1..3 ms for rank 1
  EXPECT_NEAR(r0.exposed_comm_s, 2.0 * kMs, kTol);
  const RankResult& r1 = run.result.ranks[1];
  EXPECT_NEAR(r1.compute_s, 4.0 * kMs, kTol);
  EXPECT_NEAR(r1.bubble_s, 0, kTol);
  EXPECT_NEAR(r1.exposed_comm_s, 2.0 * kMs, kTol);
  EXPECT_EQ(run.requests.size(), 1u);
}

TEST(StepExecutor, CollectivesOnOneStreamRunOneAtATime) {
  StepGraph step = numbered_step(2, {{"dp", {0, 1}}});
  for (int r = 0; r < 2; ++r) {
    auto& prog = step.ranks[r];
    const OpVertex a = add(prog, compute_op("a", 1.0));
    const OpVertex c1 = add(prog, collective_op("c1", 0, 2.0), {a});
    const OpVertex c2 = add(prog, collective_op("c2", 0, 2.0), {a});  // same stream: after c1
    add(prog, compute_op("b", 1.0), {c1, c2});
  }
  const StepRun run = run_step(step);
  EXPECT_NEAR(run.result.step_time_s, 6.0 * kMs, kTol);
  EXPECT_NEAR(run.result.exposed_comm_s, 4.0 * kMs, kTol);
}

// A collective with a launch delay (a coordinating runtime such as Horovod) starts its
// transfer that long after its members meet; the wait counts as exposed communication and
// keeps its stream busy, so a second collective on the stream pays its own wait after it.
TEST(StepExecutor, LaunchDelayPostponesTheTransferAndHoldsTheStream) {
  StepGraph step = numbered_step(2, {{"dp", {0, 1}}});
  for (int r = 0; r < 2; ++r) {
    auto& prog = step.ranks[r];
    const OpVertex a = add(prog, compute_op("a", 1.0));
    OpNode c1 = collective_op("c1", 0, 2.0);
    c1.launch_delay_s = 0.5 * kMs;
    OpNode c2 = collective_op("c2", 0, 2.0);
    c2.launch_delay_s = 0.5 * kMs;
    const OpVertex v1 = add(prog, std::move(c1), {a});
    const OpVertex v2 = add(prog, std::move(c2), {a});
    add(prog, compute_op("b", 1.0), {v1, v2});
  }
  const StepRun run = run_step(step);
  // 1 ms compute, then (0.5 + 2) ms twice, then 1 ms.
  EXPECT_NEAR(run.result.step_time_s, 7.0 * kMs, kTol);
  EXPECT_NEAR(run.result.exposed_comm_s, 5.0 * kMs, kTol);
  EXPECT_EQ(run.requests.size(), 2u);
}

TEST(StepExecutor, SendMeetsReceiveAndTheWaitIsABubble) {
  // Rank 0: f (1 ms) -> send (1 ms) ; rank 1: recv -> g (1 ms).
  StepGraph step = numbered_step(2);
  const OpVertex f = add(step.ranks[0], compute_op("f", 1.0));
  add(step.ranks[0], p2p_op("send", true, 1, 1.0), {f});
  const OpVertex recv = add(step.ranks[1], p2p_op("recv", false, 0, 1.0));
  add(step.ranks[1], compute_op("g", 1.0), {recv});
  const StepRun run = run_step(step);
  EXPECT_NEAR(run.result.step_time_s, 3.0 * kMs, kTol);
  const RankResult& r1 = run.result.ranks[1];
  EXPECT_NEAR(r1.bubble_s, 1.0 * kMs, kTol);        // rank 0 still computing
  EXPECT_NEAR(r1.exposed_comm_s, 1.0 * kMs, kTol);  // the transfer itself
  EXPECT_NEAR(r1.compute_s, 1.0 * kMs, kTol);
  ASSERT_EQ(run.requests.size(), 1u);
  EXPECT_EQ(run.requests[0].op, CollectiveOp::SendRecv);
  EXPECT_EQ(run.requests[0].ranks, (std::vector<int>{0, 1}));
}

TEST(StepExecutor, ComputeOnlyPipelineBubbleIsPMinusOneOverMPlusPMinusOne) {
  // GPipe-style forward then backward with zero-cost transfers: p stages, m microbatches,
  // forward and backward 1 ms each. Each stage is idle (p-1)/(m+p-1) of the step.
  const int p = 4, m = 6;
  StepGraph step = numbered_step(p);
  // Program order on each stage: all forwards, then all backwards (in reverse).
  for (int s = 0; s < p; ++s) {
    auto& prog = step.ranks[s];
    OpVertex prev = 0;
    bool has_prev = false;
    auto chain = [&](OpNode n) {
      const OpVertex v = has_prev ? add(prog, std::move(n), {prev}) : add(prog, std::move(n));
      prev = v;
      has_prev = true;
      return v;
    };
    for (int i = 0; i < m; ++i) {
      if (s > 0) chain(p2p_op("recv_f", false, s - 1, 0));
      chain(compute_op("fwd", 1.0));
      if (s < p - 1) chain(p2p_op("send_f", true, s + 1, 0));
    }
    for (int i = 0; i < m; ++i) {
      if (s < p - 1) chain(p2p_op("recv_b", false, s + 1, 0));
      chain(compute_op("bwd", 1.0));
      if (s > 0) chain(p2p_op("send_b", true, s - 1, 0));
    }
  }
  const StepRun run = run_step(step);
  const double step_s = 2.0 * (m + p - 1) * kMs;
  EXPECT_NEAR(run.result.step_time_s, step_s, kTol);
  // Each stage is idle (p-1)/(m+p-1) of the step: waiting inside its own run, plus after
  // its last backward (stage s finishes s ms before stage 0).
  for (const auto& r : run.result.ranks) {
    EXPECT_NEAR(r.step_time_s, step_s - r.rank * kMs, kTol);
    const double idle_s = r.bubble_s + (step_s - r.step_time_s);
    EXPECT_NEAR(idle_s / step_s, double(p - 1) / (m + p - 1), 1e-9) << r.rank;
    EXPECT_NEAR(r.exposed_comm_s, 0, kTol);
  }
  EXPECT_EQ(run.result.critical_rank, 0);
  EXPECT_NEAR(run.result.bubble_s / run.result.step_time_s, double(p - 1) / (m + p - 1), 1e-9);
}

TEST(StepExecutor, FoldedCollectivesLaunchTheirImagesAsBackground) {
  // 4 ranks on 2 hosts (ranks 0,1 | 2,3). Rank 0 stands for all. TP groups {0,1},{2,3}
  // are intra-host; DP groups {0,2},{1,3} span hosts.
  StepGraph step;
  step.world_size = 4;
  step.groups = {{"tp", {0, 1}}, {"tp", {2, 3}}, {"dp", {0, 2}}, {"dp", {1, 3}}};
  step.representative = {0, 0, 0, 0};
  step.ranks.resize(1);
  step.ranks[0].multiplicity = 4;
  auto& prog = step.ranks[0];
  const OpVertex a = add(prog, compute_op("a", 1.0));
  const OpVertex t = add(prog, collective_op("tp_ar", 0, 1.0, StreamKind::TensorComm), {a});
  add(prog, collective_op("dp_ar", 2, 1.0), {t});

  const StepRun inter = run_step(step, 2, BackgroundImages::InterHost);
  EXPECT_EQ(inter.result.collectives, 2u);
  EXPECT_EQ(inter.result.background_collectives, 1u);  // dp {1,3}; tp {2,3} stays in its host
  ASSERT_EQ(inter.requests.size(), 3u);
  EXPECT_EQ(inter.requests[2].ranks, (std::vector<int>{1, 3}));

  const StepRun all = run_step(step, 2, BackgroundImages::All);
  EXPECT_EQ(all.result.background_collectives, 2u);
  const StepRun none = run_step(step, 2, BackgroundImages::None);
  EXPECT_EQ(none.result.background_collectives, 0u);
  EXPECT_NEAR(none.result.step_time_s, 3.0 * kMs, kTol);
}

TEST(StepExecutor, UnmatchedReceiveIsReportedNotHung) {
  StepGraph step = numbered_step(2);
  add(step.ranks[0], compute_op("f", 1.0));
  add(step.ranks[1], p2p_op("lonely_recv", false, 0, 1.0));
  try {
    run_step(step);
    FAIL() << "expected a runtime_error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("lonely_recv"), std::string::npos) << e.what();
  }
}

TEST(StepExecutor, MalformedStepsAreRejected) {
  StepGraph step = numbered_step(1);
  auto& prog = step.ranks[0];
  const OpVertex a = add(prog, compute_op("a", 1.0));
  const OpVertex b = add(prog, compute_op("b", 1.0), {a});
  boost::add_edge(b, a, prog.graph);
  UnitExecRig rig(1, 8);
  EXPECT_THROW(StepExecutor(step, rig.model, rig.net), std::invalid_argument);  // cycle

  StepGraph bad_group = numbered_step(1);
  add(bad_group.ranks[0], collective_op("c", 3, 1.0));
  EXPECT_THROW(StepExecutor(bad_group, rig.model, rig.net), std::invalid_argument);
}

TEST(StepExecutor, RunsAreDeterministic) {
  StepGraph step = numbered_step(2, {{"dp", {0, 1}}});
  for (int r = 0; r < 2; ++r) {
    auto& prog = step.ranks[r];
    OpVertex prev = add(prog, compute_op("a", 0.3 + r));
    for (int i = 0; i < 20; ++i) {
      const OpVertex c = add(prog, collective_op("c", 0, 0.1 * (i % 3 + 1)), {prev});
      prev = add(prog, compute_op("b", 0.2), {prev, c});
    }
  }
  const StepRun a = run_step(step);
  const StepRun b = run_step(step);
  EXPECT_EQ(a.result.step_time_s, b.result.step_time_s);
  EXPECT_EQ(a.result.exposed_comm_s, b.result.exposed_comm_s);
  EXPECT_EQ(a.result.events, b.result.events);
  ASSERT_EQ(a.timeline.ops.size(), b.timeline.ops.size());
  for (std::size_t i = 0; i < a.timeline.ops.size(); ++i)
    EXPECT_EQ(a.timeline.ops[i].end_s, b.timeline.ops[i].end_s);
}

}  // namespace
}  // namespace overlapsim::sim
