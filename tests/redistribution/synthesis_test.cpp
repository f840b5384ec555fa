// Synthesised and naive plans against closed forms worked out by hand, each run on the CPU
// executor: the result equals the target and the executor's counts equal the plan's.
#include <gtest/gtest.h>

#include <numeric>

#include "config/error.hpp"
#include "redistribution/executor.hpp"
#include "redistribution/plan.hpp"

namespace overlapsim::redistribution {
namespace {

struct Case {
  Mesh mesh;
  Shape shape;
  Layout from, to;
};

Case make(const char* mesh, Shape shape, const char* from, const char* to) {
  Case c{parse_mesh(mesh, "mesh"), shape, {}, {}};
  c.from = parse_layout(from, c.mesh, c.shape, "from");
  c.to = parse_layout(to, c.mesh, c.shape, "to");
  return c;
}

// Runs the plan and checks what every plan must satisfy; returns the execution.
Execution run_checked(const Plan& p) {
  const Execution ex = execute(p);
  EXPECT_TRUE(ex.matches_target) << ex.mismatch;
  EXPECT_EQ(ex.uncovered_elements, 0);
  EXPECT_EQ(ex.duplicate_elements, 0);
  std::int64_t total = 0;
  for (std::size_t d = 0; d < ex.received_elements.size(); ++d) {
    std::int64_t planned = 0;
    for (const Step& s : p.steps) planned += s.received_elements[d];
    EXPECT_EQ(ex.received_elements[d], planned) << "device " << d;
    total += ex.received_elements[d];
  }
  EXPECT_EQ(static_cast<std::uint64_t>(total) * static_cast<std::uint64_t>(p.element_bytes),
            p.bytes_moved());
  EXPECT_EQ(static_cast<std::uint64_t>(ex.peak_elements) * static_cast<std::uint64_t>(p.element_bytes),
            p.peak_bytes());
  return ex;
}

TEST(Synthesis, ShardedRowsToColumnsIsOneAllToAllMovingThreeQuarters) {
  const Case c = make("x=4", {8, 8}, "P('x', None)", "P(None, 'x')");
  const Plan p = synthesize(c.mesh, c.shape, 4, c.from, c.to);
  ASSERT_EQ(p.steps.size(), 1u);
  EXPECT_EQ(p.steps[0].kind, StepKind::AllToAll);
  EXPECT_EQ(p.steps[0].axes, (std::vector<int>{0}));
  // Each device holds 16 elements and keeps the 4 that stay in its column block.
  for (std::int64_t r : p.steps[0].received_elements) EXPECT_EQ(r, 12);
  EXPECT_EQ(p.steps[0].max_pair_elements, 4);
  EXPECT_EQ(p.bytes_moved(), 4u * 12 * 4);
  EXPECT_EQ(p.peak_bytes(), (16u + 16) * 4);  // input and receive buffer
  EXPECT_EQ(p.buffer_bytes(), 16u * 4);
  const Execution ex = run_checked(p);
  EXPECT_EQ(ex.refetched_elements, 0);
  EXPECT_EQ(ex.received_outside_target, 0);

  // Naive: gather the whole 8x8 array on every device (48 elements each), then slice.
  const Plan n = naive_plan(c.mesh, c.shape, 4, c.from, c.to);
  ASSERT_EQ(n.steps.size(), 2u);
  EXPECT_EQ(n.steps[0].kind, StepKind::AllGather);
  EXPECT_EQ(n.steps[1].kind, StepKind::Slice);
  EXPECT_EQ(n.bytes_moved(), 4u * 48 * 4);
  EXPECT_EQ(n.peak_bytes(), (16u + 64) * 4);
  const Execution nx = run_checked(n);
  EXPECT_GT(nx.received_outside_target, 0);  // the naive plan receives what it then drops
}

TEST(Synthesis, RowsOverXToColumnsOverXYExchangesHalfOfTheTarget) {
  // The CLI's example: device (x, y) needs column block 4x + y of every row; it holds the
  // rows of half x, so half of its target comes from the device at the other x, same y.
  const Case c = make("x=2,y=4", {8, 16}, "P('x', None)", "P(None, ('x','y'))");
  const Plan p = synthesize(c.mesh, c.shape, 2, c.from, c.to);
  ASSERT_EQ(p.steps.size(), 1u);
  EXPECT_EQ(p.steps[0].kind, StepKind::AllToAll);
  EXPECT_EQ(p.steps[0].axes, (std::vector<int>{0}));
  for (std::int64_t r : p.steps[0].received_elements) EXPECT_EQ(r, 8);
  const Execution ex = run_checked(p);
  EXPECT_EQ(ex.refetched_elements, 0);
  EXPECT_EQ(ex.received_outside_target, 0);
}

TEST(Synthesis, RefiningASplitIsALocalSlice) {
  const Case c = make("x=2,y=4", {16}, "P('x')", "P(('x','y'))");
  const Plan p = synthesize(c.mesh, c.shape, 2, c.from, c.to);
  ASSERT_EQ(p.steps.size(), 1u);
  EXPECT_EQ(p.steps[0].kind, StepKind::Slice);
  EXPECT_EQ(p.bytes_moved(), 0u);
  EXPECT_EQ(p.peak_bytes(), 8u * 2);
  run_checked(p);
}

TEST(Synthesis, DroppingTheMinorAxisIsOneAllGather) {
  const Case c = make("x=2,y=4", {16}, "P(('x','y'))", "P('x')");
  const Plan p = synthesize(c.mesh, c.shape, 2, c.from, c.to);
  ASSERT_EQ(p.steps.size(), 1u);
  EXPECT_EQ(p.steps[0].kind, StepKind::AllGather);
  EXPECT_EQ(p.steps[0].axes, (std::vector<int>{1}));
  for (std::int64_t r : p.steps[0].received_elements) EXPECT_EQ(r, 6);  // 3 blocks of 2
  run_checked(p);
}

TEST(Synthesis, SwappingTheAxisOrderIsAPermute) {
  // Block x*2+y becomes block y*2+x: devices (0,1) and (1,0) swap their 2 elements.
  const Case c = make("x=2,y=2", {8}, "P(('x','y'))", "P(('y','x'))");
  const Plan p = synthesize(c.mesh, c.shape, 1, c.from, c.to);
  ASSERT_EQ(p.steps.size(), 1u);
  EXPECT_EQ(p.steps[0].kind, StepKind::Permute);
  EXPECT_EQ(p.steps[0].received_elements, (std::vector<std::int64_t>{0, 2, 2, 0}));
  EXPECT_EQ(p.bytes_moved(), 4u);
  run_checked(p);
}

TEST(Synthesis, PendingSumsReduceScatterOrAllReduce) {
  const Case rs = make("x=4", {8}, "[Partial()]", "P('x')");
  const Plan p = synthesize(rs.mesh, rs.shape, 2, rs.from, rs.to);
  ASSERT_EQ(p.steps.size(), 1u);
  EXPECT_EQ(p.steps[0].kind, StepKind::ReduceScatter);
  for (std::int64_t r : p.steps[0].received_elements) EXPECT_EQ(r, 3 * 2);
  run_checked(p);
  // Naive all-reduces the whole block (2 (n-1)/n x 8 = 12 elements), then slices.
  const Plan n = naive_plan(rs.mesh, rs.shape, 2, rs.from, rs.to);
  ASSERT_EQ(n.steps.size(), 2u);
  EXPECT_EQ(n.steps[0].kind, StepKind::AllReduce);
  for (std::int64_t r : n.steps[0].received_elements) EXPECT_EQ(r, 12);
  run_checked(n);

  const Case ar = make("x=4", {8}, "[Partial()]", "[Replicate()]");
  const Plan q = synthesize(ar.mesh, ar.shape, 2, ar.from, ar.to);
  ASSERT_EQ(q.steps.size(), 1u);
  EXPECT_EQ(q.steps[0].kind, StepKind::AllReduce);
  run_checked(q);
  // Keeping a pending sum: nothing to do.
  const Case keep = make("x=2,y=2", {4}, "[Shard(0), Partial()]", "P('x', unreduced={'y'})");
  EXPECT_TRUE(synthesize(keep.mesh, keep.shape, 2, keep.from, keep.to).steps.empty());
}

TEST(Synthesis, CreatingAPendingSumIsRejected) {
  const Case c = make("x=4", {8}, "P('x')", "[Partial()]");
  EXPECT_THROW(synthesize(c.mesh, c.shape, 2, c.from, c.to), config::ConfigError);
}

TEST(Synthesis, TheGatherDoesNotBringBackWhatTheExchangeDropped) {
  // P('x','y') -> P('y', None): the gathered x goes to dimension 1, where the devices hold
  // the target rows they already have; in dimension 0 the gather would return them.
  const Case c = make("x=2,y=2", {4, 4}, "P('x', 'y')", "P('y', None)");
  const Plan p = synthesize(c.mesh, c.shape, 1, c.from, c.to);
  const Execution ex = run_checked(p);
  EXPECT_EQ(ex.refetched_elements, 0);
  EXPECT_EQ(ex.received_outside_target, 0);
  // The least any plan can receive: each device's target block less what it held of it.
  std::int64_t least = 0;
  for (int d = 0; d < 4; ++d) {
    const Box t = block_of(c.mesh, c.shape, c.to, d);
    least += t.elements() - intersect(t, block_of(c.mesh, c.shape, c.from, d)).elements();
  }
  EXPECT_EQ(p.bytes_moved(), static_cast<std::uint64_t>(least));
}

}  // namespace
}  // namespace overlapsim::redistribution
