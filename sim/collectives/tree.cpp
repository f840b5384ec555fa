// NCCL's double binary tree for allreduce. Two binary trees over the hosts (over the
// ranks when each rank is its own host), built so that a host that is interior in one
// tree is a leaf in the other, each carry half the data; inside a host the ranks form
// a chain to the host's head. Reduce goes up and broadcast comes down, pipelined, so
// every edge carries its half in both directions at once: one streamed flow per edge
// and direction, then the latency of the deepest path up and back down. With several
// ranks per host each tree is split into one channel per local rank (channel c's
// chains start at local rank c), so every NIC carries a share, as NCCL's channels do.
#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "sim/collectives/algorithms.hpp"
#include "sim/collectives/groups.hpp"
#include "sim/collectives/tree_shape.hpp"

namespace overlapsim::sim::detail {

namespace {

using HostGroups = std::vector<std::vector<int>>;

// Host h's chain in channel c, head first.
std::vector<int> chain_of(const HostGroups& hosts, int h, std::size_t c) {
  const auto& g = hosts[static_cast<std::size_t>(h)];
  std::vector<int> chain(g.size());
  for (std::size_t i = 0; i < g.size(); ++i) chain[i] = g[(c + i) % g.size()];
  return chain;
}

// Every (child, parent) rank pair of one channel of one tree.
void append_edges(const HostGroups& hosts, const std::vector<int>& parent, std::size_t c,
                  std::uint64_t share, std::vector<Transfer>& out) {
  const int m = static_cast<int>(hosts.size());
  for (int h = 0; h < m; ++h) {
    const auto chain = chain_of(hosts, h, c);
    auto add = [&](int child, int par) {
      out.push_back(Transfer{child, par, share});  // reduce
      out.push_back(Transfer{par, child, share});  // broadcast
    };
    for (std::size_t i = 1; i < chain.size(); ++i) add(chain[i], chain[i - 1]);
    const int p = parent[static_cast<std::size_t>(h)];
    if (p >= 0) add(chain.front(), chain_of(hosts, p, c).front());
  }
}

// The path from the deepest rank to the root of one tree (channel 0).
struct DeepestPath {
  int hops = 0;
  double latency_s = 0;          // unknown (0) without estimates
  double hop_latency_max_s = 0;  // slowest single edge
  double min_bandwidth_Bps = 0;
  bool latency_known = true;
};

DeepestPath deepest_path(const NetworkApi& net, const HostGroups& hosts,
                         const std::vector<int>& parent) {
  const std::size_t m = hosts.size();
  DeepestPath result;
  std::vector<double> edge_latency_s(m, 0.0);   // host head -> parent's head
  std::vector<double> chain_latency_s(m, 0.0);  // host tail -> host head
  auto note_hop = [&result](double latency_s, double bandwidth_Bps) {
    result.hop_latency_max_s = std::max(result.hop_latency_max_s, latency_s);
    result.min_bandwidth_Bps = result.min_bandwidth_Bps == 0
                                   ? bandwidth_Bps
                                   : std::min(result.min_bandwidth_Bps, bandwidth_Bps);
  };
  for (std::size_t h = 0; h < m && result.latency_known; ++h) {
    std::vector<int> tail_to_head = chain_of(hosts, static_cast<int>(h), 0);
    std::reverse(tail_to_head.begin(), tail_to_head.end());
    const auto in_host = hop_stats(net, tail_to_head, /*closed=*/false);
    if (!in_host) {
      result.latency_known = false;
      break;
    }
    chain_latency_s[h] = in_host->latency_sum_s;
    if (in_host->hops > 0) note_hop(in_host->latency_max_s, in_host->min_bandwidth_Bps);
    const int p = parent[h];
    if (p < 0) continue;
    const auto edge = net.path_estimate(tail_to_head.back(), chain_of(hosts, p, 0).front());
    if (!edge) {
      result.latency_known = false;
      break;
    }
    edge_latency_s[h] = edge->latency_s;
    note_hop(edge->latency_s, edge->bandwidth_Bps);
  }
  for (std::size_t h = 0; h < m; ++h) {
    int hops = static_cast<int>(hosts[h].size()) - 1;
    double latency_s = chain_latency_s[h];
    for (int q = static_cast<int>(h); parent[static_cast<std::size_t>(q)] >= 0;
         q = parent[static_cast<std::size_t>(q)]) {
      ++hops;
      latency_s += edge_latency_s[static_cast<std::size_t>(q)];
    }
    result.hops = std::max(result.hops, hops);
    if (result.latency_known) result.latency_s = std::max(result.latency_s, latency_s);
  }
  return result;
}

}  // namespace

Plan tree_plan(const NetworkApi& net, const CollectiveRequest& req,
               const CollectiveTuning& tuning) {
  if (req.op != CollectiveOp::AllReduce) throw std::logic_error("tree_plan: allreduce only");
  Plan plan;
  plan.start_delay_s = tuning.launch_latency_s;
  if (req.ranks.size() < 2 || req.bytes == 0) return plan;

  const HostGroups hosts = group_by_host(net, req.ranks);
  std::size_t channels = 1;
  for (const auto& h : hosts) channels = std::max(channels, h.size());
  const std::vector<int> first = in_order_tree_parents(static_cast<int>(hosts.size()));
  const std::vector<int> second = second_tree_parents(first);
  const std::uint64_t share = ceil_div(req.bytes, 2 * channels);

  std::vector<Transfer> transfers;
  for (std::size_t c = 0; c < channels; ++c) {
    append_edges(hosts, first, c, share, transfers);
    append_edges(hosts, second, c, share, transfers);
  }
  Phase phase;
  phase.transfers = canonical_transfers(std::move(transfers));

  const DeepestPath a = deepest_path(net, hosts, first);
  const DeepestPath b = deepest_path(net, hosts, second);
  const int hops = std::max(a.hops, b.hops);
  // Up then down: the deepest path twice, of which the flows pay one edge themselves.
  phase.delay_after_s = 2 * hops * tuning.step_latency_s;
  if (a.latency_known && b.latency_known) {
    phase.delay_after_s += std::max(0.0, 2 * std::max(a.latency_s, b.latency_s) -
                                             std::max(a.hop_latency_max_s, b.hop_latency_max_s));
    const double min_bw_Bps = std::min(a.min_bandwidth_Bps, b.min_bandwidth_Bps);
    const double chunk_bytes =
        static_cast<double>(std::min<std::uint64_t>(tuning.chunk_bytes, share));
    if (min_bw_Bps > 0) phase.delay_after_s += (2 * hops - 1) * chunk_bytes / min_bw_Bps;
  }
  append_phase(plan, std::move(phase));
  return plan;
}

}  // namespace overlapsim::sim::detail
