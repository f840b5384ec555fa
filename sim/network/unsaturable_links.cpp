#include "sim/network/unsaturable_links.hpp"

#include <algorithm>
#include <cstdint>
#include <numeric>

namespace overlapsim::sim {

namespace {

enum class Mark : std::uint8_t { Open, Kept, Dropped };

}  // namespace

std::vector<bool> unsaturable_links(const Topology& topology) {
  const TopoGraph& g = topology.graph();
  const std::size_t num_links = topology.num_links();
  std::vector<Mark> mark(num_links, Mark::Open);

  std::vector<LinkId> order(num_links);
  std::iota(order.begin(), order.end(), LinkId{0});
  std::stable_sort(order.begin(), order.end(), [&](LinkId a, LinkId b) {
    return topology.link(a).bandwidth_Bps > topology.link(b).bandwidth_Bps;
  });

  std::vector<LinkId> bound;
  // The links of the inflow (into `via`, not from `other`) or outflow (out of `via`, not to
  // `other`) bound; false when one of them is already dropped or their capacity exceeds
  // `capacity_Bps`.
  auto collect = [&](VertexId via, VertexId other, bool inflow, double capacity_Bps) {
    bound.clear();
    double sum_Bps = 0;
    auto consider = [&](auto edge, VertexId far) {
      if (far == other) return true;
      const LinkId id = g[edge].id;
      if (mark[id] == Mark::Dropped) return false;
      bound.push_back(id);
      sum_Bps += topology.link(id).bandwidth_Bps;
      return sum_Bps <= capacity_Bps;
    };
    if (inflow) {
      for (const auto e : boost::make_iterator_range(boost::in_edges(via, g)))
        if (!consider(e, boost::source(e, g))) return false;
    } else {
      for (const auto e : boost::make_iterator_range(boost::out_edges(via, g)))
        if (!consider(e, boost::target(e, g))) return false;
    }
    return true;
  };

  for (const LinkId id : order) {
    if (mark[id] != Mark::Open) continue;
    const auto [u, v] = topology.link_ends(id);
    const double capacity_Bps = topology.link(id).bandwidth_Bps;
    const bool dropped = (g[u].kind != NodeKind::Gpu && collect(u, v, true, capacity_Bps)) ||
                         (g[v].kind != NodeKind::Gpu && collect(v, u, false, capacity_Bps));
    if (!dropped) {
      mark[id] = Mark::Kept;
      continue;
    }
    mark[id] = Mark::Dropped;
    for (const LinkId b : bound) mark[b] = Mark::Kept;
  }

  std::vector<bool> out(num_links);
  for (std::size_t i = 0; i < num_links; ++i) out[i] = mark[i] == Mark::Dropped;
  return out;
}

}  // namespace overlapsim::sim
