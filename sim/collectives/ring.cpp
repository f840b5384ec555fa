// NCCL's ring as flows. A perfectly pipelined ring keeps every link busy from the
// first step to the last, so instead of 2(n-1) groups of n chunk transfers each rank
// streams its whole per-link volume (allreduce: 2(n-1)/n * S) to its successor as
// one flow. The flows still share links with any other traffic through the network
// model, so contention is represented; the n flows cost O(n) instead of O(n^2) work.
// The flows pay one path latency; the other steps' latencies (steps * mean hop
// latency, NCCL's lat * nsteps) are added after the group. Closed form on a uniform
// ring: 2(n-1) * alpha + 2(n-1)/n * S / B.
#include <algorithm>
#include <stdexcept>

#include "sim/collectives/algorithms.hpp"
#include "sim/collectives/groups.hpp"

namespace overlapsim::sim::detail {

Phase ring_phase(const NetworkApi& net, std::span<const int> members, int steps,
                 std::uint64_t share_bytes, const CollectiveTuning& tuning) {
  Phase phase;
  const std::size_t n = members.size();
  if (n < 2 || steps <= 0 || share_bytes == 0) return phase;
  const auto rings = ring_channels(net, members);
  const std::uint64_t channel_share = ceil_div(share_bytes, rings.size());
  const auto stats = hop_stats(net, rings.front(), /*closed=*/true);
  // Streamed when the backend can tell the hop latencies; otherwise one group per step.
  const std::uint64_t per_transfer =
      stats ? channel_share * static_cast<std::uint64_t>(steps) : channel_share;
  std::vector<Transfer> transfers;
  transfers.reserve(n * rings.size());
  for (const auto& ring : rings)
    for (std::size_t i = 0; i < n; ++i)
      transfers.push_back(Transfer{ring[i], ring[(i + 1) % n], per_transfer});
  phase.transfers = canonical_transfers(std::move(transfers));
  if (stats) {
    const double pipeline_latency_s = steps * (stats->latency_sum_s / stats->hops);
    phase.delay_after_s =
        std::max(0.0, pipeline_latency_s - stats->latency_max_s) + steps * tuning.step_latency_s;
  } else {
    phase.repeat = steps;
    phase.delay_after_s = tuning.step_latency_s;
  }
  return phase;
}

Phase chain_phase(const NetworkApi& net, std::span<const int> members, int root_index,
                  std::uint64_t bytes, const CollectiveTuning& tuning) {
  Phase phase;
  const std::size_t n = members.size();
  if (n < 2 || bytes == 0) return phase;
  const int root = members[static_cast<std::size_t>(root_index)];
  const auto rings = ring_channels(net, members);
  const std::uint64_t channel_bytes = ceil_div(bytes, rings.size());
  std::vector<Transfer> transfers;
  std::vector<int> first_chain;
  for (const auto& ring : rings) {
    const std::size_t start =
        static_cast<std::size_t>(std::find(ring.begin(), ring.end(), root) - ring.begin());
    std::vector<int> chain(n);
    for (std::size_t i = 0; i < n; ++i) chain[i] = ring[(start + i) % n];
    for (std::size_t i = 0; i + 1 < n; ++i)
      transfers.push_back(Transfer{chain[i], chain[i + 1], channel_bytes});
    if (first_chain.empty()) first_chain = std::move(chain);
  }
  phase.transfers = canonical_transfers(std::move(transfers));
  const int hops = static_cast<int>(n) - 1;
  phase.delay_after_s = hops * tuning.step_latency_s;
  if (const auto stats = hop_stats(net, first_chain, /*closed=*/false)) {
    // A chunked pipeline of h hops takes (h - 1) chunk times longer to fill than the
    // stream; the first byte's trip is the sum of the hop latencies.
    const double chunk_bytes =
        static_cast<double>(std::min<std::uint64_t>(tuning.chunk_bytes, channel_bytes));
    phase.delay_after_s += stats->latency_sum_s - stats->latency_max_s +
                           (hops - 1) * chunk_bytes / stats->min_bandwidth_Bps;
  }
  return phase;
}

Plan ring_plan(const NetworkApi& net, const CollectiveRequest& req,
               const CollectiveTuning& tuning) {
  Plan plan;
  plan.start_delay_s = tuning.launch_latency_s;
  const int n = static_cast<int>(req.ranks.size());
  const std::uint64_t share = ceil_div(req.bytes, static_cast<std::uint64_t>(n));
  switch (req.op) {
    case CollectiveOp::AllReduce:
      append_phase(plan, ring_phase(net, req.ranks, 2 * (n - 1), share, tuning));
      break;
    case CollectiveOp::AllGather:
    case CollectiveOp::ReduceScatter:
      append_phase(plan, ring_phase(net, req.ranks, n - 1, share, tuning));
      break;
    case CollectiveOp::Broadcast:
      append_phase(plan, chain_phase(net, req.ranks, req.root, req.bytes, tuning));
      break;
    default:
      throw std::logic_error("ring_plan: unsupported op");
  }
  return plan;
}

}  // namespace overlapsim::sim::detail
