#include "redistribution/cost.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "config/error.hpp"
#include "redistribution/recipe.hpp"
#include "sim/engine/simulator.hpp"
#include "sim/network/flow_network.hpp"
#include "sim/profile/compute_model.hpp"

namespace overlapsim::redistribution {
namespace {

// The NCCL calls one group of a step makes: one collective, or one send/recv per moving
// pair for a permute. Sizes follow nccl-tests' conventions (collective.hpp).
std::vector<sim::CollectiveRequest> requests(const Plan& plan, const Step& s,
                                             const std::vector<int>& group) {
  const auto eb = static_cast<std::uint64_t>(plan.element_bytes);
  const auto n = static_cast<std::uint64_t>(group.size());
  sim::CollectiveRequest r;
  r.ranks = group;
  std::vector<sim::CollectiveRequest> out;
  switch (s.kind) {
    case StepKind::Slice: return out;
    case StepKind::AllReduce:
      r.op = sim::CollectiveOp::AllReduce;
      r.bytes = static_cast<std::uint64_t>(s.in_elements) * eb;
      break;
    case StepKind::ReduceScatter:
      r.op = sim::CollectiveOp::ReduceScatter;
      r.bytes = static_cast<std::uint64_t>(s.out_elements) * n * eb;
      break;
    case StepKind::AllGather:
      r.op = sim::CollectiveOp::AllGather;
      r.bytes = static_cast<std::uint64_t>(s.in_elements) * n * eb;
      break;
    case StepKind::AllToAll:
      r.op = sim::CollectiveOp::AllToAll;
      r.bytes = static_cast<std::uint64_t>(s.max_pair_elements) * n * eb;
      break;
    case StepKind::AllToAllV:
    case StepKind::Permute: {
      // Grouped send/recv, one per moving pair (as an executor posts them inside one NCCL
      // group), all at once.
      for (int d : group) {
        for (const Piece& p : incoming(plan.mesh, plan.shape, s, d)) {
          if (p.from == d) continue;
          sim::CollectiveRequest sr;
          sr.op = sim::CollectiveOp::SendRecv;
          sr.ranks = {p.from, d};
          sr.bytes = static_cast<std::uint64_t>(p.box.elements()) * eb;
          out.push_back(std::move(sr));
        }
      }
      return out;
    }
  }
  out.push_back(std::move(r));
  return out;
}

// One local copy of `elements` as the compute model's memory-bound op: read once, written once.
double copy_s(const sim::ComputeModel& compute, std::int64_t elements, int element_bytes) {
  sim::OpNode op;
  op.name = "redistribution.copy";
  op.kind = sim::OpKind::Elementwise;
  op.bytes = 2 * static_cast<std::uint64_t>(elements) * static_cast<std::uint64_t>(element_bytes);
  return compute.time_s(op);
}

// The slowest device's copies before and after the step's call.
std::pair<double, double> copies_s(const Plan& plan, const Step& s,
                                   const sim::ComputeModel& compute) {
  double before = 0, after = 0;
  for (const StepRecipe& r : recipes(plan, s)) {
    double b = 0, a = 0;
    for (const BoxCopy& c : r.before) b += copy_s(compute, c.box.elements(), plan.element_bytes);
    for (const BoxCopy& c : r.after) a += copy_s(compute, c.box.elements(), plan.element_bytes);
    before = std::max(before, b);
    after = std::max(after, a);
  }
  return {before, after};
}

}  // namespace

PlanTiming time_plan(const Plan& plan, const sim::Topology& topology,
                     const sim::Profile& profile,
                     const sim::CollectiveTimingOptions& options) {
  if (plan.mesh.num_devices() != topology.num_gpus())
    throw config::ConfigError(fmt::format(
        "--mesh: {} has {} devices but the cluster has {} GPUs (expected a mesh of every GPU "
        "of the cluster)",
        plan.mesh.to_string(), plan.mesh.num_devices(), topology.num_gpus()));
  const sim::ComputeModel compute(profile.compute);
  PlanTiming t;
  for (const Step& s : plan.steps) {
    StepTiming st;
    const auto [before_s, after_s] = copies_s(plan, s, compute);
    st.copy_s = before_s + after_s;
    if (is_collective(s.kind)) {
      sim::Simulator simulator;
      sim::FlowNetwork net(simulator, topology);
      sim::CollectiveCostModel costs(profile.collectives, net, options);
      const auto all = groups(plan.mesh, s.axes);
      std::size_t launched = 0, done = 0;
      for (const auto& g : all)
        for (auto& req : requests(plan, s, g)) {
          ++launched;
          costs.launch(req, [&done] { ++done; });
        }
      simulator.run();
      if (done != launched) throw std::logic_error("a redistribution collective did not finish");
      st.time_s = simulator.now();
      st.collective =
          s.kind == StepKind::Permute || s.kind == StepKind::AllToAllV
              ? fmt::format("sendrecv x {} pairs in groups of {}", launched, all.front().size())
              : fmt::format("{} x {} groups of {}",
                            sim::to_string(requests(plan, s, all.front()).front().op), all.size(),
                            all.front().size());
    }
    st.time_s += st.copy_s;
    t.time_s += st.time_s;
    t.steps.push_back(std::move(st));
  }
  return t;
}

}  // namespace overlapsim::redistribution
