#pragma once
// The physical system as a Boost.Graph: vertices are GPUs, NVSwitches, PCIe switches,
// host bridges, NICs and network switches; every cable is full duplex, stored as two
// directed links with the same capacity per direction. Routing is shortest path by hop
// count with deterministic ECMP (a hash of src, dst and flow id picks among equal hops).
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <boost/graph/adjacency_list.hpp>

namespace overlapsim::sim {

enum class NodeKind { Gpu, NvSwitch, PcieSwitch, HostBridge, Nic, LeafSwitch, SpineSwitch, Switch };
// Link classes group links for traces and reports (one track per class).
enum class LinkClass { NvLink, Pcie, Network };

const char* to_string(NodeKind kind);
const char* to_string(LinkClass cls);

struct TopoNode {
  NodeKind kind = NodeKind::Gpu;
  std::string name;
  int rank = -1;  // GPU rank, -1 for non-GPU vertices
  int host = -1;  // node (server) index, -1 for fabric switches shared by hosts
};

using LinkId = std::uint32_t;

struct TopoLink {
  double bandwidth_Bps = 0;  // capacity in this direction
  double latency_s = 0;      // propagation + switching latency of this hop
  LinkClass cls = LinkClass::Network;
  LinkId id = 0;             // dense index into Topology::link()
};

using TopoGraph = boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS, TopoNode,
                                        TopoLink>;
using VertexId = TopoGraph::vertex_descriptor;

class Topology {
 public:
  explicit Topology(std::string name = "topology");

  // GPUs get ranks 0, 1, 2, ... in the order they are added.
  VertexId add_gpu(int host, std::string name = {});
  VertexId add_node(NodeKind kind, std::string name, int host = -1);
  // Adds the two directed links of one full-duplex cable; returns (a->b, b->a).
  // Throws std::invalid_argument for non-positive bandwidth or negative latency.
  std::pair<LinkId, LinkId> connect(VertexId a, VertexId b, double bandwidth_Bps, double latency_s,
                                    LinkClass cls);

  const std::string& name() const { return name_; }
  int num_gpus() const { return static_cast<int>(gpus_.size()); }
  int num_hosts() const { return num_hosts_; }
  VertexId gpu_vertex(int rank) const;  // throws std::out_of_range for a bad rank
  int host_of(int rank) const;
  std::size_t num_links() const { return links_.size(); }
  const TopoLink& link(LinkId id) const { return links_.at(id); }
  std::pair<VertexId, VertexId> link_ends(LinkId id) const { return ends_.at(id); }
  const TopoGraph& graph() const { return graph_; }

  // Directed links from GPU src to GPU dst (empty when src == dst). Deterministic.
  std::vector<LinkId> route(int src_rank, int dst_rank, std::uint64_t flow_id = 0) const;
  double path_latency_s(const std::vector<LinkId>& path) const;

 private:
  const std::vector<std::int32_t>& hops_to(VertexId dst) const;

  std::string name_;
  TopoGraph graph_;
  std::vector<VertexId> gpus_;
  std::vector<TopoLink> links_;
  std::vector<std::pair<VertexId, VertexId>> ends_;
  int num_hosts_ = 0;
  // Hop distance to a destination vertex, computed by BFS on first use and cached
  // (bounded: see topology.cpp).
  mutable std::vector<std::vector<std::int32_t>> hops_cache_;
  mutable std::vector<VertexId> hops_cache_key_;
};

}  // namespace overlapsim::sim
