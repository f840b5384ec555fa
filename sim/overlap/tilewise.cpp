#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "config/error.hpp"
#include "sim/overlap/designs.hpp"

namespace overlapsim::sim {

WaveGroupPlan plan_wave_groups(const WaveGroupProblem& w) {
  tilewise_plan::WaveGroupProblem p;
  p.wave_s = w.wave_s;
  p.share_through = tilewise_plan::tiles_through(w.waves, w.tiles, w.sms);
  p.share_total = w.tiles;
  p.bytes = w.bytes;
  p.compute_slowdown = w.compute_slowdown;
  p.wait_s = w.wait_s;
  p.max_groups = w.max_groups;
  // Waves in at most 64 units, so the search stays O(groups x 64^2).
  p.max_units = 64;
  if (w.comm_s_per_byte >= 0 || w.comm_time_at)
    p.comm_s = [&w](double group_bytes) {
      const double stretch = w.stretch_at ? w.stretch_at(group_bytes) : w.comm_stretch;
      return stretch * (w.comm_time_at ? w.comm_time_at(group_bytes)
                                       : w.comm_latency_s + group_bytes * w.comm_s_per_byte);
    };
  return tilewise_plan::plan_wave_groups(p);
}

CommSlowdown CommSlowdown::read(DesignParameters& p) {
  CommSlowdown s;
  s.allreduce = p.need_at_least("comm_slowdown_allreduce", 1, "a factor >= 1");
  s.reducescatter = p.need_at_least("comm_slowdown_reducescatter", 1, "a factor >= 1");
  s.alltoall = p.need_at_least("comm_slowdown_alltoall", 1, "a factor >= 1");
  return s;
}

double CommSlowdown::for_op(CollectiveOp op) const {
  switch (op) {
    case CollectiveOp::AllReduce:
      return allreduce;
    case CollectiveOp::AllToAll:
      return alltoall;
    default:
      return reducescatter;
  }
}

double TilewiseDesign::own_gemm_s(const ComputeModel& vendor, const OpNode& op) const {
  if (own_model_ && own_profile_->gemm_tables.count(op.precision)) return own_model_->time_s(op);
  // A precision the own tables do not cover: the ratio, which the profile must then hold.
  if (!(gemm_vs_vendor_ > 0))
    throw config::ConfigError(fmt::format(
        "designs.tilewise.own_gemm_time_ratio: missing (compute.own_gemm_tables has no {} "
        "table; expected the ratio of the own GEMM's time to the vendor's)",
        to_string(op.precision)));
  return vendor.time_s(op) * gemm_vs_vendor_;
}

TilewiseDesign::TilewiseDesign(const Profile& profile, Transport transport)
    : PairedDesign(profile.device.sms) {
  DesignParameters p(profile, "tilewise");
  comm_sms_ = static_cast<int>(p.need_at_least("comm_sms", 1, "SMs left to NCCL, >= 1"));
  max_groups_ = static_cast<int>(p.need_at_least("max_groups", 1, "a group count >= 1"));
  tile_m_ = p.need_at_least("tile_m", 1, "the GEMM's tile rows");
  tile_n_ = p.need_at_least("tile_n", 1, "the GEMM's tile columns");
  // The own GEMM's measured tables where the profile has them, else the vendor table x
  // one measured ratio.
  std::vector<ParameterUse> own_tables;
  if (auto own = own_gemm_profile(profile.compute)) {
    own_profile_ = std::make_shared<const ComputeProfile>(std::move(*own));
    own_model_ = std::make_shared<const ComputeModel>(*own_profile_);
    // Listed with the design's parameters, so outputs cite them (value: the wave model's
    // main-loop rate; 0 for a rate grid).
    for (const auto& [prec, table] : profile.compute.own_gemm_tables)
      own_tables.push_back({fmt::format("compute.own_gemm_tables.{}", to_string(prec)),
                            table.waves.mainloop_flops_per_s, table.source});
  }
  // The ratio: needed without own tables; with them, kept (unlisted: outputs cite what a
  // run uses) for precisions they lack, when the profile has it.
  if (!own_model_) {
    gemm_vs_vendor_ =
        p.need_at_least("own_gemm_time_ratio", 0.1, "own GEMM time / vendor GEMM time");
  } else if (const Sourced* r = profile.designs.find("tilewise", "own_gemm_time_ratio");
             r && r->value >= 0.1) {
    gemm_vs_vendor_ = r->value;
  }
  signal_ = p.need_at_least("signal_overhead_fraction", 0, "a fraction >= 0");
  interference_ = p.need_at_least("interference_slowdown", 1, "a factor >= 1");
  wait_s_ = p.need_at_least("wait_overhead_s", 0, "a time such as 1us");
  call_latency_s_ = p.need_at_least("nccl_call_latency_s", 0, "a time such as 10us");
  slowdown_ = CommSlowdown::read(p);
  parameters_ = p.used();
  parameters_.insert(parameters_.end(), own_tables.begin(), own_tables.end());
  if (comm_sms_ >= sms())
    throw config::ConfigError(fmt::format("{}: designs.tilewise.comm_sms: {} is not below the device's {} SMs (expected fewer)",
                                          profile.path, comm_sms_, sms()));
  set_transport(transport, profile);
}

double TilewiseDesign::stretch_for(const CollectiveCostModel* costs, int comm_sms,
                                   CollectiveOp coll, std::uint64_t bytes, int ranks) const {
  if (stretch_override_ > 0 && comm_sms == comm_sms_) return stretch_override_;
  // NCCL measured on `comm_sms` CTAs and on its default, where the profile has both.
  if (costs)
    if (const auto measured = costs->cta_limited_stretch(coll, bytes, ranks, comm_sms))
      return *measured;
  // Otherwise the parameter measured at the profile's carve-out, scaled by CTAs (NCCL's
  // bandwidth grows with its CTAs until the links saturate).
  const double at_default = slowdown_.for_op(coll);
  return std::max(1.0, at_default * comm_sms_ / comm_sms);
}

std::optional<PairSchedule> TilewiseDesign::schedule(const ComputeModel& model,
                                                     const PairView& pair,
                                                     std::string& why_not) const {
  const OpNode& op = *pair.compute;
  const CollectiveOp coll = pair.comm->collective;
  if (!pair.producer && coll == CollectiveOp::AllGather && op.kind == OpKind::Gemm &&
      transport_ == Transport::CopyEngine)
    return allgather_schedule(model, pair, why_not);
  if (!pair.producer || op.kind != OpKind::Gemm ||
      (coll != CollectiveOp::AllReduce && coll != CollectiveOp::ReduceScatter &&
       coll != CollectiveOp::AllToAll)) {
    why_not = "not GEMM + AllReduce/ReduceScatter/All-to-All";
    return std::nullopt;
  }
  if (transport_ == Transport::CopyEngine) return copy_engine_schedule(model, pair, why_not);
  const double tiles = gemm_tiles(op, tile_m_, tile_n_);
  const double waves_full = std::ceil(tiles / sms());
  // One wave's time: the own GEMM with signals on all SMs, per wave; on SMs - s it has
  // more waves of the same length (wave quantisation).
  const double full_s = own_gemm_s(model, op) * (1 + signal_);
  const double wave_s = full_s / waves_full;
  const double bytes = static_cast<double>(pair.comm->comm_bytes);
  const auto key =
      std::make_tuple(tiles, wave_s, bytes, static_cast<float>(pair.comm_s_per_byte),
                      static_cast<int>(pair.intra_host), pair.comm_ranks, static_cast<int>(coll),
                      static_cast<int>(pair.call_latency_in_collective));
  auto it = plans_.find(key);
  if (it == plans_.end()) {
    // Like the kernel's tuner: each carve-out the GEMM allows (s, s/2, s/4), the partition
    // FlashOverlap's predictor finds best for it, and the carve-out predicted fastest.
    // Memoised: a step repeats its shapes thousands of times.
    Plan best;
    double best_end = 1e300;
    const std::vector<int> candidates =
        search_carve_out_ && partition_.empty() && (pair.comm_s_per_byte >= 0 || pair.comm_time_at)
            ? std::vector<int>{comm_sms_, std::max(1, comm_sms_ / 2), std::max(1, comm_sms_ / 4)}
            : std::vector<int>{comm_sms_};
    for (int s : candidates) {
      const int sms_c = sms() - s;
      const int waves = static_cast<int>(std::ceil(tiles / sms_c));
      const double stretch =
          pair.intra_host ? stretch_for(pair.costs, s, coll, pair.comm->comm_bytes, pair.comm_ranks) : 1.0;
      WaveGroupProblem w{waves,         sms_c,
                         tiles,         wave_s,
                         interference_, wait_s_ + extra_call_s(pair, call_latency_s_),
                         bytes,         pair.comm_s_per_byte,
                         stretch,       pair.comm_latency_s,
                         max_groups_};
      w.comm_time_at = pair.comm_time_at;
      // NCCL's slowdown on s CTAs depends on the message size (the CTA-limited curves'
      // latency and bandwidth differ from the default's): each group at its own size.
      if (pair.intra_host)
        w.stretch_at = [&](double group_bytes) {
          return stretch_for(pair.costs, s, coll, static_cast<std::uint64_t>(group_bytes), pair.comm_ranks);
        };
      std::vector<int> groups = partition_;
      double end_s = -1;
      if (groups.empty() || std::accumulate(groups.begin(), groups.end(), 0) != waves) {
        const WaveGroupPlan plan = plan_wave_groups(w);
        groups = plan.sizes;
        end_s = plan.end_s;
      }
      if (end_s < 0 || end_s < best_end) {
        best = {s, waves, stretch, groups};
        best_end = end_s < 0 ? 1e300 : end_s;
        if (end_s < 0) break;
      }
    }
    it = plans_.emplace(key, best).first;
  }
  const Plan& plan = it->second;
  if (plan.waves < 2) {
    why_not = "GEMM of one wave (nothing to pipeline)";
    return std::nullopt;
  }
  const int sms_c = sms() - plan.comm_sms;
  PairSchedule s;
  double tiles_left = tiles;
  for (int g : plan.groups) {
    s.compute_s.push_back(g * wave_s);
    const double t = std::min(tiles_left, static_cast<double>(g) * sms_c);
    s.comm_share.push_back(t / tiles);
    tiles_left -= t;
  }
  s.compute_slowdown = interference_;
  s.comm_stretch = plan.stretch;
  if (pair.intra_host)
    for (double share : s.comm_share)
      s.part_stretch.push_back(stretch_for(
          pair.costs, plan.comm_sms, coll, static_cast<std::uint64_t>(share * bytes), pair.comm_ranks));
  // Each group: a wait kernel on the comm stream, then its NCCL call.
  s.first_part_delay_s = wait_s_;
  s.part_delay_s = wait_s_ + extra_call_s(pair, call_latency_s_);
  return s;
}

}  // namespace overlapsim::sim
