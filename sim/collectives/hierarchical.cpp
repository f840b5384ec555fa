// Hierarchical: the fast intra-node fabric first, then the network among the GPUs
// with the same local index (one rail each, so the rails work in parallel), then
// intra-node again. Each phase waits for the previous one on every host, a barrier
// that NCCL's fused kernels partly hide; it charges the full sum of the three phases.
//   allreduce:     intra reduce-scatter(S), inter allreduce(S/g), intra allgather(S)
//   allgather:     inter allgather (each rail gathers its H shares), intra allgather(S)
//   reducescatter: intra reduce-scatter(S), inter reduce-scatter(S/g)
//   alltoall:      intra: to local peer j everything bound for rail j; inter: per rail
//   broadcast:     inter chain along the root's rail, intra chain from that rail's GPU
#include <fmt/format.h>

#include <stdexcept>

#include "sim/collectives/algorithms.hpp"
#include "sim/collectives/groups.hpp"

namespace overlapsim::sim::detail {
namespace {

using HostGroups = std::vector<std::vector<int>>;

// Rail j: the j-th local rank of every host, hosts in communicator order.
std::vector<int> rail(const HostGroups& hosts, std::size_t j) {
  std::vector<int> members;
  members.reserve(hosts.size());
  for (const auto& h : hosts) members.push_back(h[j]);
  return members;
}

Phase intra_rings(const NetworkApi& net, const HostGroups& hosts, int steps, std::uint64_t share,
                  const CollectiveTuning& tuning) {
  std::vector<Phase> parts;
  for (const auto& h : hosts) parts.push_back(ring_phase(net, h, steps, share, tuning));
  return merge_concurrent(std::move(parts));
}

Phase rail_rings(const NetworkApi& net, const HostGroups& hosts, int steps, std::uint64_t share,
                 const CollectiveTuning& tuning) {
  std::vector<Phase> parts;
  for (std::size_t j = 0; j < hosts.front().size(); ++j)
    parts.push_back(ring_phase(net, rail(hosts, j), steps, share, tuning));
  return merge_concurrent(std::move(parts));
}

}  // namespace

Plan hierarchical_plan(const NetworkApi& net, const CollectiveRequest& req,
                       const CollectiveTuning& tuning) {
  Plan plan;
  plan.start_delay_s = tuning.launch_latency_s;
  const HostGroups hosts = group_by_host(net, req.ranks);
  const std::size_t g = hosts.front().size();
  for (std::size_t h = 0; h < hosts.size(); ++h)
    if (hosts[h].size() != g)
      throw std::invalid_argument(fmt::format(
          "{}: hierarchical needs the same number of ranks on every host, but host {} has {} "
          "and host {} has {}",
          to_string(req.op), net.host_of(hosts.front().front()), g, net.host_of(hosts[h].front()),
          hosts[h].size()));
  const int gi = static_cast<int>(g);
  const int hi = static_cast<int>(hosts.size());
  const std::uint64_t n = req.ranks.size();
  switch (req.op) {
    case CollectiveOp::AllReduce: {
      const std::uint64_t host_share = ceil_div(req.bytes, g);
      append_phase(plan, intra_rings(net, hosts, gi - 1, host_share, tuning));
      append_phase(
          plan, rail_rings(net, hosts, 2 * (hi - 1), ceil_div(host_share, hosts.size()), tuning));
      append_phase(plan, intra_rings(net, hosts, gi - 1, host_share, tuning));
      break;
    }
    case CollectiveOp::AllGather: {
      const std::uint64_t share = ceil_div(req.bytes, n);
      append_phase(plan, rail_rings(net, hosts, hi - 1, share, tuning));
      append_phase(plan, intra_rings(net, hosts, gi - 1, share * hosts.size(), tuning));
      break;
    }
    case CollectiveOp::ReduceScatter: {
      const std::uint64_t host_share = ceil_div(req.bytes, g);
      append_phase(plan, intra_rings(net, hosts, gi - 1, host_share, tuning));
      append_phase(plan,
                   rail_rings(net, hosts, hi - 1, ceil_div(host_share, hosts.size()), tuning));
      break;
    }
    case CollectiveOp::AllToAll: {
      const std::uint64_t share = ceil_div(req.bytes, n);
      std::vector<Phase> intra, inter;
      for (const auto& h : hosts) intra.push_back(all_pairs_phase(h, share * hosts.size(), tuning));
      for (std::size_t j = 0; j < g; ++j)
        inter.push_back(all_pairs_phase(net, rail(hosts, j), share * g, tuning));
      append_phase(plan, merge_concurrent(std::move(intra)));
      append_phase(plan, merge_concurrent(std::move(inter)));
      break;
    }
    case CollectiveOp::Broadcast: {
      const int root = req.ranks[static_cast<std::size_t>(req.root)];
      std::size_t root_host = 0, root_local = 0;
      for (std::size_t h = 0; h < hosts.size(); ++h)
        for (std::size_t j = 0; j < g; ++j)
          if (hosts[h][j] == root) root_host = h, root_local = j;
      append_phase(plan, chain_phase(net, rail(hosts, root_local), static_cast<int>(root_host),
                                     req.bytes, tuning));
      std::vector<Phase> intra;
      for (const auto& h : hosts)
        intra.push_back(chain_phase(net, h, static_cast<int>(root_local), req.bytes, tuning));
      append_phase(plan, merge_concurrent(std::move(intra)));
      break;
    }
    case CollectiveOp::SendRecv:
      throw std::logic_error("hierarchical_plan: sendrecv is point-to-point");
  }
  return plan;
}

}  // namespace overlapsim::sim::detail
