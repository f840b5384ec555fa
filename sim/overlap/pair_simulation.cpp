#include "sim/overlap/pair_simulation.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "sim/engine/simulator.hpp"
#include "sim/exec/step_executor.hpp"
#include "sim/network/flow_network.hpp"
#include "sim/overlap/designs.hpp"
#include "sim/overlap/registry.hpp"
#include "sim/profile/compute_model.hpp"
#include "sim/scenario/scenario.hpp"

namespace overlapsim::sim {

StepGraph pair_step(const PairCase& pc) {
  StepGraph step;
  step.workload = "pair";
  CommGroup group{"tp", pc.ranks};
  if (group.ranks.empty())
    for (int r = 0; r < pc.world; ++r) group.ranks.push_back(r);
  step.world_size = *std::max_element(group.ranks.begin(), group.ranks.end()) + 1;
  step.groups.push_back(group);
  for (int r : group.ranks) {
    RankProgram prog;
    prog.rank = r;
    OpNode comm;
    comm.name = "pair.collective";
    comm.kind = OpKind::Collective;
    comm.stream = StreamKind::TensorComm;
    comm.collective = pc.collective;
    comm.comm_bytes = pc.comm_bytes;
    comm.comm_group = 0;
    OpNode compute = pc.compute;
    compute.stream = StreamKind::Compute;
    if (compute.name.empty()) compute.name = "pair.op";
    const OpVertex first = boost::add_vertex(pc.producer ? compute : comm, prog.graph);
    const OpVertex second = boost::add_vertex(pc.producer ? comm : compute, prog.graph);
    boost::add_edge(first, second, prog.graph);
    prog.graph[first].pair_partner = static_cast<int>(second);
    prog.graph[second].pair_partner = static_cast<int>(first);
    step.ranks.push_back(std::move(prog));
  }
  return step;
}

PairOutcome simulate_pair(const PairCase& pc, const std::string& design_name,
                          const Profile& profile, const Topology& topology) {
  if (pc.ranks.empty() ? pc.world < 2 : pc.ranks.size() < 2)
    throw std::invalid_argument("simulate_pair: world must be >= 2");
  Profile scaled = profile;
  PairOutcome out;
  {
    const ComputeModel base(profile.compute);
    const OpCost cost = base.cost(pc.compute);
    if (pc.op_time_s > 0) {
      // Scale every rate so the op alone takes op_time_s (launch overhead kept).
      const double busy = cost.time_s - cost.launch_s;
      const double want = pc.op_time_s - cost.launch_s;
      if (busy <= 0 || want <= 0)
        throw std::invalid_argument("simulate_pair: op_time_s shorter than the launch overhead");
      const double f = busy / want;
      for (auto& [prec, peak] : scaled.compute.peak_flops_per_s) peak.value *= f;
      scaled.compute.memory_bandwidth_Bps.value *= f;
    }
  }
  const ComputeModel model(scaled.compute);
  out.op_alone_s = model.time_s(pc.compute);

  const StepGraph step = pair_step(pc);
  if (step.world_size > static_cast<int>(topology.num_gpus()))
    throw std::invalid_argument(fmt::format("simulate_pair: world {} exceeds the topology's {} ranks",
                                            step.world_size, topology.num_gpus()));
  ScenarioOptions options;
  options.designs = {design_name};
  options.reuse_sequential = false;
  // Plan with the collective's alone time (a step learns its rate from earlier parts).
  options.planning.plan_with_call_times = true;
  options.planning.scaled_parts_min_ranks = pc.scaled_parts_min_ranks;
  options.timing = pc.timing;
  options.measured_times = pc.comm_time_points;
  options.design_options.tilewise_transport =
      pc.copy_engine ? TilewiseDesign::Transport::CopyEngine : TilewiseDesign::Transport::Nccl;
  options.configure_design = [&pc](OverlapDesign& design) {
    if (auto* d = dynamic_cast<DecomposedDesign*>(&design); d && pc.chunks > 0)
      d->set_chunks(pc.chunks);
    if (auto* t = dynamic_cast<TilewiseDesign*>(&design)) {
      if (pc.comm_sms > 0) t->set_comm_sms(pc.comm_sms, pc.comm_stretch);
      if (!pc.waves_per_group.empty()) t->set_partition(pc.waves_per_group);
      if (pc.max_groups > 0) t->set_max_groups(pc.max_groups);
      if (pc.copy_engine) {
        t->set_allreduce_phase2(pc.phase2);
        t->set_route(pc.route);
        if (pc.ring) t->set_ring_replay(*pc.ring);
      }
    }
  };
  // The designs read the profile as given; the compute model times the op at op_time_s.
  const ScenarioResult result = run_scenario({step, topology, scaled, options, &profile});
  const DesignRun& run = result.runs.front();
  out.time_s = run.result.step_time_s;
  out.compute_s = run.result.compute_s;
  if (run.paired) {
    out.overlapped = run.pairs.overlapped > 0;
    if (!run.pairs.sequential.empty()) out.why_not = run.pairs.sequential.begin()->first;
  }
  return out;
}

}  // namespace overlapsim::sim
