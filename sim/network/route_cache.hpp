#pragma once
// Routes of whole transfer groups FlowNetwork has routed before, keyed by the group's
// ordered (src, dst) pairs and flow id. Topology::route walks the graph and costs about
// O(path x vertex degree) per pair (microseconds at a 1,024-port switch), and collectives
// issue the same group again and again: every step of a ring, every layer's all-to-all.
// Caching per group rather than per pair keeps both the first pass and a hit sequential
// in memory (a per-pair hash table costs a cache miss per transfer, which for a 1M-pair
// all-to-all was as slow as routing). Routes are pure functions of the key, so caching
// never changes results. Memory is bounded: past the byte limit the cache starts over.
#include <cstddef>
#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "sim/topology/topology.hpp"

namespace overlapsim::sim {

// The routes of one group, in the order of the pairs it was asked for.
class GroupRoutes {
 public:
  std::size_t size() const { return latency_s_.size(); }
  std::span<const LinkId> links(std::size_t i) const {
    return {links_.data() + begin_[i], begin_[i + 1] - begin_[i]};
  }
  double latency_s(std::size_t i) const { return latency_s_[i]; }

 private:
  friend class RouteCache;
  std::uint64_t flow_id_ = 0;
  std::vector<std::uint64_t> pairs_;  // src << 32 | dst
  std::vector<std::size_t> begin_;    // size() + 1 offsets into links_
  std::vector<LinkId> links_;
  std::vector<double> latency_s_;
  std::size_t bytes() const;
};

class RouteCache {
 public:
  explicit RouteCache(const Topology& topo, std::size_t limit_bytes = std::size_t{256} << 20);

  static std::uint64_t pair_key(int src_rank, int dst_rank) {
    return static_cast<std::uint64_t>(static_cast<std::uint32_t>(src_rank)) << 32 |
           static_cast<std::uint32_t>(dst_rank);
  }
  // Routes of `pairs` (pair_key values) under `flow_id`: cached, or computed now. The
  // reference stays valid until the next call.
  const GroupRoutes& routes(std::span<const std::uint64_t> pairs, std::uint64_t flow_id);

  // The route of one pair under `flow_id` (a group of one transfer: every send/recv, and
  // each folded image of one), cached in a flat open-addressing table: one slot and one
  // run of links per lookup, where the group table costs a node, its pair list and its
  // arrays (a GPT-3 step launches ~0.8 M such groups). The links stay valid until the next
  // call.
  struct PairRoute {
    std::span<const LinkId> links;
    double latency_s = 0;
  };
  PairRoute pair_route(std::uint64_t pair, std::uint64_t flow_id);

  std::uint64_t group_hits() const { return hits_; }
  std::uint64_t routes_computed() const { return routes_computed_; }
  std::size_t bytes() const { return bytes_; }

 private:
  const Topology& topo_;
  std::size_t limit_bytes_;
  // Hash of (pairs, flow_id) -> routes. A hash collision between different groups is
  // caught by comparing the stored pairs; the newer group then replaces the older one.
  std::unordered_map<std::uint64_t, GroupRoutes> groups_;
  // pair_route's table: a power-of-two number of slots, at most half full, linear probing.
  struct PairSlot {
    std::uint64_t pair = kNoPair;
    std::uint64_t flow_id = 0;
    std::uint32_t links_begin = 0;  // into pair_links_
    std::uint32_t links_len = 0;
    double latency_s = 0;
  };
  static constexpr std::uint64_t kNoPair = ~std::uint64_t{0};  // src = dst = -1: never routed
  std::vector<PairSlot> pair_slots_;
  std::vector<LinkId> pair_links_;
  std::size_t pair_count_ = 0;
  void grow_pair_table();
  GroupRoutes uncached_;  // a group larger than the whole limit
  std::size_t bytes_ = 0;
  std::uint64_t hits_ = 0;
  std::uint64_t routes_computed_ = 0;
};

}  // namespace overlapsim::sim
