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

std::uint64_t pair_hash(std::uint64_t pair, std::uint64_t flow_id) {
  return mix(pair ^ mix(flow_id));
}

// pair_route's table starts over past this many pairs (~40 bytes each with their links).
constexpr std::size_t kMaxPairRoutes = std::size_t{1} << 20;

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
  std::vector<LinkId> path;  // reused: one allocation per group, not per pair
  for (const std::uint64_t p : pairs) {
    const auto src = static_cast<int>(p >> 32);
    const auto dst = static_cast<int>(p & 0xffffffffu);
    topo_.route_into(src, dst, flow_id, path);
    // Room for every pair at the first one's length, so that a 100k-pair group is not
    // grown (and copied) a dozen times; shrunk to fit below.
    if (fresh.links_.empty()) fresh.links_.reserve(pairs.size() * (path.size() + 1));
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

RouteCache::PairRoute RouteCache::pair_route(std::uint64_t pair, std::uint64_t flow_id) {
  if (pair_slots_.empty()) pair_slots_.resize(1024);
  std::size_t mask = pair_slots_.size() - 1;
  std::size_t i = pair_hash(pair, flow_id) & mask;
  for (; pair_slots_[i].pair != kNoPair; i = (i + 1) & mask) {
    const PairSlot& slot = pair_slots_[i];
    if (slot.pair == pair && slot.flow_id == flow_id)
      return {{pair_links_.data() + slot.links_begin, slot.links_len}, slot.latency_s};
  }
  const auto src = static_cast<int>(pair >> 32);
  const auto dst = static_cast<int>(pair & 0xffffffffu);
  const std::vector<LinkId> path = topo_.route(src, dst, flow_id);  // throws for bad ranks
  ++routes_computed_;
  if (pair_count_ >= kMaxPairRoutes) {
    pair_slots_.assign(pair_slots_.size(), PairSlot{});
    pair_links_.clear();
    pair_count_ = 0;
  } else if (2 * (pair_count_ + 1) > pair_slots_.size()) {
    grow_pair_table();
  }
  mask = pair_slots_.size() - 1;
  for (i = pair_hash(pair, flow_id) & mask; pair_slots_[i].pair != kNoPair; i = (i + 1) & mask) {
  }
  PairSlot& slot = pair_slots_[i];
  slot.pair = pair;
  slot.flow_id = flow_id;
  slot.links_begin = static_cast<std::uint32_t>(pair_links_.size());
  slot.links_len = static_cast<std::uint32_t>(path.size());
  slot.latency_s = topo_.path_latency_s(path);
  pair_links_.insert(pair_links_.end(), path.begin(), path.end());
  ++pair_count_;
  return {{pair_links_.data() + slot.links_begin, slot.links_len}, slot.latency_s};
}

void RouteCache::grow_pair_table() {
  std::vector<PairSlot> old(pair_slots_.size() * 2);
  old.swap(pair_slots_);
  const std::size_t mask = pair_slots_.size() - 1;
  for (const PairSlot& slot : old) {
    if (slot.pair == kNoPair) continue;
    std::size_t i = pair_hash(slot.pair, slot.flow_id) & mask;
    while (pair_slots_[i].pair != kNoPair) i = (i + 1) & mask;
    pair_slots_[i] = slot;
  }
}

}  // namespace overlapsim::sim
