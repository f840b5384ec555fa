// The tile-wise design's copy-engine transport (designs.hpp: plan_copy_engine).
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

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
  // The epilogue's reduction (none for All-to-All, which stores its own part as is).
  // 2 ranks: the fast path hides it in the next tile's mainloop but for a fraction of the
  // own part's time. More ranks: the general path's passes over each own tile stall the
  // SM for tile_reduce_s, paid once per own tile by the most loaded SM.
  const bool general = reduce && n > 2 && w.epilogue_reduce_Bps > 0;
  double stretch = 1;
  if (reduce && !general) stretch = 1 + w.epilogue_fraction * (n - 1);
  const double tile_reduce_s =
      general ? (n + 2) * (w.bytes / w.tiles) * w.sms / w.epilogue_reduce_Bps : 0;
  double reduced_s = 0;
  const double x_back = x * (1 + w.phase2_contention * (n - 2));
  for (int j = 0; j < g; ++j) {
    const double a = done_s((n - 1) * g + j);
    const double own_tiles = w.tiles / n * (j + 1) / g;
    const double reduced_by_j = std::ceil(own_tiles / w.sms - 1e-9) * tile_reduce_s;
    double f = finished + (a - computed) * stretch + (reduced_by_j - reduced_s);
    reduced_s = reduced_by_j;
    // The last partial to arrive still has its tile's passes ahead of it.
    if (reduce) f = std::max(f, arrival[static_cast<std::size_t>(j)] + tile_reduce_s);
    computed = a;
    plan.compute_s.push_back(f - finished);
    finished = f;
    plan.comm_share.push_back(0);
    if (w.op == CollectiveOp::AllReduce) {
      if (w.tail_Bps > 0 && j == g - 1) {
        // The tail kernel: behind the GEMM on its stream, no wait; the link is shared with
        // any copy still running.
        const double tail = (n - 1) * (w.tail_latency_s + b / w.tail_Bps);
        copies_end = std::max(f, copies_end) + tail;
        plan.part_s.push_back(tail);
        plan.part_delay_s.push_back(0);
        continue;
      }
      // The reduced group goes back to every peer, all ranks copying back to back at once.
      copies_end = std::max(f, copies_end) + w.wait_s + (n - 1) * x_back;
      plan.part_s.push_back((n - 1) * x_back);
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
                              "the 2-rank owner epilogue's reduction cost on its own part, >= 0");
  // Profiles before session 4's fit have no rate for the > 2-rank epilogue: their fraction
  // then counts per peer's partial, the meaning it had there (docs/profile-format.md).
  if (profile.designs.find("tilewise", "epilogue_reduce_bandwidth_Bps"))
    epilogue_Bps_ = p.need_at_least("epilogue_reduce_bandwidth_Bps", 1,
                                    "the > 2-rank owner epilogue's tile passes over all SMs, "
                                    "such as 1.5TBps");
  if (profile.designs.find("tilewise", "copy_engine_phase2_contention"))
    phase2_contention_ = p.need_at_least(
        "copy_engine_phase2_contention", 0,
        "the all-reduce phase-2 copies' slowdown per rank beyond 2, >= 0 (0: none)");
  const bool tail_bw = profile.designs.find("tilewise", "tail_kernel_bandwidth_Bps") != nullptr;
  const bool tail_lat = profile.designs.find("tilewise", "tail_kernel_latency_s") != nullptr;
  if (tail_bw != tail_lat)
    throw std::invalid_argument(
        std::string("profile: designs.tilewise.") +
        (tail_bw ? "tail_kernel_latency_s" : "tail_kernel_bandwidth_Bps") +
        " missing: the tail kernel's exchange needs both its rate and its fixed time");
  if (tail_bw) {
    tail_Bps_ = p.need_at_least("tail_kernel_bandwidth_Bps", 1,
                                "the tail kernel's two-way exchange rate, such as 370GBps");
    tail_latency_s_ = p.need_at_least("tail_kernel_latency_s", 0,
                                      "the tail kernel's fixed time per exchange, such as 9us");
  }
  for (auto& u : p.used()) parameters_.push_back(u);
}

void TilewiseDesign::set_allreduce_phase2(AllReducePhase2 mode) {
  if (mode == AllReducePhase2::TailKernel && tail_Bps_ <= 0)
    throw std::invalid_argument(
        "tilewise copy_engine: the tail-kernel phase 2 needs designs.tilewise."
        "tail_kernel_bandwidth_Bps and tail_kernel_latency_s in the profile (overlapsim fit "
        "writes them from overlap-bench's peer_copy tail_kernel rows)");
  phase2_ = mode;
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
  w.epilogue_reduce_Bps = epilogue_Bps_;
  w.phase2_contention = phase2_contention_;
  // Like the kernel's tuner (OVERLAPSIM_TILEWISE_CE_GROUPS, 2, 4, 8, 16 groups per part
  // whatever the rank count): the fastest groups per part up to max_groups.
  // and, for an all-reduce, the phase-2 modes it may time.
  std::vector<double> tail_rates;
  if (phase2_ != AllReducePhase2::TailKernel) tail_rates.push_back(0);
  if (w.op == CollectiveOp::AllReduce && tail_Bps_ > 0 && phase2_ != AllReducePhase2::CopyEngine)
    tail_rates.push_back(tail_Bps_);
  if (tail_rates.empty()) {
    why_not = "copy-engine transport: the tail kernel is an all-reduce's phase 2";
    return std::nullopt;
  }
  w.tail_latency_s = tail_latency_s_;
  CopyEnginePlan best;
  best.end_s = 1e300;
  const double part_tiles = w.tiles / w.world;
  for (int g = std::min(2, max_groups_); g <= max_groups_ && (g == 1 || g <= part_tiles); g *= 2)
    for (const double tail_Bps : tail_rates) {
      w.groups_per_part = g;
      w.tail_Bps = tail_Bps;
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
