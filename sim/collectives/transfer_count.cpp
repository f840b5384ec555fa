#include "sim/collectives/transfer_count.hpp"

#include <algorithm>

#include "sim/collectives/groups.hpp"
#include "sim/collectives/host_symmetry.hpp"

namespace overlapsim::sim {
namespace {

// Transfers of an all-pairs group over `members` (direct.cpp): per pair, or per class of
// host pairs on a symmetric layout.
std::uint64_t all_pairs_transfers(const NetworkApi& net, std::span<const int> members, bool pxn,
                                  const CollectiveTuning& tuning) {
  const std::uint64_t n = members.size();
  if (n < 2) return 0;
  const auto hosts = detail::group_by_host(net, members);
  const std::uint64_t h = hosts.size();
  std::uint64_t intra = 0;
  for (const auto& host : hosts) intra += host.size() * (host.size() - 1);
  const bool use_pxn = pxn && h > 1 && n > h;
  if (const auto sym = detail::all_pairs_layout(net, members, tuning)) {
    const std::uint64_t g = sym->hosts.front().size(), l = sym->group_hosts;
    const std::uint64_t classes = (l > 1 ? 1 : 0) + (l < h ? 1 : 0);
    return intra + classes * h * (use_pxn ? g : g * g);
  }
  // PXN: one transfer per (remote host, local index) from each host, plus NVLink legs.
  if (use_pxn) return intra + n * (h - 1);
  return n * (n - 1);
}

}  // namespace

std::uint64_t peak_group_transfers(const NetworkApi& net, const CollectiveRequest& req,
                                   const CollectiveTuning& tuning) {
  const std::uint64_t n = req.ranks.size();
  Algorithm algo = req.algo;
  if (algo == Algorithm::Auto)
    algo = req.op == CollectiveOp::AllToAll || req.op == CollectiveOp::SendRecv ? Algorithm::Direct
                                                                                : Algorithm::Ring;
  if (req.op == CollectiveOp::SendRecv) return 1;
  if (req.op == CollectiveOp::Broadcast && algo == Algorithm::Direct) return n - 1;
  std::uint64_t per_host = 1;
  for (const auto& host : detail::group_by_host(net, req.ranks))
    per_host = std::max<std::uint64_t>(per_host, host.size());
  switch (algo) {
    case Algorithm::Direct:
      return all_pairs_transfers(net, req.ranks, req.op == CollectiveOp::AllToAll && tuning.pxn,
                                 tuning);
    case Algorithm::Hierarchical:
      if (req.op == CollectiveOp::AllToAll) {
        // One all-pairs group per local index across hosts, all at once.
        const auto hosts = detail::group_by_host(net, req.ranks);
        std::vector<int> rail;
        for (const auto& host : hosts) rail.push_back(host.front());
        return std::max(n * per_host, per_host * all_pairs_transfers(net, rail, false, tuning));
      }
      return n * per_host;
    default:
      // Ring and tree: at most one ring (or tree edge set) per member of a host, n each.
      return 2 * n * per_host;
  }
}

}  // namespace overlapsim::sim
