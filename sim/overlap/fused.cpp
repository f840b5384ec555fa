#include <algorithm>
#include <cmath>

#include "sim/overlap/designs.hpp"

namespace overlapsim::sim {

FusedDesign::FusedDesign(const Profile& profile) : PairedDesign(profile.device.sms) {
  DesignParameters p(profile, "fused");
  overhead_ = p.need_at_least("compute_overhead_fraction", 0, "a fraction >= 0");
  tile_latency_s_ = p.need_at_least("per_tile_latency_s", 0, "a time such as 2us");
  tile_m_ = p.need_at_least("tile_m", 1, "the fused GEMM's tile rows");
  tile_n_ = p.need_at_least("tile_n", 1, "the fused GEMM's tile columns");
  slices_ = static_cast<int>(p.need_at_least("slices", 1, "slices of a memory-bound op, >= 1"));
  max_groups_ = static_cast<int>(p.need_at_least("max_groups", 1, "a group count >= 1"));
  parameters_ = p.used();
}

std::optional<PairSchedule> FusedDesign::schedule(const ComputeModel& model, const PairView& pair,
                                                  std::string& why_not) const {
  const OpNode& op = *pair.compute;
  const CollectiveOp coll = pair.comm->collective;
  const bool applies =
      pair.producer && ((op.kind == OpKind::Gemv && coll == CollectiveOp::AllReduce) ||
                        (op.kind == OpKind::EmbeddingLookup && coll == CollectiveOp::AllToAll) ||
                        (op.kind == OpKind::Gemm && coll == CollectiveOp::AllToAll));
  if (!applies) {
    why_not = "not GEMV+AllReduce, embedding+All-to-All or GEMM+All-to-All";
    return std::nullopt;
  }
  // A GEMM finishes tiles wave by wave; a memory-bound op's persistent workgroups finish
  // their slices throughout.
  int steps = slices_;
  if (op.kind == OpKind::Gemm)
    steps = static_cast<int>(std::ceil(gemm_tiles(op, tile_m_, tile_n_) / sms()));
  const int groups = std::max(1, std::min(steps, max_groups_));
  const double total_s = model.time_s(op) * (1 + overhead_);
  PairSchedule s;
  for (int g = 0; g < groups; ++g) {
    const int steps_g = steps / groups + (g < steps % groups ? 1 : 0);
    s.compute_s.push_back(total_s * steps_g / steps);
    s.comm_share.push_back(static_cast<double>(steps_g) / steps);
  }
  // Every CTA pushes its own tiles as it finishes them; the pushes of consecutive groups
  // share the same links, so they are modelled as a stream of parts in order.
  s.first_part_delay_s = tile_latency_s_;
  s.part_delay_s = tile_latency_s_;
  return s;
}

}  // namespace overlapsim::sim
