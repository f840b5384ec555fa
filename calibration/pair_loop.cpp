#include "calibration/pair_loop.hpp"

#include "calibration/ops.hpp"
#include "sim/profile/compute_model.hpp"

namespace overlapsim::calibration {

PairLoops::PairLoops(const std::vector<Measurement>& rows) {
  for (const auto& r : rows) {
    const auto parts = pair_parts(r.op);
    if (!parts || r.case_key.empty()) continue;
    by_case_.emplace(std::make_tuple(r.case_key, r.m, r.n, r.k),
                     LoopCollective{parts->compute, parts->collective, r.bytes, r.world});
  }
}

std::optional<LoopCollective> PairLoops::of(const Measurement& m) const {
  if (const auto parts = pair_parts(m.op))
    return LoopCollective{parts->compute, parts->collective, m.bytes, m.world};
  if (!measured_in_pair_loop(m)) return std::nullopt;
  const auto it = by_case_.find({m.case_key, m.m, m.n, m.k});
  if (it == by_case_.end()) return std::nullopt;
  return it->second;
}

bool collective_in_compute_loop(const Measurement& m) {
  if (!is_collective_op(m.op) || effective_ctas(m) != 0) return false;
  if (!m.case_key.empty()) return measured_in_pair_loop(m);
  return m.design == "nccl" && m.m > 0;
}

double loop_idle_fraction(const sim::Profile& profile, const Measurement& m,
                          const LoopCollective& loop) {
  const auto op = collective_of(loop.collective);
  if (!op) return 0;
  const sim::CollectiveCurve* curve =
      profile.collectives.find(*op, sim::Algorithm::Auto, sim::CommScope::IntraNode, loop.world, 0);
  if (!curve || curve->ranks != loop.world || curve->ctas != 0) return 0;
  const double t_coll = curve->time_in_compute_loop_s(loop.bytes, loop.world);
  const double t_op = sim::ComputeModel(profile.compute).time_s(compute_op(m, loop.compute));
  return t_coll > 0 && t_op > 0 ? t_coll / (t_op + t_coll) : 0;
}

}  // namespace overlapsim::calibration
