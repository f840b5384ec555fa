#include "sim/topology/topology.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <list>
#include <mutex>
#include <stdexcept>
#include <unordered_map>

// Routing design.
//
// route() walks from the source GPU towards the destination, at every vertex taking a
// link to a neighbour one hop closer (shortest paths by hop count); where several
// neighbours are equally close, a hash of (src, dst, flow_id, hop) picks one (ECMP). The
// walk needs the hop distance of each neighbour to the destination.
//
// Storing one BFS distance table per destination GPU costs V entries each: at 16,384 GPUs
// (~35k vertices) that is over 1 GiB. But most destinations hang below a single vertex
// that every path from afar must cross: a GPU on a flat switch (the switch, 1 hop), a GPU
// in a PCIe box (its PCIe switch), a GPU in a rail fat-tree (its rail's leaf, 2 hops: via
// its NIC; its NVSwitch leads only to GPUs, which do not relay). So for each destination
// GPU a small BFS finds its "near" ball: levels 1, 2, ... until the only vertex of a level
// that can relay traffic further is one vertex, the anchor. Then
//     hops(v, dst) = near[v]                       for v in the ball,
//                  = hops(v, anchor) + anchor_hops  otherwise,
// because every path from outside enters the ball through the anchor. Distance tables are
// kept per anchor, so a 2048-node x 8-GPU fat-tree needs one table per leaf (512 with
// 32-port leaves, 44 MB) instead of 16,384. Where no anchor exists within a few levels (a
// ring, a mesh), the destination is its own anchor. Tables live in an LRU bounded by a byte
// limit, so memory stays bounded whatever the graph; a miss costs a BFS, and each table is
// searched only as far out as the sources routed to it so far (Table): a ring's neighbour
// routes never search the whole ring.
//
// Scanning every link of a big switch on every route is the other cost (a 1,024-port flat
// switch, a spine above 512 leaves). Inside a ball the next hops of each vertex are listed
// when the ball is found; outside it they depend only on the anchor, so a table memoises
// them for vertices with more than kScanDegree links. Measured on the 2-core machine: about
// 0.2 us per route for a 1,024-rank all-to-all on 128 x 8 GPUs, 0.1 us on the flat switch.
//
// Distances are uint16_t (a graph with a path over 65,534 hops is rejected). The
// adjacency is flattened into arrays once (insertion order, so ECMP choices are stable).
// Every route() holds a mutex: the caches are shared, and uncontended locking costs tens
// of nanoseconds, small beside the walk.

namespace overlapsim::sim {

namespace {

constexpr std::uint16_t kUnreached = std::numeric_limits<std::uint16_t>::max();
// A destination's ball is searched this deep / this large before giving up on an anchor.
constexpr int kMaxBallLevels = 4;
constexpr std::size_t kMaxBallVertices = 1024;
// Vertices with more links than this get their next hops memoised per anchor table.
constexpr std::uint32_t kScanDegree = 8;

// splitmix64 (Steele, Lea, Flood, "Fast splittable pseudorandom number generators",
// OOPSLA 2014): portable and well mixed, unlike std::hash.
std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

std::uint64_t ecmp_hash(int src, int dst, std::uint64_t flow_id, int hop) {
  std::uint64_t h = splitmix64(static_cast<std::uint64_t>(src));
  h = splitmix64(h ^ static_cast<std::uint64_t>(dst));
  h = splitmix64(h ^ flow_id);
  return splitmix64(h ^ static_cast<std::uint64_t>(hop));
}

}  // namespace

const char* to_string(NodeKind kind) {
  switch (kind) {
    case NodeKind::Gpu:
      return "gpu";
    case NodeKind::NvSwitch:
      return "nvswitch";
    case NodeKind::PcieSwitch:
      return "pcie-switch";
    case NodeKind::HostBridge:
      return "host-bridge";
    case NodeKind::Nic:
      return "nic";
    case NodeKind::LeafSwitch:
      return "leaf-switch";
    case NodeKind::SpineSwitch:
      return "spine-switch";
    case NodeKind::Switch:
      return "switch";
  }
  return "unknown";
}

const char* to_string(LinkClass cls) {
  switch (cls) {
    case LinkClass::NvLink:
      return "nvlink";
    case LinkClass::Pcie:
      return "pcie";
    case LinkClass::Network:
      return "network";
  }
  return "unknown";
}

struct Topology::RoutingState {
  // What route() knows about one destination GPU (see the comment at the top).
  struct Destination {
    bool ready = false;
    bool has_anchor = false;  // false: every vertex that can reach dst is in the ball
    std::uint32_t anchor = 0;
    std::uint16_t anchor_hops = 0;
    // The ball: vertices with their hops to dst and, for each, the links one hop closer
    // (next_link[next_begin[i] .. next_begin[i + 1]]), so a walk inside the ball never
    // scans a high-degree switch.
    std::vector<std::uint32_t> near_vertex;
    std::vector<std::uint16_t> near_hops;
    std::vector<std::uint32_t> next_begin;
    std::vector<LinkId> next_link;
    std::size_t bytes() const {
      return near_vertex.capacity() * sizeof(std::uint32_t) +
             near_hops.capacity() * sizeof(std::uint16_t) +
             next_begin.capacity() * sizeof(std::uint32_t) + next_link.capacity() * sizeof(LinkId);
    }
  };
  struct Table {
    std::uint32_t anchor = 0;
    // Hops from each vertex to the anchor, searched breadth-first only as far as the routes
    // asked so far need: every level up to the farthest source met is complete, and nothing
    // beyond it is labelled (kUnreached). A walk from a source at level L only compares
    // neighbours of vertices below L, whose nearer neighbours are all labelled, so a partial
    // table routes exactly as a full one. On a ring of 65,536 GPUs a route to a neighbour
    // then searches a few vertices instead of the whole ring.
    std::vector<std::uint16_t> hops;
    std::vector<std::uint32_t> queue;  // the search's queue; emptied once it is complete
    std::size_t head = 0;              // next vertex of `queue` to expand
    bool complete = false;
    // Next hops towards the anchor of high-degree vertices (switches) met so far: outside
    // a destination's ball they depend on the anchor only, and scanning a 64- or 512-port
    // switch on every route costs more than looking its list up.
    std::unordered_map<std::uint32_t, std::pair<std::uint32_t, std::uint32_t>> next_of;
    std::vector<LinkId> next_link;
    std::size_t bytes = 0;  // counted towards limit_bytes (memo entries ~32 bytes each)
  };

  std::mutex mutex;
  std::size_t limit_bytes = 0;

  bool adjacency_ready = false;
  std::vector<std::uint32_t> out_begin;  // CSR over out-links, size V + 1
  std::vector<std::uint32_t> out_target;
  std::vector<LinkId> out_link;
  std::vector<std::uint32_t> link_target;  // by link id
  std::vector<std::uint8_t> relays;        // may a path pass through this vertex?

  std::vector<Destination> destinations;  // by rank
  std::size_t destination_bytes = 0;

  std::list<Table> lru;  // most recently used first
  std::unordered_map<std::uint32_t, std::list<Table>::iterator> tables;
  std::size_t table_bytes = 0;
  Table* last_table = nullptr;  // the front of lru, looked up last
  std::uint64_t bfs_runs = 0;
  std::uint64_t evictions = 0;

  // Scratch: index into the current destination's ball, valid where near_stamp == stamp.
  std::vector<std::uint32_t> near_stamp;
  std::vector<std::uint32_t> near_index;
  std::uint32_t stamp = 0;
  int stamped_rank = -1;
  std::vector<LinkId> ties;

  std::uint32_t num_vertices() const { return static_cast<std::uint32_t>(relays.size()); }
  std::uint32_t degree(std::uint32_t v) const { return out_begin[v + 1] - out_begin[v]; }

  std::size_t bytes() const {
    return table_bytes + destination_bytes + destinations.capacity() * sizeof(Destination) +
           (out_begin.capacity() + out_target.capacity() + link_target.capacity() +
            near_stamp.capacity() + near_index.capacity()) *
               sizeof(std::uint32_t) +
           (out_link.capacity() + ties.capacity()) * sizeof(LinkId) + relays.capacity();
  }

  void prepare(const Topology& topo);
  Table& table_for(std::uint32_t anchor, std::uint32_t source);
  void evict_to_limit();
  void search_until(Table& table, std::uint32_t source);
  static std::size_t table_bytes_of(const Table& table);
  void find_ball(Destination& dest, std::uint32_t dst);
  void stamp_ball(const Destination& dest, int dst_rank);
};

void Topology::RoutingState::prepare(const Topology& topo) {
  const TopoGraph& g = topo.graph_;
  const auto n = static_cast<std::uint32_t>(boost::num_vertices(g));
  limit_bytes = topo.route_cache_limit_bytes_;
  out_begin.assign(n + 1, 0);
  relays.assign(n, 0);
  for (std::uint32_t v = 0; v < n; ++v) {
    relays[v] = g[v].kind != NodeKind::Gpu || topo.gpus_forward_;
    for (const auto e : boost::make_iterator_range(boost::out_edges(v, g))) {
      out_target.push_back(static_cast<std::uint32_t>(boost::target(e, g)));
      out_link.push_back(g[e].id);
    }
    out_begin[v + 1] = static_cast<std::uint32_t>(out_target.size());
  }
  link_target.resize(topo.ends_.size());
  for (std::size_t id = 0; id < topo.ends_.size(); ++id)
    link_target[id] = static_cast<std::uint32_t>(topo.ends_[id].second);
  destinations.assign(topo.gpus_.size(), {});
  near_stamp.assign(n, 0);
  near_index.assign(n, 0);
  adjacency_ready = true;
}

// Breadth-first search from the table's anchor over the (symmetric) links, resumed where it
// stopped, until `source` is labelled and every vertex below its level is expanded (then
// its level is complete too), or the search has reached everything. Vertices that do not
// relay get a distance but are not expanded.
void Topology::RoutingState::search_until(Table& t, std::uint32_t source) {
  if (t.complete || t.hops[source] != kUnreached) return;
  while (t.head < t.queue.size()) {
    const std::uint32_t v = t.queue[t.head];
    if (t.hops[source] != kUnreached && t.hops[v] >= t.hops[source]) {
      // Keep only the frontier, the vertices labelled but not yet expanded: the table's
      // memory is then about its hops alone, as for a complete one.
      t.queue.erase(t.queue.begin(), t.queue.begin() + static_cast<std::ptrdiff_t>(t.head));
      t.queue.shrink_to_fit();
      t.head = 0;
      return;
    }
    ++t.head;
    if (v != t.anchor && !relays[v]) continue;
    if (t.hops[v] + 1 >= kUnreached)
      throw std::runtime_error("route: a path is longer than 65,534 hops");
    for (std::uint32_t i = out_begin[v]; i < out_begin[v + 1]; ++i) {
      const std::uint32_t u = out_target[i];
      if (t.hops[u] != kUnreached) continue;
      t.hops[u] = static_cast<std::uint16_t>(t.hops[v] + 1);
      t.queue.push_back(u);
    }
  }
  t.complete = true;
  std::vector<std::uint32_t>().swap(t.queue);
}

std::size_t Topology::RoutingState::table_bytes_of(const Table& t) {
  return t.hops.capacity() * sizeof(std::uint16_t) + t.queue.capacity() * sizeof(std::uint32_t);
}

Topology::RoutingState::Table& Topology::RoutingState::table_for(std::uint32_t anchor,
                                                                 std::uint32_t source) {
  Table* t = last_table;
  if (t == nullptr || t->anchor != anchor) {
    if (const auto it = tables.find(anchor); it != tables.end()) {
      lru.splice(lru.begin(), lru, it->second);
    } else {
      Table fresh;
      fresh.anchor = anchor;
      fresh.hops.assign(num_vertices(), kUnreached);
      fresh.hops[anchor] = 0;
      fresh.queue.push_back(anchor);
      fresh.bytes = table_bytes_of(fresh);
      table_bytes += fresh.bytes;
      lru.push_front(std::move(fresh));
      tables.emplace(anchor, lru.begin());
      ++bfs_runs;
    }
    t = &lru.front();
    last_table = t;
  }
  // Memoised next hops are counted in t->bytes too; only the search's part changes here.
  const std::size_t before = table_bytes_of(*t);
  search_until(*t, source);
  const std::size_t after = table_bytes_of(*t);
  t->bytes = t->bytes - before + after;
  table_bytes = table_bytes - before + after;
  evict_to_limit();
  return *t;
}

// Never evicts the front table (the one in use): one table is the floor whatever the limit.
void Topology::RoutingState::evict_to_limit() {
  while (table_bytes > limit_bytes && lru.size() > 1) {
    table_bytes -= lru.back().bytes;
    tables.erase(lru.back().anchor);
    lru.pop_back();
    ++evictions;
  }
}

// Level by level from dst until a level's only relaying vertex is one vertex (the anchor).
void Topology::RoutingState::find_ball(Destination& dest, std::uint32_t dst) {
  const std::uint32_t stamp_now = ++stamp;
  stamped_rank = -1;
  std::vector<std::uint32_t> ball{dst};
  std::vector<std::uint16_t> level_of{0};
  near_stamp[dst] = stamp_now;
  near_index[dst] = 0;
  std::vector<std::uint32_t> frontier{dst};
  bool found = false;
  for (int level = 1; level <= kMaxBallLevels && !found; ++level) {
    std::vector<std::uint32_t> next;
    for (const std::uint32_t v : frontier) {
      if (v != dst && !relays[v]) continue;
      for (std::uint32_t i = out_begin[v]; i < out_begin[v + 1]; ++i) {
        const std::uint32_t u = out_target[i];
        if (near_stamp[u] == stamp_now) continue;
        near_stamp[u] = stamp_now;
        near_index[u] = static_cast<std::uint32_t>(ball.size());
        ball.push_back(u);
        level_of.push_back(static_cast<std::uint16_t>(level));
        next.push_back(u);
      }
    }
    if (ball.size() > kMaxBallVertices) break;
    std::vector<std::uint32_t> relaying;
    for (const std::uint32_t u : next)
      if (relays[u]) relaying.push_back(u);
    if (relaying.size() <= 1) {
      found = true;
      dest.has_anchor = relaying.size() == 1;
      if (dest.has_anchor) {
        dest.anchor = relaying[0];
        dest.anchor_hops = static_cast<std::uint16_t>(level);
      }
    }
    frontier = std::move(next);
  }
  if (found) {
    // Next hops inside the ball, in out-link order (the order a full scan would give).
    dest.next_begin.assign(1, 0);
    for (std::size_t b = 0; b < ball.size(); ++b) {
      const std::uint32_t v = ball[b];
      for (std::uint32_t i = out_begin[v]; b > 0 && i < out_begin[v + 1]; ++i) {
        const std::uint32_t u = out_target[i];
        if (near_stamp[u] != stamp_now || level_of[near_index[u]] + 1 != level_of[b]) continue;
        if (u == dst || relays[u]) dest.next_link.push_back(out_link[i]);
      }
      dest.next_begin.push_back(static_cast<std::uint32_t>(dest.next_link.size()));
    }
    dest.near_vertex = std::move(ball);
    dest.near_hops = std::move(level_of);
  } else {  // no single entry vertex nearby: the destination is its own anchor
    dest.has_anchor = true;
    dest.anchor = dst;
    dest.anchor_hops = 0;
  }
  destination_bytes += dest.bytes();
  dest.ready = true;
}

void Topology::RoutingState::stamp_ball(const Destination& dest, int dst_rank) {
  if (stamped_rank == dst_rank) return;
  const std::uint32_t stamp_now = ++stamp;
  for (std::uint32_t i = 0; i < dest.near_vertex.size(); ++i) {
    near_stamp[dest.near_vertex[i]] = stamp_now;
    near_index[dest.near_vertex[i]] = i;
  }
  stamped_rank = dst_rank;
}

Topology::Topology(std::string name)
    : name_(std::move(name)), routing_(std::make_unique<RoutingState>()) {}

Topology::Topology(const Topology& other)
    : name_(other.name_),
      graph_(other.graph_),
      gpus_(other.gpus_),
      links_(other.links_),
      ends_(other.ends_),
      num_hosts_(other.num_hosts_),
      gpus_forward_(other.gpus_forward_),
      route_cache_limit_bytes_(other.route_cache_limit_bytes_),
      routing_(std::make_unique<RoutingState>()) {}

Topology& Topology::operator=(const Topology& other) {
  if (this != &other) *this = Topology(other);
  return *this;
}

Topology::Topology(Topology&&) noexcept = default;
Topology& Topology::operator=(Topology&&) noexcept = default;
Topology::~Topology() = default;

Topology::RoutingState& Topology::routing() const {
  if (!routing_) routing_ = std::make_unique<RoutingState>();  // only after a move-from
  return *routing_;
}

void Topology::invalidate_routes() { routing_ = std::make_unique<RoutingState>(); }

VertexId Topology::add_gpu(int host, std::string name) {
  if (host < 0) throw std::invalid_argument(fmt::format("add_gpu: host {} is negative", host));
  const int rank = num_gpus();
  if (name.empty()) name = fmt::format("gpu{}", rank);
  const VertexId v =
      boost::add_vertex(TopoNode{NodeKind::Gpu, std::move(name), rank, host}, graph_);
  gpus_.push_back(v);
  num_hosts_ = std::max(num_hosts_, host + 1);
  invalidate_routes();
  return v;
}

VertexId Topology::add_node(NodeKind kind, std::string name, int host) {
  if (kind == NodeKind::Gpu)
    throw std::invalid_argument("add_node: GPUs are added with add_gpu (they get a rank)");
  const VertexId v = boost::add_vertex(TopoNode{kind, std::move(name), -1, host}, graph_);
  if (host >= 0) num_hosts_ = std::max(num_hosts_, host + 1);
  invalidate_routes();
  return v;
}

std::pair<LinkId, LinkId> Topology::connect(VertexId a, VertexId b, double bandwidth_Bps,
                                            double latency_s, LinkClass cls) {
  const auto n = boost::num_vertices(graph_);
  if (a >= n || b >= n)
    throw std::invalid_argument(fmt::format("connect: vertex {} or {} does not exist", a, b));
  if (a == b) throw std::invalid_argument(fmt::format("connect: vertex {} to itself", a));
  if (!(bandwidth_Bps > 0) || !std::isfinite(bandwidth_Bps))
    throw std::invalid_argument(
        fmt::format("connect {} - {}: bandwidth_Bps {} must be positive and finite", graph_[a].name,
                    graph_[b].name, bandwidth_Bps));
  if (!(latency_s >= 0) || !std::isfinite(latency_s))
    throw std::invalid_argument(fmt::format("connect {} - {}: latency_s {} must be >= 0",
                                            graph_[a].name, graph_[b].name, latency_s));
  const auto add = [&](VertexId from, VertexId to) {
    const auto id = static_cast<LinkId>(links_.size());
    const TopoLink link{bandwidth_Bps, latency_s, cls, id};
    boost::add_edge(from, to, link, graph_);
    links_.push_back(link);
    ends_.emplace_back(from, to);
    return id;
  };
  const LinkId ab = add(a, b);
  const LinkId ba = add(b, a);
  invalidate_routes();
  return {ab, ba};
}

VertexId Topology::gpu_vertex(int rank) const {
  if (rank < 0 || rank >= num_gpus())
    throw std::out_of_range(fmt::format("rank {} is outside the topology '{}' (ranks 0..{})", rank,
                                        name_, num_gpus() - 1));
  return gpus_[static_cast<std::size_t>(rank)];
}

int Topology::host_of(int rank) const { return graph_[gpu_vertex(rank)].host; }

void Topology::set_gpus_forward(bool forward) {
  gpus_forward_ = forward;
  invalidate_routes();
}

void Topology::set_route_cache_limit_bytes(std::size_t limit_bytes) {
  route_cache_limit_bytes_ = limit_bytes;
  invalidate_routes();
}

double Topology::path_latency_s(const std::vector<LinkId>& path) const {
  double total_s = 0;
  for (const LinkId id : path) total_s += link(id).latency_s;
  return total_s;
}

Topology::RouteCacheStats Topology::route_cache_stats() const {
  RoutingState& rs = routing();
  std::lock_guard lock(rs.mutex);
  return RouteCacheStats{rs.tables.size(), rs.bytes(), rs.bfs_runs, rs.evictions};
}

std::vector<LinkId> Topology::route(int src_rank, int dst_rank, std::uint64_t flow_id) const {
  std::vector<LinkId> path;
  route_into(src_rank, dst_rank, flow_id, path);
  return path;
}

void Topology::route_into(int src_rank, int dst_rank, std::uint64_t flow_id,
                          std::vector<LinkId>& path) const {
  path.clear();
  path.reserve(8);  // the longest path of the shipped fabrics has 6 links
  const auto src = static_cast<std::uint32_t>(gpu_vertex(src_rank));
  const auto dst = static_cast<std::uint32_t>(gpu_vertex(dst_rank));
  if (src == dst) return;

  RoutingState& rs = routing();
  std::lock_guard lock(rs.mutex);
  if (!rs.adjacency_ready) rs.prepare(*this);
  RoutingState::Destination& dest = rs.destinations[static_cast<std::size_t>(dst_rank)];
  if (!dest.ready) rs.find_ball(dest, dst);
  rs.stamp_ball(dest, dst_rank);
  const std::uint32_t stamp = rs.stamp;
  RoutingState::Table* table = dest.has_anchor ? &rs.table_for(dest.anchor, src) : nullptr;
  const std::uint16_t* hops = table != nullptr ? table->hops.data() : nullptr;
  const std::uint32_t anchor_hops = dest.anchor_hops;
  const auto hops_to_dst = [&](std::uint32_t v) -> std::uint32_t {
    if (rs.near_stamp[v] == stamp) return dest.near_hops[rs.near_index[v]];
    if (hops == nullptr || hops[v] == kUnreached) return kUnreached;
    return hops[v] + anchor_hops;
  };
  const auto no_path = [&] {
    return std::runtime_error(
        fmt::format("route: no path from rank {} to rank {} in '{}'", src_rank, dst_rank, name_));
  };

  // Each step collects the links one hop closer to dst, in out-link order, and lets the
  // ECMP hash pick one when there are several.
  std::vector<LinkId>& ties = rs.ties;
  std::uint32_t v = src;
  for (int hop = 0; v != dst; ++hop) {
    if (static_cast<std::uint32_t>(hop) > rs.num_vertices())
      throw std::logic_error("route: walk did not converge (inconsistent hop tables)");
    const LinkId* first = nullptr;
    std::size_t count = 0;
    if (rs.near_stamp[v] == stamp) {  // inside the ball: next hops are listed
      const std::uint32_t b = rs.near_index[v];
      first = dest.next_link.data() + dest.next_begin[b];
      count = dest.next_begin[b + 1] - dest.next_begin[b];
    } else if (table != nullptr && rs.degree(v) > kScanDegree) {
      // Outside the ball the next hops are those towards the anchor: relaying neighbours
      // one hop closer to it (or the anchor itself, which may be dst).
      auto it = table->next_of.find(v);
      if (it == table->next_of.end()) {
        const auto begin = static_cast<std::uint32_t>(table->next_link.size());
        for (std::uint32_t i = rs.out_begin[v]; hops[v] != kUnreached && i < rs.out_begin[v + 1];
             ++i) {
          const std::uint32_t u = rs.out_target[i];
          if ((rs.relays[u] || u == table->anchor) && hops[u] + 1 == hops[v])
            table->next_link.push_back(rs.out_link[i]);
        }
        const auto end = static_cast<std::uint32_t>(table->next_link.size());
        it = table->next_of.emplace(v, std::make_pair(begin, end)).first;
        const std::size_t added = (end - begin) * sizeof(LinkId) + 32;
        table->bytes += added;
        rs.table_bytes += added;
      }
      first = table->next_link.data() + it->second.first;
      count = it->second.second - it->second.first;
    } else {
      ties.clear();
      std::uint32_t best = kUnreached;
      for (std::uint32_t i = rs.out_begin[v]; i < rs.out_begin[v + 1]; ++i) {
        const std::uint32_t u = rs.out_target[i];
        if (u != dst && !rs.relays[u]) continue;
        const std::uint32_t h = hops_to_dst(u);
        if (h > best) continue;
        if (h < best) {
          best = h;
          ties.clear();
        }
        ties.push_back(rs.out_link[i]);
      }
      if (best != kUnreached) {
        first = ties.data();
        count = ties.size();
      }
    }
    if (count == 0) throw no_path();
    const std::size_t pick = count == 1 ? 0 : ecmp_hash(src_rank, dst_rank, flow_id, hop) % count;
    path.push_back(first[pick]);
    v = rs.link_target[first[pick]];
  }
  // Memoised next hops grow the tables; keep the total under the limit (never the front).
  if (rs.table_bytes > rs.limit_bytes) rs.evict_to_limit();
}

}  // namespace overlapsim::sim
