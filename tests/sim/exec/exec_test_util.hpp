#pragma once
// Helpers for executor tests: a compute profile with round numbers (a GEMM of F FLOPs
// takes F / 1e15 s, nothing else costs), a network whose collectives take a closed-form
// time (bytes / 1 GB/s), and a small graph builder.
#include <initializer_list>
#include <string>
#include <vector>

#include "sim/profile/compute_model.hpp"
#include "sim/engine/simulator.hpp"
#include "sim/exec/step_executor.hpp"
#include "sim/graph/op_graph.hpp"
#include "sim/network/network_api.hpp"
#include "tests/sim/sim_test_util.hpp"

namespace overlapsim::sim::testing {

inline ComputeProfile unit_profile() { return unit_compute_profile(1e12); }

// Transfers complete at once; collectives go through ClosedFormLauncher instead.
class InstantNetwork final : public NetworkApi {
 public:
  InstantNetwork(Simulator& sim, int ranks, int ranks_per_host)
      : sim_(sim), ranks_(ranks), per_host_(ranks_per_host) {}
  Simulator& simulator() override { return sim_; }
  int num_ranks() const override { return ranks_; }
  int host_of(int rank) const override { return rank / per_host_; }
  void transfer_group(std::span<const Transfer>, Done on_done, std::uint64_t) override {
    sim_.schedule(0.0, std::move(on_done));
  }

 private:
  Simulator& sim_;
  int ranks_, per_host_;
};

// Every collective takes bytes / 1e9 seconds; requests are kept for inspection.
struct ClosedFormLauncher {
  Simulator* sim;
  std::vector<CollectiveRequest>* log;
  void operator()(const CollectiveRequest& req, std::function<void()> done) const {
    log->push_back(req);
    sim->schedule(static_cast<double>(req.bytes) / 1e9, std::move(done));
  }
};

// A GEMM taking `ms` milliseconds under unit_profile().
inline OpNode compute_op(const std::string& name, double ms) {
  OpNode n;
  n.name = name;
  n.kind = OpKind::Gemm;
  n.flops = ms * 1e-3 * 1e15;
  n.bytes = 1;
  return n;
}

// A collective on `group` taking `ms` milliseconds under ClosedFormLauncher.
inline OpNode collective_op(const std::string& name, int group, double ms,
                            StreamKind stream = StreamKind::DataComm) {
  OpNode n;
  n.name = name;
  n.kind = OpKind::Collective;
  n.stream = stream;
  n.collective = CollectiveOp::AllReduce;
  n.comm_group = group;
  n.comm_bytes = static_cast<std::uint64_t>(ms * 1e-3 * 1e9);
  return n;
}

inline OpNode p2p_op(const std::string& name, bool send, int peer, double ms, int group = -1) {
  OpNode n;
  n.name = name;
  n.kind = OpKind::SendRecv;
  n.stream = StreamKind::PipelineComm;
  n.collective = CollectiveOp::SendRecv;
  n.is_send = send;
  n.peer_rank = peer;
  n.comm_group = group;
  n.comm_bytes = static_cast<std::uint64_t>(ms * 1e-3 * 1e9);
  return n;
}

// A step of `ranks` ranks, every one simulated and numbered, on the communicators `groups`.
inline StepGraph numbered_step(int ranks, std::vector<CommGroup> groups = {}) {
  StepGraph step;
  step.world_size = ranks;
  step.groups = std::move(groups);
  step.ranks.resize(static_cast<std::size_t>(ranks));
  for (int r = 0; r < ranks; ++r) step.ranks[static_cast<std::size_t>(r)].rank = r;
  return step;
}

// What a StepExecutor needs besides the step, under unit_profile(): a simulator, an
// InstantNetwork of `ranks` ranks on hosts of `ranks_per_host`, and the compute model.
struct UnitExecRig {
  Simulator sim;
  InstantNetwork net;
  const ComputeProfile profile = unit_profile();
  ComputeModel model{profile};
  UnitExecRig(int ranks, int ranks_per_host) : net(sim, ranks, ranks_per_host) {}
};

// `step` under SequentialDesign with `options`, on a UnitExecRig of its world size (8 ranks a
// host) and collectives timed by ClosedFormLauncher.
inline StepResult run_sequential(const StepGraph& step, const ExecOptions& options) {
  UnitExecRig rig(step.world_size, 8);
  StepExecutor exec(step, rig.model, rig.net, options);
  std::vector<CollectiveRequest> log;
  exec.set_collective_launcher(ClosedFormLauncher{&rig.sim, &log});
  SequentialDesign seq;
  return exec.run(seq);
}

inline OpVertex add(RankProgram& prog, OpNode node, std::initializer_list<OpVertex> deps = {}) {
  const OpVertex v = boost::add_vertex(std::move(node), prog.graph);
  for (OpVertex d : deps) boost::add_edge(d, v, prog.graph);
  return v;
}

}  // namespace overlapsim::sim::testing
