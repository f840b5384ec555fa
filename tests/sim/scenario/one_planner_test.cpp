// One planner for steps and validate: a step's pairs are planned by the predictor that
// `overlapsim validate` checks against measured pairs (sim::simulate_pair), so a step made
// of n identical pairs one after another takes n times the pair alone, under every design.
// (Steps used to plan with the rate earlier parts took, without the call's fixed cost, and
// the first pair of a step with no rate at all.)
#include <gtest/gtest.h>

#include "sim/overlap/pair_simulation.hpp"
#include "sim/scenario/scenario.hpp"
#include "tests/sim/exec/exec_test_util.hpp"
#include "tests/sim/scenario/scenario_test_util.hpp"

namespace overlapsim::sim {
namespace {

PairCase the_pair() {
  PairCase pc;
  pc.compute = testing::gemm_op("L0.mb0.fwd.gemm", 8192, 8192, 8192);
  pc.compute.stream = StreamKind::Compute;
  pc.comm_bytes = testing::kBytes;
  return pc;
}

// n layers of GEMM -> all-reduce on two ranks, layer l + 1's GEMM after layer l's all-reduce.
StepGraph chain(int n) {
  StepGraph step = testing::numbered_step(2, {{"tp", {0, 1}}});
  for (auto& prog : step.ranks) {
    OpVertex prev = 0;
    for (int l = 0; l < n; ++l) {
      OpNode op = the_pair().compute;
      op.name = "L" + std::to_string(l) + ".mb0.fwd.gemm";
      const OpVertex g = l == 0 ? testing::add(prog, op) : testing::add(prog, op, {prev});
      OpNode ar;
      ar.name = "L" + std::to_string(l) + ".mb0.fwd.ar";
      ar.kind = OpKind::Collective;
      ar.stream = StreamKind::TensorComm;
      ar.collective = CollectiveOp::AllReduce;
      ar.comm_bytes = testing::kBytes;
      ar.comm_group = 0;
      const OpVertex c = testing::add(prog, ar, {g});
      if (l > 0) boost::add_edge(prev, c, prog.graph);
      prog.graph[g].pair_partner = static_cast<int>(c);
      prog.graph[c].pair_partner = static_cast<int>(g);
      prev = c;
    }
  }
  return step;
}

TEST(OnePlanner, AStepPlansEachPairAsTheValidatedPredictorDoes) {
  const Topology topo = testing::scenario_node();
  const Profile profile = testing::profile_with_curve();
  const int n = 4;
  const StepGraph step = chain(n);
  for (const std::string d : {"sequential", "decomposed", "tilewise", "shaped"}) {
    const PairOutcome alone = simulate_pair(the_pair(), d, profile, topo);
    ScenarioOptions o;
    o.designs = {d};
    const ScenarioResult r = run_scenario({step, topo, profile, o});
    EXPECT_NEAR(r.runs[0].result.step_time_s, n * alone.time_s, 1e-9 * n * alone.time_s) << d;
    if (d != "sequential") {
      EXPECT_TRUE(alone.overlapped) << d;
    }
  }
}

}  // namespace
}  // namespace overlapsim::sim
