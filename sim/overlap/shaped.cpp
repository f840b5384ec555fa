#include <fmt/format.h>


#include "config/error.hpp"
#include "sim/overlap/designs.hpp"

namespace overlapsim::sim {

ShapedDesign::ShapedDesign(const Profile& profile) : PairedDesign(profile.device.sms) {
  DesignParameters p(profile, "shaped");
  chunks_ = static_cast<int>(p.need_at_least("chunks", 2, "a chunk count >= 2"));
  comm_sms_ = static_cast<int>(p.need_at_least("comm_sms", 1, "SMs kept free for NCCL, >= 1"));
  interference_ = p.need_at_least("interference_slowdown", 1, "a factor >= 1");
  comm_interference_ = p.need_at_least("comm_interference_slowdown", 1, "a factor >= 1");
  call_latency_s_ = p.need_at_least("nccl_call_latency_s", 0, "a time such as 10us");
  slowdown_ = CommSlowdown::read(p);
  parameters_ = p.used();
  if (comm_sms_ >= sms())
    throw config::ConfigError(fmt::format("{}: designs.shaped.comm_sms: {} is not below the device's {} SMs (expected fewer)",
                                          profile.path, comm_sms_, sms()));
}

std::optional<PairSchedule> ShapedDesign::schedule(const ComputeModel& model, const PairView& pair,
                                                   std::string& why_not) const {
  (void)why_not;  // any pair
  const double share = 1.0 / chunks_;
  const OpNode piece = op_piece(*pair.compute, share);
  const OpCost cost = model.cost(piece);
  const int sms_c = sms() - comm_sms_;
  // Fewer SMs: a compute-bound op, the GEMM included, slows in proportion; a memory-bound op
  // is held by HBM, not by SMs. Not wave quantisation: cuBLASLt plans the GEMM for the SM
  // target, choosing its tile and clusters per shape, and its chunk GEMMs on SMs - 16 took
  // 1.08-1.25 x their time on all SMs where one tile's waves said up to 2 x, proportion 1.14 x
  // (4 x H200; docs/designs.md, "The shaped GEMM on fewer SMs").
  double fewer_sms = 1;
  if (!cost.memory_bound()) fewer_sms = static_cast<double>(sms()) / sms_c;
  PairSchedule s;
  s.compute_s.assign(chunks_, cost.time_s * fewer_sms);
  s.comm_share.assign(chunks_, share);
  s.compute_slowdown = interference_;
  s.comm_slowdown_beside_compute = comm_interference_;
  // NCCL on the SMs kept free: where the profile measured it on that many CTAs and on its
  // default, the ratio at a part's size (its fixed cost weighs differently there); else
  // the ratio the design's parameters give.
  s.comm_stretch = pair.intra_host ? slowdown_.for_op(pair.comm->collective) : 1.0;
  if (pair.intra_host && pair.costs) {
    const auto part_bytes =
        static_cast<std::uint64_t>(static_cast<double>(pair.comm->comm_bytes) * share);
    if (const auto measured = pair.costs->cta_limited_stretch(pair.comm->collective, part_bytes,
                                                              pair.comm_ranks, comm_sms_))
      s.comm_stretch = *measured;
  }
  // Its collective starts at once on its reserved SMs.
  s.part_delay_s = extra_call_s(pair, call_latency_s_);
  return s;
}

}  // namespace overlapsim::sim
