// `--design best` on a step where one design wins on one pair and loses on another: the
// tuner must pick per class of pair, so the mix beats every forced design, sequential
// included. Two ranks of one host, every all-reduce timed by a measured curve (10 us +
// bytes / 200 GB/s), so a chunked collective pays the 10 us once per chunk.
#include <gtest/gtest.h>

#include "sim/overlap/pair_class.hpp"
#include "sim/scenario/scenario.hpp"
#include "tests/sim/exec/exec_test_util.hpp"
#include "tests/sim/scenario/scenario_test_util.hpp"

namespace overlapsim::sim {
namespace {

OpNode allreduce(const std::string& name, std::uint64_t bytes) {
  OpNode c;
  c.name = name;
  c.kind = OpKind::Collective;
  c.stream = StreamKind::TensorComm;
  c.collective = CollectiveOp::AllReduce;
  c.comm_bytes = bytes;
  c.comm_group = 0;
  return c;
}

// Per rank and layer: a large GEMM -> its 64 MiB all-reduce (communication-heavy: overlap
// pays), then a small GEMM -> its 64 KiB all-reduce (latency-bound: chunking it costs a
// call's 10 us per chunk, more than it hides), both producer pairs, each op after the
// previous collective.
StepGraph two_pair_classes(int layers) {
  StepGraph step = testing::numbered_step(2, {{"tp", {0, 1}}});
  for (int r = 0; r < 2; ++r) {
    RankProgram& prog = step.ranks[static_cast<std::size_t>(r)];
    std::vector<OpVertex> last_compute, last_comm;
    for (int l = 0; l < layers; ++l) {
      const std::string at = "L" + std::to_string(l) + ".mb0.fwd.";
      // The next layer reads the last all-reduce's output (as a TP layer's input).
      const OpVertex big = testing::add(prog, testing::gemm_op(at + "big", 8192, 8192, 8192));
      for (OpVertex d : last_compute) boost::add_edge(d, big, prog.graph);
      for (OpVertex d : last_comm) boost::add_edge(d, big, prog.graph);
      const OpVertex ar_big = testing::add(prog, allreduce(at + "ar_big", 64ull << 20), {big});
      for (OpVertex d : last_comm) boost::add_edge(d, ar_big, prog.graph);
      // Every op reads the previous collective's output: the pairs run one after another,
      // so no pair's parts run beside another pair's (a producer's parts do not wait for
      // their stream: docs/designs.md, Known limits).
      const OpVertex small =
          testing::add(prog, testing::gemm_op(at + "small", 1024, 1024, 1024), {big, ar_big});
      const OpVertex ar_small =
          testing::add(prog, allreduce(at + "ar_small", 64u << 10), {small, ar_big});
      prog.graph[big].pair_partner = static_cast<int>(ar_big);
      prog.graph[ar_big].pair_partner = static_cast<int>(big);
      prog.graph[small].pair_partner = static_cast<int>(ar_small);
      prog.graph[ar_small].pair_partner = static_cast<int>(small);
      last_compute = {small};
      last_comm = {ar_small};
    }
  }
  return step;
}

TEST(PairClass, NamesTheRepeatingPairWithoutLayerOrMicrobatch) {
  EXPECT_EQ(op_base_name("L12.mb3.fwd.fc2"), "fwd.fc2");
  EXPECT_EQ(op_base_name("mb0.bwd.embedding.backward"), "bwd.embedding.backward");
  EXPECT_EQ(op_base_name("Lx.mlp"), "Lx.mlp");
  const StepGraph step = two_pair_classes(1);
  EXPECT_EQ(pair_class(step, 0, 0), "tp allreduce after fwd.big");
  EXPECT_EQ(pair_class(step, 1, 2), "tp allreduce after fwd.small");
}

TEST(BestDesign, PicksPerClassAndBeatsEveryForcedDesign) {
  const StepGraph step = two_pair_classes(3);
  const Topology topo = testing::scenario_node();
  const Profile profile = testing::profile_with_curve();
  ScenarioOptions o;
  o.designs = design_names();
  o.designs.emplace_back(kBestDesign);
  const ScenarioResult r = run_scenario({step, topo, profile, o});
  const DesignRun* best = r.run_of(kBestDesign);
  ASSERT_NE(best, nullptr);
  EXPECT_EQ(best->best_basis, "per pair class");
  EXPECT_TRUE(best->best_every_pair.empty());
  ASSERT_EQ(best->best_classes.size(), 2u);
  const PairClassChoice& big = best->best_classes[0];
  const PairClassChoice& small = best->best_classes[1];
  EXPECT_EQ(big.name, "tp allreduce after fwd.big");
  EXPECT_EQ(big.pairs, 6);  // 3 layers x 2 ranks
  EXPECT_NE(big.winner, "sequential");
  EXPECT_LT(big.winner_s, big.sequential_s);
  EXPECT_EQ(small.name, "tp allreduce after fwd.small");
  EXPECT_EQ(small.winner, "sequential");
  // Some design applies to the small pair and loses there (decomposed: 4 calls of 10 us).
  bool a_loser = false;
  for (const auto& [name, s] : small.pair_s)
    if (name != "sequential" && s > small.sequential_s) a_loser = true;
  EXPECT_TRUE(a_loser);
  // The winner of the big class, forced on every pair, also chunks the small ones: the mix
  // is faster than it and than every other forced design.
  for (const DesignRun& run : r.runs) {
    if (run.result.design == kBestDesign) continue;
    EXPECT_LT(best->result.step_time_s, run.result.step_time_s) << run.result.design;
  }
  EXPECT_GT(best->pairs.overlapped, 0);
  EXPECT_EQ(best->pairs.sequential.at("sequential fastest for its class"), 6);
  // The breakdown adds up under best too.
  EXPECT_NEAR(best->result.compute_s + best->result.exposed_comm_s + best->result.bubble_s,
              best->result.step_time_s, 1e-12);
}

TEST(BestDesign, AloneRunsTheForcedDesignsUnreported) {
  const StepGraph step = two_pair_classes(2);
  const Topology topo = testing::scenario_node();
  const Profile profile = testing::profile_with_curve();
  ScenarioOptions o;
  o.designs = {kBestDesign};
  const ScenarioResult r = run_scenario({step, topo, profile, o});
  ASSERT_EQ(r.runs.size(), 1u);
  EXPECT_EQ(r.runs[0].result.design, "best");
  o.designs = {"sequential", kBestDesign};
  const ScenarioResult with_seq = run_scenario({step, topo, profile, o});
  EXPECT_EQ(with_seq.runs[1].result.step_time_s, r.runs[0].result.step_time_s);
  EXPECT_LT(r.runs[0].result.step_time_s, with_seq.runs[0].result.step_time_s);
}

}  // namespace
}  // namespace overlapsim::sim
