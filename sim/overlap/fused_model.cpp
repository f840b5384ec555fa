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

bool memory_bound(FusedPair pair) { return pair != FusedPair::GemmAllToAll; }

FusedCosts FusedCosts::read(DesignParameters& p) {
  FusedCosts c;
  c.memory_bound_overhead_fraction =
      p.need_at_least("memory_bound_overhead_fraction", 0, "a fraction >= 0");
  c.memory_bound_store_Bps = p.need_at_least("memory_bound_store_Bps", 1, "a rate such as 2e12");
  c.gemm_store_Bps = p.need_at_least("gemm_store_Bps", 1, "a rate such as 5e11");
  c.alltoall_finish_s = p.need_at_least("alltoall_finish_s", 0, "a time such as 5us");
  c.allreduce_finish_s = p.need_at_least("allreduce_finish_s", 0, "a time such as 10us");
  c.nvlink_store_Bps = p.need_at_least("nvlink_store_Bps", 1, "the NVLink rate per direction");
  return c;
}

double fused_pushed_bytes(FusedPair pair, double comm_bytes, int ranks) {
  const double w = ranks < 2 ? 2 : ranks;
  return pair == FusedPair::GemvAllReduce ? (w - 1) * comm_bytes : comm_bytes * (w - 1) / w;
}

FusedTimes fused_times(const FusedCosts& c, FusedPair pair, double op_s, double pushed_bytes) {
  FusedTimes t;
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
