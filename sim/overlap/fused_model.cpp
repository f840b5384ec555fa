#include "sim/overlap/fused_model.hpp"

#include <algorithm>

namespace overlapsim::sim {

std::optional<FusedPair> fused_pair_of(OpKind op, CollectiveOp collective) {
  if (op == OpKind::EmbeddingLookup && collective == CollectiveOp::AllToAll)
    return FusedPair::EmbeddingAllToAll;
  if (op == OpKind::Gemv && collective == CollectiveOp::AllReduce) return FusedPair::GemvAllReduce;
  if (op == OpKind::Gemm && collective == CollectiveOp::AllToAll) return FusedPair::GemmAllToAll;
  return std::nullopt;
}

std::optional<FusedPair> fused_pair_of(OpKind op, CollectiveOp collective, bool producer) {
  if (producer) return fused_pair_of(op, collective);
  if (op == OpKind::EmbeddingLookup && collective == CollectiveOp::AllToAll)
    return FusedPair::EmbeddingBackward;
  return std::nullopt;
}

bool memory_bound(FusedPair pair) {
  return pair == FusedPair::EmbeddingAllToAll || pair == FusedPair::GemvAllReduce;
}

FusedCosts FusedCosts::read(DesignParameters& p) {
  FusedCosts c;
  c.memory_bound_overhead_fraction =
      p.need_at_least("memory_bound_overhead_fraction", 0, "a fraction >= 0");
  c.memory_bound_store_Bps = p.need_at_least("memory_bound_store_Bps", 1, "a rate such as 2e12");
  c.gemm_store_Bps = p.need_at_least("gemm_store_Bps", 1, "a rate such as 5e11");
  c.alltoall_finish_s = p.need_at_least("alltoall_finish_s", 0, "a time such as 5us");
  c.allreduce_finish_s = p.need_at_least("allreduce_finish_s", 0, "a time such as 10us");
  c.nvlink_store_Bps = p.need_at_least("nvlink_store_Bps", 1, "the NVLink rate per direction");
  c.has_backward =
      p.has_rate_and_time("backward_store_Bps", "backward_finish_s", "the embedding backward");
  if (c.has_backward) {
    c.backward_expand_factor =
        p.need_at_least("backward_expand_factor", 1e-3, "a factor > 0 such as 0.9");
    c.backward_store_Bps = p.need_at_least("backward_store_Bps", 1, "a rate such as 2e12");
    c.backward_finish_s = p.need_at_least("backward_finish_s", 0, "a time such as 9us");
    c.backward_owner_step_s = p.need_at_least("backward_owner_step_s", 0, "a time such as 5us");
    c.backward_arrival_Bps = p.need_at_least("backward_arrival_Bps", 1, "a rate such as 2e11");
  }
  return c;
}

double fused_pushed_bytes(FusedPair pair, double comm_bytes, int ranks) {
  const double w = ranks < 2 ? 2 : ranks;
  return pair == FusedPair::GemvAllReduce ? (w - 1) * comm_bytes : comm_bytes * (w - 1) / w;
}

FusedTimes fused_times(const FusedCosts& c, FusedPair pair, double op_s, double pushed_bytes,
                       int ranks) {
  FusedTimes t;
  if (pair == FusedPair::EmbeddingBackward) {
    const double w = ranks < 2 ? 2 : ranks;
    const double expand_s = op_s * c.backward_expand_factor;
    const double expansion = expand_s + w * pushed_bytes / c.backward_store_Bps;
    // The last source's rows cannot land before NVLink carries them either.
    const double push_s = pushed_bytes / std::min(c.backward_arrival_Bps, c.nvlink_store_Bps);
    const double arrival = (w - 1) * c.backward_owner_step_s + push_s + expand_s / w;
    t.arrival_bound = arrival > expansion;
    t.compute_s = std::max(expansion, arrival);
    t.finish_s = c.backward_finish_s;
    return t;
  }
  if (memory_bound(pair))
    t.compute_s =
        op_s * (1 + c.memory_bound_overhead_fraction) + pushed_bytes / c.memory_bound_store_Bps;
  else
    t.compute_s = op_s + pushed_bytes / c.gemm_store_Bps;
  t.finish_s = (pair == FusedPair::GemvAllReduce ? c.allreduce_finish_s : c.alltoall_finish_s) +
               std::max(0.0, pushed_bytes / c.nvlink_store_Bps - t.compute_s);
  return t;
}

}  // namespace overlapsim::sim
