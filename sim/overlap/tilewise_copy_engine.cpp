// The tile-wise design's copy-engine transport (designs.hpp: plan_copy_engine).
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "config/error.hpp"
#include "sim/overlap/designs.hpp"

namespace overlapsim::sim {

CopyEnginePlan plan_copy_engine(const CopyEngineProblem& w) {
  tilewise_plan::CopyEngineProblem p;
  switch (w.op) {
    case CollectiveOp::ReduceScatter:
      p.op = tilewise_plan::Collective::ReduceScatter;
      break;
    case CollectiveOp::AllToAll:
      p.op = tilewise_plan::Collective::AllToAll;
      break;
    default:
      p.op = tilewise_plan::Collective::AllReduce;
  }
  p.world = w.world;
  p.groups_per_part = w.groups_per_part;
  p.tiles = w.tiles;
  p.ctas = w.sms;
  p.gemm_s = w.gemm_s;
  p.bytes = w.bytes;
  p.groups = tilewise_plan::uniform_groups(w.world, w.groups_per_part, w.tiles, w.bytes);
  p.copy_s = tilewise_plan::linear_time(w.copy_latency_s, w.copy_Bps);
  // One wait per group on the copy stream, before all of that group's copies, and each
  // copy's own stream operations.
  p.wait_s = w.wait_s;
  p.copy_ops_s = w.copy_ops_s;
  p.epilogue_fraction = w.epilogue_fraction;
  p.epilogue_reduce_Bps = w.epilogue_reduce_Bps;
  p.phase2_contention = w.phase2_contention;
  if (w.tail_Bps > 0) {
    p.phase2 = tilewise_plan::Phase2::TailKernel;
    p.tail_s = tilewise_plan::tail_exchange_time(w.world, w.tail_latency_s, w.tail_Bps);
  }
  // The copy stream carries the peer copies, then phase 2's.
  p.phase2_after_peer_copies = true;
  return tilewise_plan::plan_copy_engine(p);
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
  // Older profiles have no rate for the > 2-rank epilogue: their fraction
  // then counts per peer's partial, the meaning it had there (docs/profile-format.md).
  if (profile.designs.find("tilewise", "epilogue_reduce_bandwidth_Bps"))
    epilogue_Bps_ = p.need_at_least("epilogue_reduce_bandwidth_Bps", 1,
                                    "the > 2-rank owner epilogue's tile passes over all SMs, "
                                    "such as 1.5TBps");
  if (profile.designs.find("tilewise", "copy_engine_phase2_contention"))
    phase2_contention_ = p.need_at_least(
        "copy_engine_phase2_contention", 0,
        "the all-reduce phase-2 copies' slowdown per rank beyond 2, >= 0 (0: none)");
  // The stream operations each copy takes (flag write, counter wait and reset), measured:
  // they include the group's wait, which is then not charged again.
  if (profile.designs.find("tilewise", "copy_engine_stream_ops_s"))
    copy_ops_s_ = p.need_at_least("copy_engine_stream_ops_s", 0,
                                  "the stream operations per copy-engine copy, such as 7us");
  if (p.has_rate_and_time("tail_kernel_bandwidth_Bps", "tail_kernel_latency_s",
                          "the tail kernel's exchange")) {
    tail_Bps_ = p.need_at_least("tail_kernel_bandwidth_Bps", 1,
                                "the tail kernel's two-way exchange rate, such as 370GBps");
    tail_latency_s_ = p.need_at_least("tail_kernel_latency_s", 0,
                                      "the tail kernel's fixed time per exchange, such as 9us");
  }
  if (p.has_rate_and_time("allgather_push_bandwidth_Bps", "allgather_push_latency_s",
                          "the AllGather+GEMM push step")) {
    push_Bps_ = p.need_at_least("allgather_push_bandwidth_Bps", 1,
                                "one rotated push step's copy rate, such as 370GBps");
    push_latency_s_ = p.need_at_least("allgather_push_latency_s", 0,
                                      "one push step's fixed time (copy and flag), such as 8us");
  }
  for (auto& u : p.used()) parameters_.push_back(u);
  // The measured stream operations stand in for the assumed wait: it is no longer used.
  if (copy_ops_s_ > 0)
    std::erase_if(parameters_,
                  [](const ParameterUse& u) { return u.key == "tilewise.wait_overhead_s"; });
}

void TilewiseDesign::set_allreduce_phase2(AllReducePhase2 mode) {
  if (mode == AllReducePhase2::TailKernel && tail_Bps_ <= 0)
    throw config::ConfigError(
        "tilewise copy_engine: the tail-kernel phase 2 needs designs.tilewise."
        "tail_kernel_bandwidth_Bps and tail_kernel_latency_s in the profile (overlapsim fit "
        "writes them from overlap-bench's peer_copy tail_kernel rows)");
  phase2_ = mode;
}

std::optional<PairSchedule> TilewiseDesign::allgather_schedule(const ComputeModel& model,
                                                               const PairView& pair,
                                                               std::string& why_not) const {
  if (!pair.intra_host || pair.comm_ranks < 2) {
    why_not = "copy-engine transport: communicator not inside one NVLink host";
    return std::nullopt;
  }
  if (!(push_Bps_ > 0)) {
    why_not = "AllGather+GEMM: the profile has no designs.tilewise.allgather_push_* rates";
    return std::nullopt;
  }
  const OpNode& op = *pair.compute;
  const int n = pair.comm_ranks;
  const double bytes = static_cast<double>(pair.comm->comm_bytes);
  const double m = static_cast<double>(op.gemm.m), k = static_cast<double>(op.gemm.k);
  // The kernel gathers the GEMM's A by rows: the gathered tensor must be A (m x k, any
  // element size) and every rank's block a whole number of tile rows per chunk.
  const double element_bytes = bytes / (m * k * std::max<std::int64_t>(1, op.gemm.batch));
  if (op.gemm.batch != 1 || !(element_bytes == 1 || element_bytes == 2 || element_bytes == 4)) {
    why_not = "AllGather+GEMM: the gathered tensor is not the GEMM's A rows";
    return std::nullopt;
  }
  tilewise_plan::AllGatherProblem w;
  w.world = n;
  w.tiles = gemm_tiles(op, tile_m_, tile_n_);
  w.ctas = sms();
  w.gemm_s = own_gemm_s(model, op);
  // Like the kernel's tuner: chunks per block 1, 2, 4 (rotated pushes, the mode that won
  // or tied on every measured shape), the fastest by the planner.
  tilewise_plan::AllGatherPlan best;
  best.end_s = 1e300;
  int best_chunks = 0;
  double best_step_s = 0;
  for (int chunks : {1, 2, 4}) {
    if (std::fmod(m, tile_m_ * n * chunks) != 0) continue;
    w.chunks = chunks;
    w.step_s = push_latency_s_ + bytes / n / chunks / push_Bps_;
    tilewise_plan::AllGatherPlan plan = tilewise_plan::plan_allgather_consumer(w);
    if (plan.end_s < best.end_s) {
      best = std::move(plan);
      best_chunks = chunks;
      best_step_s = w.step_s;
    }
  }
  if (best_chunks == 0) {
    why_not = "AllGather+GEMM: rows not a multiple of tile rows x ranks";
    return std::nullopt;
  }
  // One group a chunk, in the GEMM's order (own block first): its unstalled waves; one
  // part a chunk on the push stream, the own block's taking no time and no bytes, each
  // peer chunk one push step after the last. A group starts once its part has landed.
  PairSchedule s;
  const std::size_t chunks = best.wave_end_s.size();
  double prev_wave = 0;
  const double peer_chunks = static_cast<double>((n - 1) * best_chunks);
  for (std::size_t c = 0; c < chunks; ++c) {
    s.compute_s.push_back(best.wave_end_s[c] - prev_wave);
    prev_wave = best.wave_end_s[c];
    const bool own = c < static_cast<std::size_t>(best_chunks);
    s.comm_share.push_back(own ? 0.0 : 1.0 / peer_chunks);
    s.part_time_s.push_back(own ? 0.0 : best_step_s);
    s.part_delays_s.push_back(0);
  }
  // The copy engines share HBM with the GEMM (NCCL's measured interference, assumed here).
  s.compute_slowdown = interference_;
  return s;
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
  w.wait_s = copy_ops_s_ > 0 ? 0 : wait_s_;
  w.copy_ops_s = copy_ops_s_;
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
  // A replayed ring row times the ring alone.
  for (int g = std::min(2, max_groups_);
       route_ != Route::Ring && g <= max_groups_ && (g == 1 || g <= part_tiles); g *= 2)
    for (const double tail_Bps : tail_rates) {
      w.groups_per_part = g;
      w.tail_Bps = tail_Bps;
      CopyEnginePlan plan = plan_copy_engine(w);
      if (plan.end_s < best.end_s) best = std::move(plan);
    }
  // More than 2 ranks: the kernel's tuner also times the ring route (reduce-scatter and
  // all-reduce), and for an all-reduce its row chunks and the slab order (2 or 4 slabs, plain
  // or skewed, one call); the fastest is taken, here by the ring's planner
  // (sim/tilewise_plan/ring.hpp), which has no interference term.
  // A replayed ring row may have 2 ranks (the slab order on the ring's layout); the search
  // times the ring on more than 2, as the kernel's tuner does by default.
  if (route_ == Route::Ring && w.op == CollectiveOp::AllToAll) {
    why_not = "copy-engine ring route: all-reduce or reduce-scatter";
    return std::nullopt;
  }
  if (w.op != CollectiveOp::AllToAll &&
      (route_ == Route::Ring || (w.world > 2 && route_ == Route::Auto))) {
    tilewise_plan::RingProblem r;
    r.op = w.op == CollectiveOp::AllReduce ? tilewise_plan::Collective::AllReduce
                                           : tilewise_plan::Collective::ReduceScatter;
    r.world = w.world;
    r.tiles = w.tiles;
    r.ctas = w.sms;
    r.gemm_s = w.gemm_s;
    r.bytes = w.bytes;
    r.copy_s = tilewise_plan::linear_time(copy_latency_s_, copy_Bps_);
    r.wait_s = w.wait_s;
    r.copy_ops_s = w.copy_ops_s;
    r.phase2_contention = phase2_contention_;
    r.tail_s = tilewise_plan::tail_exchange_time(w.world, tail_latency_s_, tail_Bps_);
    std::vector<tilewise_plan::Phase2> modes;
    if (r.op == tilewise_plan::Collective::AllReduce) {
      for (const double rate : tail_rates)
        modes.push_back(rate > 0 ? tilewise_plan::Phase2::TailKernel
                                 : tilewise_plan::Phase2::CopyEngine);
    } else {
      modes.push_back(tilewise_plan::Phase2::CopyEngine);
    }
    const bool all_reduce = r.op == tilewise_plan::Collective::AllReduce;
    double ring_end = 1e300, ring_gemm = 0;
    const auto try_ring = [&](const RingReplay& c, tilewise_plan::Phase2 mode) {
      r.groups_per_part = c.groups_per_part;
      r.row_chunks = c.row_chunks;
      r.slabs = c.slabs;
      r.slab_skew = c.slab_skew;
      r.phase2 = mode;
      r.phase2_own_streams = c.phase2_own_streams;
      r.tail_whole_part = c.tail_whole_part;
      const tilewise_plan::RingPlan plan = tilewise_plan::plan_ring(r);
      if (plan.end_s < ring_end) {
        ring_end = plan.end_s;
        ring_gemm = plan.gemm_end_s;
      }
    };
    if (ring_replay_)
      try_ring(*ring_replay_, phase2_ == AllReducePhase2::TailKernel
                                  ? tilewise_plan::Phase2::TailKernel
                                  : tilewise_plan::Phase2::CopyEngine);
    // (row chunks, slabs, skewed): row chunks or the slab order, not both (the tuner's set).
    struct Cut {
      int chunks, slabs;
      bool skew;
    };
    static constexpr Cut kCuts[] = {{1, 1, false}, {2, 1, false}, {4, 1, false}, {1, 2, false},
                                    {1, 2, true},  {1, 4, false}, {1, 4, true}};
    for (int g = std::min(2, max_groups_); !ring_replay_ && g <= max_groups_ && g <= part_tiles;
         g *= 2)
      for (const Cut& cut : kCuts) {
        // All-reduce only, at most 4 groups a part or sub-slab, whole tiles a group.
        const int cuts = cut.chunks * cut.slabs;
        if (cuts > 1 && (!all_reduce || g > 4 || g > part_tiles / cuts)) continue;
        for (const tilewise_plan::Phase2 mode : modes)
          for (const bool own_streams : {false, true})
            for (const bool whole : {false, true}) {
              if (own_streams && !all_reduce) continue;
              // The tail kernel over the last own group or the whole own part.
              if (whole && mode != tilewise_plan::Phase2::TailKernel) continue;
              try_ring({g, cut.chunks, cut.slabs, cut.skew, own_streams, whole}, mode);
            }
      }
    if (ring_end < best.end_s || route_ == Route::Ring) {
      // The GEMM with its stalls as one group, what is left after it as one part.
      PairSchedule s;
      s.compute_s = {ring_gemm};
      s.comm_share = {1.0};
      s.part_time_s = {std::max(0.0, ring_end - ring_gemm)};
      s.part_delays_s = {0.0};
      s.compute_slowdown = interference_;
      return s;
    }
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
