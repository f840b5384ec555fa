#include "sim/network/route_cache.hpp"

#include <algorithm>

namespace overlapsim::sim {

namespace {

// splitmix64 finaliser (Steele, Lea, Flood, OOPSLA 2014): portable, well mixed.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

std::uint64_t group_hash(std::span<const std::uint64_t> pairs, std::uint64_t flow_id) {
  std::uint64_t h = mix(flow_id ^ pairs.size());
  for (std::uint64_t p : pairs) h = mix(h ^ p);
  return h;
}

// Per-group bookkeeping beyond its vectors (map node, hash, sizes).
constexpr std::size_t kGroupOverheadBytes = 128;

}  // namespace

std::size_t GroupRoutes::bytes() const {
  return kGroupOverheadBytes + pairs_.capacity() * sizeof(std::uint64_t) +
         begin_.capacity() * sizeof(std::size_t) + links_.capacity() * sizeof(LinkId) +
         latency_s_.capacity() * sizeof(double);
}

RouteCache::RouteCache(const Topology& topo, std::size_t limit_bytes)
    : topo_(topo), limit_bytes_(limit_bytes) {}

const GroupRoutes& RouteCache::routes(std::span<const std::uint64_t> pairs, std::uint64_t flow_id) {
  const std::uint64_t key = group_hash(pairs, flow_id);
  const auto it = groups_.find(key);
  if (it != groups_.end() && it->second.flow_id_ == flow_id &&
      std::equal(pairs.begin(), pairs.end(), it->second.pairs_.begin(), it->second.pairs_.end())) {
    ++hits_;
    return it->second;
  }

  GroupRoutes fresh;
  fresh.flow_id_ = flow_id;
  fresh.pairs_.assign(pairs.begin(), pairs.end());
  fresh.begin_.reserve(pairs.size() + 1);
  fresh.latency_s_.reserve(pairs.size());
  fresh.begin_.push_back(0);
  for (const std::uint64_t p : pairs) {
    const auto src = static_cast<int>(p >> 32);
    const auto dst = static_cast<int>(p & 0xffffffffu);
    const std::vector<LinkId> path = topo_.route(src, dst, flow_id);
    fresh.links_.insert(fresh.links_.end(), path.begin(), path.end());
    fresh.begin_.push_back(fresh.links_.size());
    fresh.latency_s_.push_back(topo_.path_latency_s(path));
  }
  routes_computed_ += pairs.size();
  fresh.links_.shrink_to_fit();

  if (it != groups_.end()) {  // same hash, other group: replace it
    bytes_ -= it->second.bytes();
    groups_.erase(it);
  }
  const std::size_t fresh_bytes = fresh.bytes();
  if (fresh_bytes > limit_bytes_) {
    uncached_ = std::move(fresh);
    return uncached_;
  }
  if (bytes_ + fresh_bytes > limit_bytes_) {
    groups_.clear();
    bytes_ = 0;
  }
  bytes_ += fresh_bytes;
  return groups_.emplace(key, std::move(fresh)).first->second;
}

}  // namespace overlapsim::sim
