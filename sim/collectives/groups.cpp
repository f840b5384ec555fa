#include "sim/collectives/groups.hpp"

#include <algorithm>
#include <limits>
#include <unordered_map>

namespace overlapsim::sim::detail {

std::vector<std::vector<int>> group_by_host(const NetworkApi& net, std::span<const int> members) {
  std::vector<std::vector<int>> groups;
  // Small communicators (every send/recv of a step) search their few hosts in a list:
  // building a hash table per launch cost more than the rest of NCCL's cost estimate.
  constexpr std::size_t kListMaxMembers = 16;
  if (members.size() <= kListMaxMembers) {
    int hosts[kListMaxMembers];
    for (int r : members) {
      const int host = net.host_of(r);
      std::size_t i = 0;
      while (i < groups.size() && hosts[i] != host) ++i;
      if (i == groups.size()) {
        hosts[i] = host;
        groups.emplace_back();
      }
      groups[i].push_back(r);
    }
    return groups;
  }
  std::unordered_map<int, std::size_t> index_of_host;
  for (int r : members) {
    const int host = net.host_of(r);
    auto [it, inserted] = index_of_host.emplace(host, groups.size());
    if (inserted) groups.emplace_back();
    groups[it->second].push_back(r);
  }
  return groups;
}

namespace {

// Block size g when members are >= 2 runs of g > 1 consecutive ranks, each run on its
// own host and no host repeated; 0 otherwise.
std::size_t uniform_host_block(const NetworkApi& net, std::span<const int> members) {
  std::vector<std::size_t> run_lengths;
  std::vector<int> run_hosts;
  for (std::size_t i = 0; i < members.size(); ++i) {
    const int host = net.host_of(members[i]);
    if (i == 0 || host != run_hosts.back()) {
      run_hosts.push_back(host);
      run_lengths.push_back(0);
    }
    ++run_lengths.back();
  }
  if (run_lengths.size() < 2 || run_lengths.front() < 2) return 0;
  for (std::size_t len : run_lengths)
    if (len != run_lengths.front()) return 0;
  std::vector<int> sorted_hosts = run_hosts;
  std::sort(sorted_hosts.begin(), sorted_hosts.end());
  if (std::adjacent_find(sorted_hosts.begin(), sorted_hosts.end()) != sorted_hosts.end()) return 0;
  return run_lengths.front();
}

}  // namespace

std::vector<std::vector<int>> ring_channels(const NetworkApi& net, std::span<const int> members) {
  const std::size_t g = uniform_host_block(net, members);
  if (g == 0) return {std::vector<int>(members.begin(), members.end())};
  // Channel c starts host b's block at local rank (c - b) mod g and leaves it from the
  // local rank before that, which is where the next host's block starts: consecutive
  // hosts are joined by same-local-rank (same-rail) hops, as NCCL's ring search arranges
  // on rail-optimised fabrics. Each host is still entered and left at a different local
  // rank in every channel, so every NIC carries one channel.
  std::vector<std::vector<int>> rings(g);
  for (std::size_t c = 0; c < g; ++c) {
    rings[c].reserve(members.size());
    for (std::size_t block = 0, b = 0; block < members.size(); block += g, ++b) {
      const std::size_t start = (c + g - b % g) % g;
      for (std::size_t i = 0; i < g; ++i) rings[c].push_back(members[block + (start + i) % g]);
    }
  }
  return rings;
}

std::optional<PathStats> hop_stats(const NetworkApi& net, std::span<const int> members,
                                   bool closed) {
  PathStats stats;
  stats.min_bandwidth_Bps = std::numeric_limits<double>::infinity();
  const std::size_t n = members.size();
  const std::size_t hops = closed ? (n > 1 ? n : 0) : (n > 0 ? n - 1 : 0);
  for (std::size_t i = 0; i < hops; ++i) {
    const auto est = net.path_estimate(members[i], members[(i + 1) % n]);
    if (!est) return std::nullopt;
    stats.latency_sum_s += est->latency_s;
    stats.latency_max_s = std::max(stats.latency_max_s, est->latency_s);
    stats.min_bandwidth_Bps = std::min(stats.min_bandwidth_Bps, est->bandwidth_Bps);
  }
  stats.hops = static_cast<int>(hops);
  if (hops == 0) stats.min_bandwidth_Bps = 0;
  return stats;
}

}  // namespace overlapsim::sim::detail
