#include <fmt/format.h>

#include "config/error.hpp"
#include "sim/overlap/designs.hpp"

namespace overlapsim::sim {

DecomposedDesign::DecomposedDesign(const Profile& profile) : PairedDesign(profile.device.sms) {
  DesignParameters p(profile, "decomposed");
  chunks_ = static_cast<int>(p.need_at_least("chunks", 2, "a chunk count >= 2"));
  comm_ctas_ = p.need_at_least("comm_ctas", 0, "NCCL CTAs beside the op, >= 0");
  interference_ = p.need_at_least("interference_slowdown", 1, "a factor >= 1");
  call_latency_s_ = p.need_at_least("nccl_call_latency_s", 0, "a time such as 10us");
  parameters_ = p.used();
  if (comm_ctas_ >= sms())
    throw config::ConfigError(fmt::format("{}: designs.decomposed.comm_ctas: {} is not below the device's {} SMs (expected fewer)",
                                          profile.path, comm_ctas_, sms()));
}

std::optional<PairSchedule> DecomposedDesign::schedule(const ComputeModel& model,
                                                       const PairView& pair,
                                                       std::string& why_not) const {
  (void)why_not;  // any pair
  PairSchedule s;
  const double share = 1.0 / chunks_;
  const OpNode piece = op_piece(*pair.compute, share);
  const double chunk_s = model.time_s(piece);
  s.compute_s.assign(chunks_, chunk_s);
  s.comm_share.assign(chunks_, share);
  // NCCL's CTAs take SMs from the op while a chunk's collective runs.
  s.compute_slowdown = sms() / (sms() - comm_ctas_) * interference_;
  // A vendor GEMM chunk is a persistent kernel holding every SM: a collective launched
  // beside it gets SMs only when the chunk ends (priority never preempts resident blocks,
  // papers.md §3), so chunk i's collective runs beside chunk i+2, not i+1. Memory-bound
  // ops retire their blocks continuously and let it in at once.
  s.comm_waits_for_running_group = piece.kind == OpKind::Gemm;
  s.part_delay_s = extra_call_s(pair, call_latency_s_);
  return s;
}

}  // namespace overlapsim::sim
