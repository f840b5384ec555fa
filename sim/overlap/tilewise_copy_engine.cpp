// The tile-wise design's copy-engine transport (designs.hpp: plan_copy_engine).
#include <algorithm>
#include <cmath>

#include "sim/overlap/designs.hpp"

namespace overlapsim::sim {

CopyEnginePlan plan_copy_engine(const CopyEngineProblem& w) {
  CopyEnginePlan plan;
  const int n = w.world, g = w.groups_per_part, groups = n * g;
  const double wave_s = w.gemm_s / std::ceil(w.tiles / w.sms);
  // The GEMM finishes group k at the end of the wave holding its last tile.
  auto done_s = [&](int k) {
    const double last_tile = w.tiles * (k + 1) / groups;
    return std::ceil(last_tile / w.sms - 1e-9) * wave_s;
  };
  const double b = w.bytes / groups;
  const double x = w.copy_latency_s + b / w.copy_Bps;
  const bool reduce = w.op != CollectiveOp::AllToAll;
  double copies_end = 0, computed = 0;
  std::vector<double> arrival(static_cast<std::size_t>(g), 0.0);
  for (int k = 0; k < (n - 1) * g; ++k) {
    const double a = done_s(k);
    plan.compute_s.push_back(a - computed);
    computed = a;
    copies_end = std::max(a, copies_end) + w.wait_s + x;
    plan.part_s.push_back(x);
    plan.part_delay_s.push_back(w.wait_s);
    plan.comm_share.push_back(1.0 / ((n - 1) * g));
    // The last peer position's group j is the latest to reach its owner.
    arrival[static_cast<std::size_t>(k % g)] = copies_end;
  }
  double finished = computed;
  // The owner's epilogue reads one partial tile per peer for each own tile: its cost
  // grows with the n - 1 peers (epilogue_fraction is the cost of one peer's partial).
  const double epilogue = reduce ? 1 + w.epilogue_fraction * (n - 1) : 1.0;
  for (int j = 0; j < g; ++j) {
    const double a = done_s((n - 1) * g + j);
    double f = finished + (a - computed) * epilogue;
    if (reduce) f = std::max(f, arrival[static_cast<std::size_t>(j)]);
    computed = a;
    plan.compute_s.push_back(f - finished);
    finished = f;
    plan.comm_share.push_back(0);
    if (w.op == CollectiveOp::AllReduce) {
      // The reduced group goes back to every peer.
      copies_end = std::max(f, copies_end) + w.wait_s + (n - 1) * x;
      plan.part_s.push_back((n - 1) * x);
      plan.part_delay_s.push_back(w.wait_s);
    } else {
      plan.part_s.push_back(0);
      plan.part_delay_s.push_back(0);
    }
  }
  plan.end_s = std::max(finished, copies_end);
  return plan;
}

void TilewiseDesign::set_transport(Transport transport, const Profile& profile) {
  transport_ = transport;
  if (transport != Transport::CopyEngine) return;
  DesignParameters p(profile, "tilewise");
  copy_Bps_ = p.need_at_least("copy_engine_bandwidth_Bps", 1,
                              "the copy engines' peer-copy rate per GPU, such as 400GBps");
  copy_latency_s_ = p.need_at_least("copy_engine_latency_s", 0,
                                    "the copy engines' fixed time per copy, such as 7us");
  epilogue_ = p.need_at_least("epilogue_reduce_overhead_fraction", 0,
                              "the owner epilogue's reduction cost on its own part, >= 0");
  for (auto& u : p.used()) parameters_.push_back(u);
}

std::optional<PairSchedule> TilewiseDesign::copy_engine_schedule(const ComputeModel& model,
                                                                 const PairView& pair,
                                                                 std::string& why_not) const {
  if (!pair.intra_host || pair.comm_ranks < 2) {
    why_not = "copy-engine transport: communicator not inside one NVLink host";
    return std::nullopt;
  }
  const OpNode& op = *pair.compute;
  CopyEngineProblem w;
  w.op = pair.comm->collective;
  w.world = pair.comm_ranks;
  w.tiles = gemm_tiles(op, tile_m_, tile_n_);
  w.sms = sms();
  w.gemm_s = own_gemm_s(model, op) * (1 + signal_);
  w.bytes = static_cast<double>(pair.comm->comm_bytes);
  w.copy_Bps = copy_Bps_;
  w.copy_latency_s = copy_latency_s_;
  w.wait_s = wait_s_;
  w.epilogue_fraction = epilogue_;
  // Like the kernel's tuner: the groups per part its predictor finds fastest.
  CopyEnginePlan best;
  best.end_s = 1e300;
  for (int g = 1; g == 1 || w.world * g <= max_groups_; g *= 2) {
    w.groups_per_part = g;
    CopyEnginePlan plan = plan_copy_engine(w);
    if (plan.end_s < best.end_s) best = std::move(plan);
  }
  PairSchedule s;
  s.compute_s = std::move(best.compute_s);
  s.comm_share = std::move(best.comm_share);
  s.part_time_s = std::move(best.part_s);
  s.part_delays_s = std::move(best.part_delay_s);
  // The copy engines share HBM with the GEMM (NCCL's measured interference, assumed here).
  s.compute_slowdown = interference_;
  return s;
}

}  // namespace overlapsim::sim
