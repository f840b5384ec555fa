#pragma once
// The physical system as a Boost.Graph: vertices are GPUs, NVSwitches, PCIe switches,
// host bridges, NICs and network switches; every cable is full duplex, stored as two
// directed links with the same capacity per direction. Routing is shortest path by hop
// count with deterministic ECMP (a hash of src, dst and flow id picks among equal hops).
#include <boost/graph/adjacency_list.hpp>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

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
  LinkId id = 0;  // dense index into Topology::link()
};

using TopoGraph =
    boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS, TopoNode, TopoLink>;
using VertexId = TopoGraph::vertex_descriptor;

class Topology {
 public:
  explicit Topology(std::string name = "topology");
  // Copies share nothing: a copy starts with empty routing caches.
  Topology(const Topology& other);
  Topology& operator=(const Topology& other);
  Topology(Topology&&) noexcept;
  Topology& operator=(Topology&&) noexcept;
  ~Topology();

  // GPUs get ranks 0, 1, 2, ... in the order they are added.
  VertexId add_gpu(int host, std::string name = {});
  VertexId add_node(NodeKind kind, std::string name, int host = -1);
  // Adds the two directed links of one full-duplex cable; returns (a->b, b->a).
  // Throws std::invalid_argument for non-positive bandwidth or negative latency.
  std::pair<LinkId, LinkId> connect(VertexId a, VertexId b, double bandwidth_Bps, double latency_s,
                                    LinkClass cls);

  const std::string& name() const { return name_; }
  void set_name(std::string name) { name_ = std::move(name); }
  int num_gpus() const { return static_cast<int>(gpus_.size()); }
  int num_hosts() const { return num_hosts_; }
  VertexId gpu_vertex(int rank) const;  // throws std::out_of_range for a bad rank
  int host_of(int rank) const;
  std::size_t num_links() const { return links_.size(); }
  const TopoLink& link(LinkId id) const { return links_.at(id); }
  std::pair<VertexId, VertexId> link_ends(LinkId id) const { return ends_.at(id); }
  const TopoGraph& graph() const { return graph_; }
  std::size_t num_vertices() const { return boost::num_vertices(graph_); }

  // Whether a GPU may relay traffic between two of its links. True by default (plain
  // shortest paths, as direct-connect rings and chains need); builders of switched fabrics
  // (NVSwitch, PCIe, rail fat-tree) turn it off so that a GPU is only ever an endpoint and
  // traffic never detours through a third GPU's NVLink or NIC.
  void set_gpus_forward(bool forward);
  bool gpus_forward() const { return gpus_forward_; }

  // Directed links from GPU src to GPU dst (empty when src == dst). Deterministic.
  // Throws std::out_of_range for a bad rank, std::runtime_error when dst is unreachable.
  // Safe to call from several threads at once (the caches are guarded); adding vertices or
  // links, or changing settings, while another thread routes is not.
  std::vector<LinkId> route(int src_rank, int dst_rank, std::uint64_t flow_id = 0) const;
  // The same route written into `path` (cleared first), reusing its storage.
  void route_into(int src_rank, int dst_rank, std::uint64_t flow_id,
                  std::vector<LinkId>& path) const;
  double path_latency_s(const std::vector<LinkId>& path) const;

  // Routing caches (see topology.cpp): hop-distance tables, bounded by a byte limit.
  struct RouteCacheStats {
    std::size_t distance_tables = 0;  // tables held now
    std::size_t bytes = 0;            // bytes held by all routing caches now
    std::uint64_t bfs_runs = 0;       // breadth-first searches over the whole graph so far
    std::uint64_t evictions = 0;      // tables dropped to stay under the limit
  };
  RouteCacheStats route_cache_stats() const;
  void set_route_cache_limit_bytes(std::size_t limit_bytes);

 private:
  struct RoutingState;
  RoutingState& routing() const;
  void invalidate_routes();

  std::string name_;
  TopoGraph graph_;
  std::vector<VertexId> gpus_;
  std::vector<TopoLink> links_;
  std::vector<std::pair<VertexId, VertexId>> ends_;
  int num_hosts_ = 0;
  bool gpus_forward_ = true;
  std::size_t route_cache_limit_bytes_ = std::size_t{256} << 20;
  // Hop-distance tables and scratch, built on first route() (bounded: see topology.cpp).
  mutable std::unique_ptr<RoutingState> routing_;
};

}  // namespace overlapsim::sim
