#pragma once
// Runs one training step — every simulated rank's operation graph — on one Simulator and
// one NetworkApi, and accounts where each rank's time went.
//
// Semantics (docs/simulate.md):
// - An op starts when all its predecessors have finished and its stream is free. Each
//   stream of a rank runs its ops one at a time in program order (a topological order
//   that prefers lower vertex indices, i.e. the order the generator added them). SendRecv
//   ops are not serialised: like NCCL grouped send/receive they start when their inputs
//   are done, and the generator's edges order them.
// - A Collective starts moving data when every simulated member of its communicator has
//   reached it (the k-th collective a rank issues on a communicator meets the k-th of
//   every other member, as NCCL requires); members folded away are taken to arrive at
//   the same time. It runs through sim::start_collective (or an injected launcher).
// - A send meets the receive of the same (source, destination) pair in issue order; the
//   transfer starts when both have been reached, and both finish when it has arrived.
// - With identical-rank folding, when a collective starts its symmetric images on the
//   same family's other groups are launched as background traffic (comm_images.hpp).
// - How a ready op becomes time and traffic is the OverlapDesign's business
//   (overlap_design.hpp); `sequential` is what the graph expresses.
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "sim/collectives/collective.hpp"
#include "sim/collectives/collective_cost_model.hpp"
#include "sim/exec/comm_images.hpp"
#include "sim/exec/overlap_design.hpp"
#include "sim/exec/step_result.hpp"
#include "sim/exec/timeline.hpp"
#include "sim/graph/op_graph.hpp"
#include "sim/network/network_api.hpp"
#include "sim/profile/compute_model.hpp"
#include "sim/profile/log_curve.hpp"

namespace overlapsim::sim {

class StepLayout;  // step_layout.hpp

// Compute times of a step's ops (ComputeModel::time_s) under one model, kept across the
// runs that share both (a scenario's design runs): the first run asks the model for each
// op, the later ones read the time back. Per program, per op; NaN: not asked yet.
struct OpTimeMemo {
  const ComputeModel* model = nullptr;  // the model the times are of
  std::vector<std::vector<double>> times;
  // Times by the fields cost() reads: a step's ops repeat per layer and microbatch.
  std::unordered_map<OpCostKey, double, OpCostKey::Hash> by_key;
};

struct ExecOptions {
  CollectiveTuning tuning;  // for the default launcher (sim::start_collective)
  BackgroundImages images = BackgroundImages::InterHost;
  bool record_timeline = false;
  std::vector<int> timeline_ranks;  // global ranks to record; empty: every simulated rank
  // Cumulative bytes per link class (names in link_classes), sampled when an op of the
  // first simulated rank finishes, at most once per link_sample_interval_s.
  std::vector<std::string> link_classes;
  std::vector<double> link_capacity_Bps;  // per class (optional): utilisation counters
  std::function<std::vector<double>()> link_bytes;
  double link_sample_interval_s = 0;
  // Period marks for a sampled step (workloads/microbatch_sampling): where both are >= 0,
  // each simulated rank's times are taken when the first op of its forward chunk of each
  // index begins (a forward chunk: the compute stream's consecutive forward ops of one
  // micro-batch, recomputation and ops of no micro-batch left out; counted from 0), into
  // StepResult::period_start and period_end.
  int period_chunks[2] = {-1, -1};
  // Interference the step's own concurrency pays: a compute op the design runs whole
  // (ExecContext::run_for) progresses at 1/this of its rate while any communication of its
  // rank moves data (NCCL's CTAs take SMs, HBM and L2 are shared). The scenario sets the
  // factor the designs are charged for the same situation; 1: none.
  double concurrent_comm_slowdown = 1;
  // For GEMM ops instead of the factor, where not empty: the slowdown by the op's time per
  // kernel (its time / its batch: a grouped GEMM launches one kernel per group member).
  LogCurve gemm_comm_slowdown;
  // For elementwise (memory-bound) ops, where not empty: the slowdown by the op's time per
  // kernel (its time / its launches).
  LogCurve memory_comm_slowdown;
  // For attention ops, where not empty: by the op's time per kernel (its time / launches).
  LogCurve attention_comm_slowdown;
  // A communication op the design runs whole (ExecContext::run_comm: NCCL kernels) that
  // becomes ready while its rank's compute stream runs a GEMM op (ExecContext::run_for)
  // starts at that GEMM's next kernel boundary: a vendor GEMM kernel holds every SM until
  // it ends and stream priority does not preempt it, so NCCL's kernel finds no SM before.
  // Boundaries fall every op time / batch from the op's start (a grouped GEMM launches one
  // kernel per member); the last is the op's end, whenever it comes.
  bool comm_waits_for_gemm_kernel = false;
  // The same under a memory-bound (elementwise) op for a communication op on a
  // default-priority stream (OpNode::high_priority false): at equal priority NCCL's CTAs
  // queue behind the kernel's remaining CTAs; at high priority they go first (and run
  // slower beside it: collective_memory_slowdown). Boundaries every op time / launches.
  bool comm_waits_for_memory_kernel = false;
  // Where not empty: a collective (a whole op or a design's part; not a send) progresses at
  // 1/s of its rate while a member's compute stream runs a memory-bound (elementwise) op,
  // s this curve at the op's time per kernel (time / launches): NCCL's copies and
  // reductions share HBM with it. The collective's end moves later by the work so lost
  // (its flows are not slowed).
  LogCurve collective_memory_slowdown;
};

class StepExecutor {
 public:
  // Keeps references to all three; `net.simulator()` is the clock. Throws
  // std::invalid_argument for malformed steps (bad ranks, groups, cycles).
  StepExecutor(const StepGraph& step, const ComputeModel& compute, NetworkApi& net,
               ExecOptions options = {});
  // The same with `layout` made for `step` and options.images, so that several runs of one
  // step (one per design) derive program order and edge rows once; null: made here.
  StepExecutor(const StepGraph& step, const ComputeModel& compute, NetworkApi& net,
               ExecOptions options, std::shared_ptr<const StepLayout> layout);
  ~StepExecutor();
  StepExecutor(const StepExecutor&) = delete;
  StepExecutor& operator=(const StepExecutor&) = delete;

  // Replaces sim::start_collective (tests use closed-form launchers).
  void set_collective_launcher(CollectiveLauncher launcher);
  // Starts the background images of one collective or send together (nobody waits for
  // them; CollectiveCostModel::launch_background). Unset: each through the collective
  // launcher, one at a time.
  using BackgroundLauncher = std::function<void(std::span<const CollectiveRequest>)>;
  void set_background_launcher(BackgroundLauncher launcher);
  // Reads and fills `memo` for the ops' compute times; ignored unless memo->model is this
  // executor's model.
  void set_op_time_memo(std::shared_ptr<OpTimeMemo> memo);

  // Runs the step once, starting at simulator().now(). Throws std::runtime_error naming
  // the stuck ops when the step cannot complete (a deadlock in the graph).
  StepResult run(OverlapDesign& design);

  const Timeline& timeline() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace overlapsim::sim
