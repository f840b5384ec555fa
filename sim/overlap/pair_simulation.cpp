#include "sim/overlap/pair_simulation.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "sim/compute/compute_model.hpp"
#include "sim/engine/simulator.hpp"
#include "sim/exec/step_executor.hpp"
#include "sim/network/flow_network.hpp"
#include "sim/overlap/designs.hpp"
#include "sim/overlap/registry.hpp"

namespace overlapsim::sim {
namespace {

StepGraph pair_step(const PairCase& pc) {
  StepGraph step;
  step.workload = "pair";
  step.world_size = pc.world;
  CommGroup group{"tp", {}};
  for (int r = 0; r < pc.world; ++r) group.ranks.push_back(r);
  step.groups.push_back(group);
  for (int r = 0; r < pc.world; ++r) {
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

double interpolate(const std::vector<std::pair<std::uint64_t, double>>& pts, std::uint64_t b) {
  const double x = static_cast<double>(b);
  if (pts.size() == 1 || x <= static_cast<double>(pts.front().first))
    return pts.front().second * x / static_cast<double>(pts.front().first);
  for (std::size_t i = 1; i < pts.size(); ++i) {
    if (x <= static_cast<double>(pts[i].first) || i + 1 == pts.size()) {
      const double x0 = static_cast<double>(pts[i - 1].first), y0 = pts[i - 1].second;
      const double x1 = static_cast<double>(pts[i].first), y1 = pts[i].second;
      return y0 + (x - x0) / (x1 - x0) * (y1 - y0);
    }
  }
  return pts.back().second;
}

}  // namespace

PairOutcome simulate_pair(const PairCase& pc, const std::string& design_name,
                          const Profile& profile, const Topology& topology) {
  if (pc.world < 2) throw std::invalid_argument("simulate_pair: world must be >= 2");
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

  auto points = pc.comm_time_points;
  std::sort(points.begin(), points.end());
  const CollectiveCurve* curve =
      points.empty()
          ? profile.collectives.find(pc.collective, Algorithm::Auto, CommScope::IntraNode, pc.world)
          : nullptr;

  const StepGraph step = pair_step(pc);
  Simulator sim;
  FlowNetwork net(sim, topology);
  if (pc.world > net.num_ranks())
    throw std::invalid_argument(fmt::format(
        "simulate_pair: world {} exceeds the topology's {} ranks", pc.world, net.num_ranks()));
  StepExecutor exec(step, model, net);
  if (!points.empty()) {
    exec.set_collective_launcher(
        [&sim, &points](const CollectiveRequest& req, std::function<void()> done) {
          sim.schedule(interpolate(points, req.bytes), std::move(done));
        });
  } else if (curve) {
    exec.set_collective_launcher(
        [&sim, curve](const CollectiveRequest& req, std::function<void()> done) {
          sim.schedule(curve->time_in_compute_loop_s(req.bytes, static_cast<int>(req.ranks.size())),
                       std::move(done));
        });
  }
  auto design = make_design(design_name, profile);
  if (PairedDesign* paired = as_paired(*design)) {
    paired->set_scaled_parts(0, {pc.world});
    // Measured alone times (points or the profile's curve) include NCCL's fixed cost.
    paired->set_call_latency_in_collectives(!points.empty() || curve != nullptr);
  }
  if (PairedDesign* paired = as_paired(*design); paired && pc.comm_bytes > 0) {
    // Plan with the collective's rate alone (a step learns it from earlier parts).
    // Latency and rate through the alone times at the full size and a sixteenth of it.
    auto alone_s = [&](std::uint64_t b) {
      if (!points.empty()) return interpolate(points, b);
      if (curve) return curve->time_in_compute_loop_s(b, pc.world);
      return -1.0;
    };
    if (!points.empty() || curve)
      paired->set_comm_time_hint([points, curve, n = pc.world](double b) {
        const auto bytes = static_cast<std::uint64_t>(b);
        return !points.empty() ? interpolate(points, bytes)
                               : curve->time_in_compute_loop_s(bytes, n);
      });
    const double full = alone_s(pc.comm_bytes), part = alone_s(pc.comm_bytes / 16);
    if (full > 0) {
      const double rate =
          std::max(0.0, (full - part) / static_cast<double>(pc.comm_bytes - pc.comm_bytes / 16));
      const double latency = std::max(0.0, full - rate * static_cast<double>(pc.comm_bytes));
      paired->set_comm_rate_hint(rate > 0 ? rate : full / static_cast<double>(pc.comm_bytes),
                                 latency);
    }
  }
  if (auto* d = dynamic_cast<DecomposedDesign*>(design.get()); d && pc.chunks > 0)
    d->set_chunks(pc.chunks);
  if (auto* t = dynamic_cast<TilewiseDesign*>(design.get())) {
    if (pc.comm_sms > 0) t->set_comm_sms(pc.comm_sms, pc.comm_stretch);
    if (!pc.waves_per_group.empty()) t->set_partition(pc.waves_per_group);
    if (pc.max_groups > 0) t->set_max_groups(pc.max_groups);
    if (pc.copy_engine) {
      t->set_transport(TilewiseDesign::Transport::CopyEngine, profile);
      t->set_allreduce_phase2(pc.phase2);
    }
  }
  const StepResult r = exec.run(*design);
  out.time_s = r.step_time_s;
  out.compute_s = r.compute_s;
  if (const PairedDesign* pd = as_paired(*design)) {
    out.overlapped = pd->stats().overlapped > 0;
    if (!pd->stats().sequential.empty()) out.why_not = pd->stats().sequential.begin()->first;
  }
  return out;
}

}  // namespace overlapsim::sim
