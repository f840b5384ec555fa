#include <algorithm>
#include <cmath>
#include <numeric>

#include "sim/overlap/designs.hpp"

namespace overlapsim::sim {

double comm_slowdown_for(CollectiveOp op, double allreduce, double reducescatter,
                         double alltoall, double other) {
  switch (op) {
    case CollectiveOp::AllReduce:
      return allreduce;
    case CollectiveOp::ReduceScatter:
      return reducescatter;
    case CollectiveOp::AllToAll:
      return alltoall;
    default:
      return other;
  }
}

TilewiseDesign::TilewiseDesign(const Profile& profile) : PairedDesign(profile.device.sms) {
  DesignParameters p(profile, "tilewise");
  comm_sms_ = static_cast<int>(p.need_at_least("comm_sms", 1, "SMs left to NCCL, >= 1"));
  max_groups_ = static_cast<int>(p.need_at_least("max_groups", 1, "a group count >= 1"));
  tile_m_ = p.need_at_least("tile_m", 1, "the GEMM's tile rows");
  tile_n_ = p.need_at_least("tile_n", 1, "the GEMM's tile columns");
  gemm_vs_vendor_ = p.need_at_least("own_gemm_time_ratio", 0.1, "own GEMM time / vendor GEMM time");
  signal_ = p.need_at_least("signal_overhead_fraction", 0, "a fraction >= 0");
  interference_ = p.need_at_least("interference_slowdown", 1, "a factor >= 1");
  wait_s_ = p.need_at_least("wait_overhead_s", 0, "a time such as 10us");
  slowdown_ar_ = p.need_at_least("comm_slowdown_allreduce", 1, "a factor >= 1");
  slowdown_rs_ = p.need_at_least("comm_slowdown_reducescatter", 1, "a factor >= 1");
  slowdown_a2a_ = p.need_at_least("comm_slowdown_alltoall", 1, "a factor >= 1");
  slowdown_other_ = slowdown_rs_;
  parameters_ = p.used();
  if (comm_sms_ >= sms())
    throw std::invalid_argument("designs.tilewise.comm_sms: must be below the device's SMs");
}

std::optional<PairSchedule> TilewiseDesign::schedule(const ComputeModel& model,
                                                     const PairView& pair,
                                                     std::string& why_not) const {
  const OpNode& op = *pair.compute;
  const CollectiveOp coll = pair.comm->collective;
  if (!pair.producer || op.kind != OpKind::Gemm ||
      (coll != CollectiveOp::AllReduce && coll != CollectiveOp::ReduceScatter &&
       coll != CollectiveOp::AllToAll)) {
    why_not = "not GEMM + AllReduce/ReduceScatter/All-to-All";
    return std::nullopt;
  }
  const int sms_c = sms() - comm_sms_;
  const double tiles = gemm_tiles(op, tile_m_, tile_n_);
  const double waves_full = std::ceil(tiles / sms());
  const int waves = static_cast<int>(std::ceil(tiles / sms_c));
  if (waves < 2) {
    why_not = "GEMM of one wave (nothing to pipeline)";
    return std::nullopt;
  }
  std::vector<int> groups = partition_;
  if (groups.empty() || std::accumulate(groups.begin(), groups.end(), 0) != waves)
    groups = doubling_groups(waves, max_groups_);
  // One wave's time: the own GEMM with signals on all SMs, per wave; on SMs - s it has
  // more waves of the same length (wave quantisation).
  const double full_s = model.time_s(op) * gemm_vs_vendor_ * (1 + signal_);
  const double wave_s = full_s / waves_full;
  PairSchedule s;
  double tiles_left = tiles;
  for (int g : groups) {
    s.compute_s.push_back(g * wave_s);
    const double t = std::min(tiles_left, static_cast<double>(g) * sms_c);
    s.comm_share.push_back(t / tiles);
    tiles_left -= t;
  }
  s.compute_slowdown = interference_;
  s.comm_stretch = !pair.intra_host      ? 1.0
                   : stretch_override_ > 0 ? stretch_override_
                                           : comm_slowdown_for(coll, slowdown_ar_, slowdown_rs_,
                                                               slowdown_a2a_, slowdown_other_);
  s.first_part_delay_s = wait_s_;
  s.part_delay_s = wait_s_;
  return s;
}

}  // namespace overlapsim::sim
