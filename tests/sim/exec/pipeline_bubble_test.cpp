// The generator's 1F1B schedule on the executor, compute only (communication costs
// nothing): the slowest stage idles (p-1)/(m+p-1) of the pipeline, the classic bubble
// (exact for equal stages; the first and last stage's embedding and loss work make them
// differ slightly here).
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
  Simulator sim;
  InstantNetwork net(sim, pp, 1);
  const ComputeProfile profile = unit_profile();
  ComputeModel model(profile);
  ExecOptions opts;
  opts.record_timeline = true;
  StepExecutor exec(step, model, net, opts);
  exec.set_collective_launcher(ZeroCostLauncher{&sim});
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

TEST(PipelineBubble, OneFOneBComputeOnly) {
  for (const auto& [p, m] : {std::pair{4, 8}, std::pair{4, 16}, std::pair{8, 8}, std::pair{2, 4}}) {
    const double expected = double(p - 1) / (m + p - 1);
    EXPECT_NEAR(bubble_fraction(p, m), expected, 0.015 * expected) << "p=" << p << " m=" << m;
  }
}

}  // namespace
}  // namespace overlapsim::sim
