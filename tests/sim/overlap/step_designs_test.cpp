// The designs inside a whole step (StepExecutor), not just one pair: producer and
// consumer pairs between other ops, every op finishes, the step-level bound holds, scaled
// parts equal simulated parts when the collective's time is linear in its bytes, and a
// scan predicts what a run overlaps.
#include <gtest/gtest.h>

#include "sim/exec/step_executor.hpp"
#include "sim/overlap/registry.hpp"
#include "tests/sim/exec/exec_test_util.hpp"
#include "tests/sim/overlap/overlap_test_util.hpp"

namespace overlapsim::sim {
namespace {

OpNode collective(const std::string& name, CollectiveOp op, std::uint64_t bytes) {
  OpNode c;
  c.name = name;
  c.kind = OpKind::Collective;
  c.stream = StreamKind::TensorComm;
  c.collective = op;
  c.comm_bytes = bytes;
  c.comm_group = 0;
  return c;
}

// Per rank: allgather -> gemm A (consumer pair), gemm B -> allreduce (producer pair),
// then gemm C after the allreduce. 2 ranks, one group. With copy_bytes > 0, a layout op
// (OpNode::pair_layout) of that many bytes inside each pair, in program order: all-gather ->
// sort -> gemm A, gemm B -> unsort -> all-reduce, the pairs' own edges kept.
StepGraph step_with_pairs(std::uint64_t copy_bytes = 0) {
  StepGraph step = testing::numbered_step(2, {{"tp", {0, 1}}});
  OpNode sort_op = testing::elementwise_op("sort", copy_bytes);
  sort_op.pair_layout = true;
  OpNode unsort_op = sort_op;
  unsort_op.name = "unsort";
  for (int r = 0; r < 2; ++r) {
    auto& g = step.ranks[r].graph;
    const auto ag = boost::add_vertex(collective("ag", CollectiveOp::AllGather, 256u << 20), g);
    const auto sort = copy_bytes > 0 ? boost::add_vertex(sort_op, g) : OpVertex{};
    const auto a = boost::add_vertex(testing::gemm_op("a", 16384, 8192, 4096), g);
    const auto b = boost::add_vertex(testing::gemm_op("b", 16384, 8192, 4096), g);
    const auto unsort = copy_bytes > 0 ? boost::add_vertex(unsort_op, g) : OpVertex{};
    const auto ar = boost::add_vertex(collective("ar", CollectiveOp::AllReduce, 256u << 20), g);
    const auto c = boost::add_vertex(testing::gemm_op("c", 8192, 8192, 4096), g);
    boost::add_edge(ag, a, g);
    boost::add_edge(a, b, g);
    boost::add_edge(ag, ar, g);  // same stream, in order
    boost::add_edge(b, ar, g);
    boost::add_edge(ar, c, g);
    boost::add_edge(b, c, g);
    if (copy_bytes > 0) {
      boost::add_edge(ag, sort, g);
      boost::add_edge(sort, a, g);
      boost::add_edge(b, unsort, g);
      boost::add_edge(unsort, ar, g);
      boost::add_edge(unsort, c, g);
    }
    g[ag].pair_partner = static_cast<int>(a);
    g[a].pair_partner = static_cast<int>(ag);
    g[b].pair_partner = static_cast<int>(ar);
    g[ar].pair_partner = static_cast<int>(b);
  }
  return step;
}

struct DesignRun {
  StepResult result;
  PairStats stats;
};

DesignRun run_design(const StepGraph& step, const std::string& name, const Profile& profile,
                     int scaled_min_ranks = 0) {
  Simulator sim;
  testing::InstantNetwork net(sim, 2, 8);
  const ComputeModel model(profile.compute);
  StepExecutor exec(step, model, net);
  std::vector<CollectiveRequest> log;
  exec.set_collective_launcher(testing::ClosedFormLauncher{&sim, &log});  // bytes / 1 GB/s
  auto design = make_design(name, profile);
  // No measured curve: the collectives are the closed-form launcher's, no call latency in them.
  const CollectiveProfile no_curves;
  const CollectiveCostModel costs(no_curves, net);
  PairPlanning planning;
  planning.scaled_parts_min_ranks = scaled_min_ranks;
  if (PairedDesign* p = as_paired(*design)) p->bind(step, costs, planning);
  DesignRun out;
  out.result = exec.run(*design);
  if (const PairedDesign* p = as_paired(*design)) out.stats = p->stats();
  return out;
}

TEST(StepDesigns, EveryDesignCompletesTheStepWithinItsBounds) {
  const StepGraph step = step_with_pairs();
  const Profile profile = testing::design_profile(false);
  const ComputeModel model(profile.compute);
  const double t_a = model.time_s(step.ranks[0].graph[1]);
  const double t_c = model.time_s(step.ranks[0].graph[4]);
  const double t_coll = (256u << 20) / 1e9;
  const double seq = run_design(step, "sequential", profile).result.step_time_s;
  EXPECT_NEAR(seq, 2 * t_coll + 2 * t_a + t_c, 1e-9);
  for (const std::string d : {"decomposed", "tilewise", "fused", "shaped"}) {
    const DesignRun r = run_design(step, d, profile);
    // Every op ran: at least the compute, and at least the communication (one stream).
    EXPECT_GE(r.result.step_time_s, std::max(2 * t_a + t_c, 2 * t_coll) * (1 - 1e-12)) << d;
    EXPECT_EQ(r.result.ranks.size(), 2u);
    const PairStats scan = as_paired(*make_design(d, profile))->scan(step, model);
    EXPECT_EQ(scan.overlapped, r.stats.overlapped) << d;
  }
  // The collective is as long as each GEMM pair here: chunking must pay off.
  EXPECT_LT(run_design(step, "decomposed", profile).result.step_time_s, seq);
  EXPECT_EQ(run_design(step, "decomposed", profile).stats.overlapped, 4);  // 2 pairs x 2 ranks
  EXPECT_EQ(run_design(step, "tilewise", profile).stats.overlapped, 2);    // producer pairs
  EXPECT_EQ(run_design(step, "fused", profile).stats.overlapped, 0);       // no GEMM+A2A
}

TEST(StepDesigns, SequentialRunsALayoutOpAnOverlappedPairAbsorbs) {
  const Profile profile = testing::design_profile(false);
  const ComputeModel model(profile.compute);
  const StepGraph plain = step_with_pairs();
  const StepGraph with_copies = step_with_pairs(1u << 30);
  const double t_copy = model.time_s(with_copies.ranks[0].graph[1]);
  ASSERT_GT(t_copy, 0);
  // sequential: both copies on the compute stream's critical path.
  EXPECT_NEAR(run_design(with_copies, "sequential", profile).result.step_time_s,
              run_design(plain, "sequential", profile).result.step_time_s + 2 * t_copy, 1e-9);
  // decomposed overlaps both pairs: their kernels write the rows in place, so the copies
  // take no time and the step is the one without them.
  const DesignRun d = run_design(with_copies, "decomposed", profile);
  EXPECT_EQ(d.stats.overlapped, 4);
  EXPECT_DOUBLE_EQ(d.result.step_time_s,
                   run_design(plain, "decomposed", profile).result.step_time_s);
  for (const RankResult& rank : d.result.ranks)
    EXPECT_NEAR(rank.compute_s + rank.exposed_comm_s + rank.bubble_s, rank.step_time_s, 1e-12);
}

// A consumer pair's collective is complete when its last part lands, not its first: the
// all-reduce queued behind it on the same stream cannot start before, and every idle gap
// of the compute stream is accounted (step = compute + exposed + bubble) under every design.
TEST(StepDesigns, AConsumersCollectiveEndsWithItsLastPart) {
  const StepGraph step = step_with_pairs();
  const Profile profile = testing::design_profile(false);
  const double t_coll = (256u << 20) / 1e9;
  for (const std::string d : {"sequential", "decomposed", "tilewise", "fused", "shaped"}) {
    const DesignRun r = run_design(step, d, profile);
    for (const RankResult& rank : r.result.ranks)
      EXPECT_NEAR(rank.compute_s + rank.exposed_comm_s + rank.bubble_s, rank.step_time_s,
                  1e-12) << d;
    // Both collectives whole, one after the other on one stream (no stretch at 1 GB/s).
    EXPECT_GE(r.result.step_time_s, 2 * t_coll * (1 - 1e-12)) << d;
  }
  // decomposed and shaped overlap the all-gather with its consumer: the compute stream
  // waits for each part, and that wait is exposed paired communication.
  for (const std::string d : {"decomposed", "shaped"}) {
    const DesignRun r = run_design(step, d, profile);
    EXPECT_GT(r.result.exposed_paired_s, 0) << d;
  }
}

TEST(StepDesigns, ScaledPartsEqualSimulatedPartsForLinearCollectives) {
  const StepGraph step = step_with_pairs();
  const Profile profile = testing::design_profile(false);
  for (const std::string d : {"decomposed", "tilewise", "shaped"}) {
    const double exact = run_design(step, d, profile, 0).result.step_time_s;
    const double scaled = run_design(step, d, profile, 2).result.step_time_s;
    EXPECT_NEAR(scaled, exact, 1e-9 * exact) << d;
  }
}

}  // namespace
}  // namespace overlapsim::sim
