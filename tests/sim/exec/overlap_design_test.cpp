// The design seam: a toy two-chunk design (a GEMM in two halves, half of its paired
// all-reduce after each) runs through ExecContext's primitives and gives the times a
// person works out by hand; unpaired ops behave as under `sequential`.
#include "sim/exec/overlap_design.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <set>

#include "sim/exec/step_executor.hpp"
#include "tests/sim/exec/exec_test_util.hpp"

namespace overlapsim::sim {
namespace {

using namespace overlapsim::sim::testing;
constexpr double kDesignMs = 1e-3;
constexpr double kDesignTol = 1e-12;

class TwoChunkDesign final : public OverlapDesign {
 public:
  const char* name() const override { return "two-chunk"; }
  void start(ExecContext& ctx, int p, OpVertex v) override {
    const OpNode& node = ctx.op(p, v);
    if (node.kind == OpKind::Gemm && node.pair_partner >= 0) {
      const auto c = static_cast<OpVertex>(node.pair_partner);
      handled_.insert({p, c});
      const double half_s = ctx.compute_model().time_s(node) / 2;
      const std::uint64_t half_bytes = ctx.op(p, c).comm_bytes / 2;
      auto parts_left = std::make_shared<int>(2);
      auto part_done = [&ctx, p, c, parts_left] {
        if (--*parts_left == 0) ctx.finish_op(p, c);
      };
      ctx.compute_for(p, v, half_s, [&ctx, p, v, c, half_s, half_bytes, part_done] {
        ctx.launch_comm_part(p, c, half_bytes, 1, part_done);
        ctx.compute_for(p, v, half_s, [&ctx, p, v, c, half_bytes, part_done] {
          ctx.finish_op(p, v);
          ctx.launch_comm_part(p, c, half_bytes, 2, part_done);
        });
      });
      return;
    }
    if (handled_.count({p, v})) return;  // its parts are already running
    if (node.kind == OpKind::Collective || node.kind == OpKind::SendRecv)
      ctx.run_comm(p, v);
    else
      ctx.run_for(p, v, ctx.compute_model().time_s(node));
  }

 private:
  std::set<std::pair<int, OpVertex>> handled_;
};

// Two ranks: gemm (2 ms) -> all-reduce (2 ms) paired; d (1 ms) after the all-reduce.
StepGraph paired_step() {
  StepGraph step = numbered_step(2, {{"tp", {0, 1}}});
  for (int r = 0; r < 2; ++r) {
    auto& prog = step.ranks[r];
    const OpVertex g = add(prog, compute_op("gemm", 2.0));
    const OpVertex c = add(prog, collective_op("ar", 0, 2.0, StreamKind::TensorComm), {g});
    prog.graph[g].pair_partner = static_cast<int>(c);
    prog.graph[c].pair_partner = static_cast<int>(g);
    add(prog, compute_op("d", 1.0), {c});
  }
  return step;
}

StepResult run_with(const StepGraph& step, OverlapDesign& design,
                    std::vector<CollectiveRequest>* log) {
  UnitExecRig rig(step.world_size, 8);
  StepExecutor exec(step, rig.model, rig.net);
  exec.set_collective_launcher(ClosedFormLauncher{&rig.sim, log});
  return exec.run(design);
}

TEST(OverlapDesign, SequentialChargesOpThenCollective) {
  SequentialDesign seq;
  std::vector<CollectiveRequest> log;
  const StepResult r = run_with(paired_step(), seq, &log);
  EXPECT_NEAR(r.step_time_s, 5.0 * kDesignMs, kDesignTol);
  EXPECT_NEAR(r.exposed_comm_s, 2.0 * kDesignMs, kDesignTol);
  EXPECT_EQ(log.size(), 1u);
}

TEST(OverlapDesign, ChunkedDesignOverlapsTheFirstHalf) {
  // gemm halves 0-1, 1-2 ms; all-reduce halves 1-2, 2-3 ms; d 3-4 ms.
  TwoChunkDesign design;
  std::vector<CollectiveRequest> log;
  const StepResult r = run_with(paired_step(), design, &log);
  EXPECT_EQ(r.design, "two-chunk");
  EXPECT_NEAR(r.step_time_s, 4.0 * kDesignMs, kDesignTol);
  EXPECT_NEAR(r.compute_s, 3.0 * kDesignMs, kDesignTol);
  EXPECT_NEAR(r.comm_s, 2.0 * kDesignMs, kDesignTol);
  EXPECT_NEAR(r.overlapped_comm_s, 1.0 * kDesignMs, kDesignTol);
  EXPECT_NEAR(r.exposed_comm_s, 1.0 * kDesignMs, kDesignTol);
  ASSERT_EQ(log.size(), 2u);  // one launch per part, both ranks together
  EXPECT_EQ(log[0].bytes, log[1].bytes);
  for (const auto& rank : r.ranks)
    EXPECT_NEAR(rank.compute_s + rank.exposed_comm_s + rank.bubble_s, rank.step_time_s, kDesignTol);
}

}  // namespace
}  // namespace overlapsim::sim
