// Direct: every transfer of a step at once, one group per step; the network decides how
// the n(n-1) flows share links (the backend aggregates identical ones). This is how
// NCCL runs all-to-all (grouped point-to-point) and what PXN-less all-pairs
// allgather/reducescatter look like; allreduce is reducescatter then allgather.
#include <stdexcept>

#include "sim/collectives/algorithms.hpp"

namespace overlapsim::sim::detail {

Phase all_pairs_phase(std::span<const int> members, std::uint64_t bytes,
                      const CollectiveTuning& tuning) {
  Phase phase;
  const std::size_t n = members.size();
  if (n < 2 || bytes == 0) return phase;
  phase.transfers.reserve(n * (n - 1));
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j)
      if (i != j) phase.transfers.push_back(Transfer{members[i], members[j], bytes});
  phase.delay_after_s = tuning.step_latency_s;
  return phase;
}

Plan direct_plan(const NetworkApi& /*net*/, const CollectiveRequest& req,
                 const CollectiveTuning& tuning) {
  Plan plan;
  plan.start_delay_s = tuning.launch_latency_s;
  const std::size_t n = req.ranks.size();
  const std::uint64_t share = ceil_div(req.bytes, n);
  switch (req.op) {
    case CollectiveOp::AllToAll:
    case CollectiveOp::AllGather:
    case CollectiveOp::ReduceScatter:
      append_phase(plan, all_pairs_phase(req.ranks, share, tuning));
      break;
    case CollectiveOp::AllReduce:
      append_phase(plan, all_pairs_phase(req.ranks, share, tuning));  // reduce-scatter
      append_phase(plan, all_pairs_phase(req.ranks, share, tuning));  // allgather
      break;
    case CollectiveOp::Broadcast: {
      Phase phase;
      const int root = req.ranks[static_cast<std::size_t>(req.root)];
      for (int r : req.ranks)
        if (r != root && req.bytes > 0) phase.transfers.push_back(Transfer{root, r, req.bytes});
      phase.delay_after_s = tuning.step_latency_s;
      append_phase(plan, std::move(phase));
      break;
    }
    case CollectiveOp::SendRecv: {
      Phase phase;
      if (req.bytes > 0)
        phase.transfers.push_back(
            Transfer{req.ranks.front(), req.ranks[static_cast<std::size_t>(req.peer)], req.bytes});
      phase.delay_after_s = tuning.step_latency_s;
      append_phase(plan, std::move(phase));
      break;
    }
  }
  return plan;
}

}  // namespace overlapsim::sim::detail
