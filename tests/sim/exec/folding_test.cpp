// Identical-rank folding on the real network: simulating one representative and
// launching the other groups' traffic as background load gives the same step as
// simulating every rank.
#include <gtest/gtest.h>

#include "sim/exec/step_executor.hpp"
#include "sim/network/flow_network.hpp"
#include "sim/topology/builders.hpp"
#include "tests/sim/exec/exec_test_util.hpp"

namespace overlapsim::sim {
namespace {

using namespace overlapsim::sim::testing;

// 2 servers x 2 GPUs with ONE NIC per server, so the two cross-server DP groups {0,2} and
// {1,3} share the NICs and slow each other down.
Topology shared_nic_cluster() {
  RailFatTreeSpec spec;
  spec.nodes = 2;
  spec.node = NvSwitchNodeSpec{2, 450e9, 1e-6};
  spec.nics_per_node = 1;
  spec.nic_bandwidth_Bps = 50e9;
  spec.gpu_nic_bandwidth_Bps = 64e9;
  spec.gpu_nic_latency_s = 2e-6;
  spec.link_latency_s = 1e-6;
  return build_rail_fat_tree(spec);
}

void add_program(RankProgram& prog, int dp_group, int tp_group) {
  const OpVertex a = add(prog, compute_op("fwd", 1.0));
  const OpVertex t = add(prog, collective_op("tp_ar", tp_group, 0, StreamKind::TensorComm), {a});
  prog.graph[t].comm_bytes = 64ull << 20;
  const OpVertex b = add(prog, compute_op("bwd", 2.0), {t});
  const OpVertex c = add(prog, collective_op("dp_ar", dp_group, 0), {b});
  prog.graph[c].comm_bytes = 256ull << 20;
  add(prog, compute_op("opt", 0.5), {c});
}

StepGraph make_step(bool fold) {
  StepGraph step;
  step.world_size = 4;
  step.groups = {{"tp", {0, 1}}, {"tp", {2, 3}}, {"dp", {0, 2}}, {"dp", {1, 3}}};
  if (fold) {
    step.representative = {0, 0, 0, 0};
    step.ranks.resize(1);
    step.ranks[0].multiplicity = 4;
    add_program(step.ranks[0], 2, 0);
  } else {
    step.ranks.resize(4);
    for (int r = 0; r < 4; ++r) {
      step.ranks[r].rank = r;
      add_program(step.ranks[r], 2 + r % 2, r / 2);
    }
  }
  return step;
}

StepResult simulate(const StepGraph& step, BackgroundImages images) {
  Simulator sim;
  const Topology topo = shared_nic_cluster();
  FlowNetwork net(sim, topo);
  const ComputeProfile profile = unit_profile();
  ComputeModel model(profile);
  ExecOptions opts;
  opts.images = images;
  StepExecutor exec(step, model, net, opts);
  SequentialDesign design;
  return exec.run(design);
}

TEST(Folding, SameStepTimeWithAndWithoutFolding) {
  const StepResult full = simulate(make_step(false), BackgroundImages::InterHost);
  const StepResult folded = simulate(make_step(true), BackgroundImages::InterHost);
  EXPECT_NEAR(folded.step_time_s, full.step_time_s, 1e-9 * full.step_time_s);
  EXPECT_NEAR(folded.exposed_comm_s, full.exposed_comm_s, 1e-9 * full.step_time_s);
  EXPECT_NEAR(folded.compute_s, full.compute_s, 1e-12);
  EXPECT_EQ(folded.background_collectives, 1u);  // dp {1,3}
  // The shared NIC matters: without the image's traffic the folded step is too fast.
  const StepResult alone = simulate(make_step(true), BackgroundImages::None);
  EXPECT_LT(alone.step_time_s, full.step_time_s * 0.99);
  RecordProperty("full_step_s", std::to_string(full.step_time_s));
  RecordProperty("alone_step_s", std::to_string(alone.step_time_s));
}

}  // namespace
}  // namespace overlapsim::sim
