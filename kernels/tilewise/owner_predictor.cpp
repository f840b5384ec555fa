#include "kernels/tilewise/owner_predictor.hpp"

#include <algorithm>
#include <vector>

namespace overlapsim::kernels::tilewise {

double predict_owner_time_s(const OwnerPlan& plan, double gemm_time_s, const CommCurve& copy,
                            int element_bytes, OwnerPhase2 phase2_mode, double stream_ops_s,
                            const CommCurve* tail_copy) {
  const std::int64_t tiles = std::int64_t{plan.tiles_m} * plan.tiles_n;
  const std::int64_t waves = (tiles + plan.num_ctas - 1) / plan.num_ctas;
  const double wave_s = gemm_time_s / static_cast<double>(waves);
  const auto done_at = [&](std::int32_t end_item) {
    return static_cast<double>((end_item + plan.num_ctas - 1) / plan.num_ctas) * wave_s;
  };
  const auto copy_s = [&](const OwnerGroup& g) {
    return copy.time_s(static_cast<double>(g.elems) * element_bytes) + stream_ops_s;
  };
  const int G = plan.groups_per_part;
  std::vector<double> arrival(static_cast<std::size_t>(G), 0.0);
  double sent = 0;  // E: the copy stream's last finish
  for (const OwnerGroup& g : plan.groups) {
    if (g.position == plan.world - 1) continue;
    sent = std::max(done_at(g.end_item), sent) + copy_s(g);
    // Every part is computed at the same positions by symmetric peers: part r's group j
    // reaches r when a peer's group j at this position does (the latest position counts).
    arrival[static_cast<std::size_t>(g.index)] =
        std::max(arrival[static_cast<std::size_t>(g.index)], sent);
  }
  const bool reduce = plan.op != CollectiveOp::AllToAll && plan.world > 1;
  double finished = plan.world > 1 ? done_at((plan.world - 1) * plan.part_tiles) : 0.0;
  double previous_a = finished;
  double phase2 = 0;
  double last_a = 0;
  double tail_s = 0;  // TailKernel: the last own group's copy, after the GEMM
  for (const OwnerGroup& g : plan.groups) {
    if (g.position != plan.world - 1) continue;
    const bool by_tail_kernel = phase2_mode == OwnerPhase2::TailKernel && g.index == G - 1;
    const double a = done_at(g.end_item);
    finished =
        reduce
            ? std::max({a, arrival[static_cast<std::size_t>(g.index)], finished + (a - previous_a)})
            : a;
    previous_a = a;
    last_a = a;
    if (plan.op != CollectiveOp::AllReduce || plan.world == 1) continue;
    if (by_tail_kernel) {
      const CommCurve& curve = tail_copy ? *tail_copy : copy;
      tail_s = (plan.world - 1) * curve.time_s(static_cast<double>(g.elems) * element_bytes);
    } else {
      phase2 = std::max(finished, phase2) + (plan.world - 1) * copy_s(g);
    }
  }
  switch (plan.op) {
    case CollectiveOp::ReduceScatter:
      return finished;
    case CollectiveOp::AllToAll:
      return std::max(last_a, sent);
    case CollectiveOp::AllReduce:
      if (plan.world > 1 && phase2_mode == OwnerPhase2::Epilogue)
        return std::max(finished, sent) + copy.time_s(0) + stream_ops_s;
      // The tail kernel starts behind the GEMM and shares the links with any copy still on
      // the comm stream.
      if (plan.world > 1 && phase2_mode == OwnerPhase2::TailKernel)
        return std::max(finished, phase2) + tail_s;
      return plan.world > 1 ? phase2 : finished;
    case CollectiveOp::AllGather:
      break;
  }
  return finished;
}

}  // namespace overlapsim::kernels::tilewise
