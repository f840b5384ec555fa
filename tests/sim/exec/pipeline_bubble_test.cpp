// The generator's 1F1B schedule on the executor, compute only (communication costs
// nothing): the slowest stage idles (p-1)/(m+p-1) of the pipeline, the classic bubble
// (exact for equal stages; the first and last stage's embedding and loss work make them
// differ slightly here). The same holds for MoE stages whose expert-parallel all-to-alls
// take real time: every stage's EP group is its own, so the all-to-alls lengthen each
// stage but do not couple stages (DeepSeek-V3's large rank-0 "bubble" is stage imbalance,
// docs/simulate.md).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <utility>

#include "sim/exec/step_executor.hpp"
#include "tests/sim/exec/exec_test_util.hpp"
#include "workloads/generator.hpp"
#include "workloads/model.hpp"

namespace overlapsim::sim {
namespace {

using namespace overlapsim::sim::testing;

// Layers split evenly and wide (hidden 8192), so the first stage's embedding and the last
// stage's head and loss, which break the symmetry between stages, weigh little; the
// vocabulary is tiny for the same reason.
std::string model_yaml(int pp, int microbatches) {
  return fmt::format(R"(name: bubble-test
kind: transformer
source: test fixture
transformer:
  layers: {layers}
  hidden: 8192
  ffn_hidden: 32768
  vocab: 128
  mlp: gelu
  norm: layernorm
  position_embedding: rope
  bias: false
  tie_embeddings: false
  attention: {{heads: 64, head_dim: 128, causal: true}}
training:
  seq_len: 1024
  global_batch: {m}
  micro_batch: 1
  precision: bf16
  grad_precision: bf16
  recompute: none
  grad_sync: allreduce
parallelism: {{dp: 1, tp: 1, pp: {pp}, cp: 1}}
)",
                     fmt::arg("layers", 4 * pp), fmt::arg("m", microbatches), fmt::arg("pp", pp));
}

struct ZeroCostLauncher {
  Simulator* sim;
  void operator()(const CollectiveRequest&, std::function<void()> done) const {
    sim->schedule(0.0, std::move(done));
  }
};

// Idle share of the pipeline part of the step (forward and backward; the optimizer and
// gradient reduction follow the flush) on the slowest stage.
double bubble_fraction(int pp, int microbatches) {
  const auto spec = workloads::load_model_string(model_yaml(pp, microbatches), "bubble.yaml");
  const StepGraph step = workloads::generate_step(spec, pp);
  UnitExecRig rig(pp, 1);
  ExecOptions opts;
  opts.record_timeline = true;
  StepExecutor exec(step, rig.model, rig.net, opts);
  exec.set_collective_launcher(ZeroCostLauncher{&rig.sim});
  SequentialDesign design;
  const StepResult r = exec.run(design);
  EXPECT_NEAR(r.exposed_comm_s, 0, 1e-12);
  double pipeline_end_s = 0, pipeline_compute_s = 0;
  for (const OpRecord& op : exec.timeline().ops) {
    if (op.rank != r.critical_rank || op.phase == Phase::Optimizer) continue;
    if (op.kind == OpKind::Collective || op.kind == OpKind::SendRecv) continue;
    pipeline_end_s = std::max(pipeline_end_s, op.end_s);
    pipeline_compute_s += op.end_s - op.start_s;
  }
  return (pipeline_end_s - pipeline_compute_s) / pipeline_end_s;
}

// MoE: every layer routed (no dense layers), EP over the whole DP group of a stage, so
// each stage's all-to-alls run on its own communicator.
std::string moe_yaml(int pp, int microbatches, int ep) {
  return fmt::format(R"(name: moe-bubble-test
kind: moe
source: test fixture
transformer:
  layers: {layers}
  hidden: 4096
  ffn_hidden: 8192
  vocab: 128
  mlp: swiglu
  norm: rmsnorm
  position_embedding: rope
  bias: false
  tie_embeddings: false
  attention: {{heads: 32, head_dim: 128, causal: true}}
moe:
  experts: 8
  top_k: 2
  shared_experts: 1
  expert_ffn_hidden: 8192
  dense_layers: 0
training:
  seq_len: 1024
  global_batch: {gb}
  micro_batch: 1
  precision: bf16
  grad_precision: bf16
  recompute: none
  grad_sync: allreduce
parallelism: {{dp: {ep}, tp: 1, pp: {pp}, cp: 1, ep: {ep}}}
)",
                     fmt::arg("layers", 4 * pp), fmt::arg("gb", microbatches * ep),
                     fmt::arg("pp", pp), fmt::arg("ep", ep));
}

// Collectives take bytes / 1 GB/s; pipeline sends cost nothing (their latency lengthens the
// fill and drain, which the closed form leaves out).
struct CollectivesOnlyLauncher {
  Simulator* sim;
  void operator()(const CollectiveRequest& req, std::function<void()> done) const {
    const double t_s =
        req.op == CollectiveOp::SendRecv ? 0.0 : static_cast<double>(req.bytes) / 1e9;
    sim->schedule(t_s, std::move(done));
  }
};

struct MoeBubble {
  double idle_fraction;      // of the pipeline part, on the critical rank
  double a2a_busy_fraction;  // share of its busy time inside EP all-to-alls
};

// Like bubble_fraction, for the MoE fixture; `a2a_cost` gives collectives a closed-form
// time instead of none. Busy = compute or communication.
MoeBubble moe_bubble(int pp, int microbatches, int ep, bool fold, bool a2a_cost) {
  const auto spec = workloads::load_model_string(moe_yaml(pp, microbatches, ep), "moe.yaml");
  workloads::GenerateOptions gen;
  gen.fold = fold;
  const StepGraph step = workloads::generate_step(spec, pp * ep, gen);
  UnitExecRig rig(pp * ep, ep);
  ExecOptions opts;
  opts.record_timeline = true;
  StepExecutor exec(step, rig.model, rig.net, opts);
  if (a2a_cost)
    exec.set_collective_launcher(CollectivesOnlyLauncher{&rig.sim});
  else
    exec.set_collective_launcher(ZeroCostLauncher{&rig.sim});
  SequentialDesign design;
  const StepResult r = exec.run(design);
  std::vector<std::pair<double, double>> busy;
  double pipeline_end_s = 0, a2a_s = 0;
  for (const OpRecord& op : exec.timeline().ops) {
    if (op.rank != r.critical_rank || op.phase == Phase::Optimizer) continue;
    if (op.name.rfind("dp.", 0) == 0) continue;  // gradient reduction after the flush
    pipeline_end_s = std::max(pipeline_end_s, op.end_s);
    busy.emplace_back(op.start_s, op.end_s);
    if (op.name.find(".ep_") != std::string::npos) a2a_s += op.end_s - op.start_s;
  }
  std::sort(busy.begin(), busy.end());
  double busy_s = 0, open_s = -1, close_s = -1;
  for (const auto& [s, e] : busy) {
    if (s > close_s) {
      busy_s += close_s - open_s;
      open_s = s;
      close_s = e;
    } else {
      close_s = std::max(close_s, e);
    }
  }
  busy_s += close_s - open_s;
  return {(pipeline_end_s - busy_s) / pipeline_end_s, a2a_s / busy_s};
}

TEST(PipelineBubble, MoeOneFOneBComputeOnly) {
  for (bool fold : {true, false}) {
    for (const auto& [p, m] : {std::pair{4, 8}, std::pair{4, 16}, std::pair{2, 4}}) {
      const double expected = double(p - 1) / (m + p - 1);
      EXPECT_NEAR(moe_bubble(p, m, 2, fold, false).idle_fraction, expected, 0.015 * expected)
          << "p=" << p << " m=" << m << " fold=" << fold;
    }
  }
}

// The all-to-alls dominate each stage here (over 90% of its busy time), yet the idle share
// stays the textbook one: they make every stage longer, not the stages wait on each other.
TEST(PipelineBubble, MoeAllToAllsDoNotCoupleStages) {
  for (bool fold : {true, false}) {
    for (const auto& [p, m] : {std::pair{4, 8}, std::pair{4, 16}}) {
      const double expected = double(p - 1) / (m + p - 1);
      const MoeBubble b = moe_bubble(p, m, 4, fold, true);
      EXPECT_GT(b.a2a_busy_fraction, 0.9);
      EXPECT_NEAR(b.idle_fraction, expected, 0.015 * expected)
          << "p=" << p << " m=" << m << " fold=" << fold;
    }
  }
}

TEST(PipelineBubble, OneFOneBComputeOnly) {
  for (const auto& [p, m] : {std::pair{4, 8}, std::pair{4, 16}, std::pair{8, 8}, std::pair{2, 4}}) {
    const double expected = double(p - 1) / (m + p - 1);
    EXPECT_NEAR(bubble_fraction(p, m), expected, 0.015 * expected) << "p=" << p << " m=" << m;
  }
}

}  // namespace
}  // namespace overlapsim::sim
