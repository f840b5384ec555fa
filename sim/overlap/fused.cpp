#include "sim/overlap/designs.hpp"
#include "sim/overlap/fused_model.hpp"

namespace overlapsim::sim {

FusedDesign::FusedDesign(const Profile& profile) : PairedDesign(profile.device.sms) {
  DesignParameters p(profile, "fused");
  costs_ = FusedCosts::read(p);
  parameters_ = p.used();
}

std::optional<PairSchedule> FusedDesign::schedule(const ComputeModel& model, const PairView& pair,
                                                  std::string& why_not) const {
  const OpNode& op = *pair.compute;
  const std::optional<FusedPair> kind =
      fused_pair_of(op.kind, pair.comm->collective, pair.producer);
  if (!kind) {
    why_not = "not GEMV+AllReduce, embedding+All-to-All, GEMM+All-to-All or the embedding backward";
    return std::nullopt;
  }
  if (*kind == FusedPair::EmbeddingBackward && !costs_.has_backward) {
    why_not = "the profile has no fused embedding backward (designs.fused.backward_*)";
    return std::nullopt;
  }
  // The kernel stores only to peers it can address over NVLink (NCCL's LSA peers); the
  // network part would be one NCCL call after the op, which is what sequential does: an
  // all-to-all's time is set by its slowest (network) peers, so the few NVLink peers taken
  // out of the call save next to nothing.
  if (!pair.intra_host) {
    why_not = "communicator spans hosts: the kernel stores to NVLink peers only";
    return std::nullopt;
  }
  const double pushed =
      fused_pushed_bytes(*kind, static_cast<double>(pair.comm->comm_bytes), pair.comm_ranks);
  const FusedTimes t = fused_times(costs_, *kind, model.time_s(op), pushed, pair.comm_ranks);
  if (*kind == FusedPair::EmbeddingBackward) {
    // One kernel at the op's place on its stream does the exchange and the expansion: the
    // collective's part takes no time of its own, and the group (the whole pair) runs once
    // the op reaches its stream.
    PairSchedule s;
    s.compute_s = {t.total_s()};
    s.comm_share = {1.0};
    s.part_time_s = {0.0};
    return s;
  }
  // One group (the op with its stores) and one part: the receivers' finish. The part
  // takes its time off the collective model (no NCCL call), and the stores' cost is
  // already in the op's time, so no interference on top.
  PairSchedule s;
  s.compute_s = {t.compute_s};
  s.comm_share = {1.0};
  s.part_time_s = {t.finish_s};
  return s;
}

}  // namespace overlapsim::sim
