#include "sim/network/maxmin.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>

namespace overlapsim::sim {

namespace {
constexpr double kInfinity = std::numeric_limits<double>::infinity();
// Grows geometrically, as push_back would: reserving exactly the size needed for each of
// many small batches would copy the vector every time.
template <typename T>
void reserve_at_least(std::vector<T>& v, std::size_t n) {
  if (n > v.capacity()) v.reserve(std::max(n, 2 * v.capacity()));
}

// Compact the path pool when removed paths exceed this many ids and half the pool.
constexpr std::size_t kCompactMinGarbage = std::size_t{1} << 20;
// The component solve is tried when the flows at or above the level cross at least this
// many resources in all (below, re-solving them all costs less than the walk and the merge
// into the order).
constexpr std::size_t kComponentMinWork = 256;
}  // namespace

MaxMinSolver::ResourceId MaxMinSolver::add_resource(double capacity_Bps) {
  if (!std::isfinite(capacity_Bps) || capacity_Bps <= 0)
    throw std::invalid_argument("MaxMinSolver: resource capacity must be finite and > 0, got " +
                                std::to_string(capacity_Bps));
  const auto id = static_cast<ResourceId>(capacity_Bps_.size());
  capacity_Bps_.push_back(capacity_Bps);
  load_Bps_.push_back(0);
  active_weight_.push_back(0);
  remaining_Bps_.push_back(0);
  unfrozen_.push_back(0);
  csr_begin_.push_back(0);
  csr_fill_.push_back(0);
  touched_.push_back(0);
  level_bucket_.push_back(0);
  in_heap_.push_back(0);
  res_flows_.emplace_back();
  res_stamp_.push_back(0);
  resource_bits_.resize((capacity_Bps_.size() + 63) / 64, 0);
  return id;
}

MaxMinSolver::FlowId MaxMinSolver::new_flow_slot(std::span<const ResourceId> resources) {
  for (ResourceId r : resources)
    if (r >= capacity_Bps_.size())
      throw std::invalid_argument("MaxMinSolver: flow uses unknown resource " + std::to_string(r));
  if (num_active_ == 0) {  // every stored path is garbage: start the pool over
    path_pool_.clear();
    weight_pool_.clear();
    incidence_pos_.clear();
    indexed_ = true;  // every list is empty
    indexed_incidences_ = 0;
    path_garbage_ = 0;
  }
  if (path_garbage_ > kCompactMinGarbage && path_garbage_ > path_pool_.size() / 2) compact_paths();

  FlowId id;
  if (!free_ids_.empty()) {
    id = free_ids_.back();
    free_ids_.pop_back();
  } else {
    if (flows_.size() >= std::numeric_limits<FlowId>::max())
      throw std::length_error("MaxMinSolver: too many flows");
    id = static_cast<FlowId>(flows_.size());
    flows_.emplace_back();
  }
  flows_[id].path_begin = path_pool_.size();
  flows_[id].path_len = static_cast<std::uint32_t>(resources.size());
  path_pool_.insert(path_pool_.end(), resources.begin(), resources.end());
  if (indexed_) incidence_pos_.resize(path_pool_.size());
  flows_[id].rate_Bps = 0;
  flows_[id].state = FlowState::Added;
  added_.push_back(id);
  ++num_active_;
  link_incidences(id);
  return id;
}

void MaxMinSolver::link_incidences(FlowId id) {
  if (!indexed_) return;
  const auto resources = path(id);
  if (indexed_incidences_ + resources.size() > kIndexMaxIncidences) {
    drop_index();
    return;
  }
  indexed_incidences_ += resources.size();
  std::uint32_t* pos = incidence_pos_.data() + flows_[id].path_begin;
  for (std::size_t k = 0; k < resources.size(); ++k) {
    std::vector<Incidence>& list = res_flows_[resources[k]];
    pos[k] = static_cast<std::uint32_t>(list.size());
    list.push_back({id, static_cast<std::uint32_t>(k)});
  }
}

void MaxMinSolver::unlink_incidences(FlowId id) {
  if (!indexed_) return;
  const auto resources = path(id);
  indexed_incidences_ -= resources.size();
  const std::uint32_t* pos = incidence_pos_.data() + flows_[id].path_begin;
  for (std::size_t k = 0; k < resources.size(); ++k) {
    std::vector<Incidence>& list = res_flows_[resources[k]];
    const Incidence moved = list.back();
    list[pos[k]] = moved;
    list.pop_back();
    if (moved.flow != id) incidence_pos_[flows_[moved.flow].path_begin + moved.k] = pos[k];
  }
}

void MaxMinSolver::drop_index() {
  indexed_ = false;
  indexed_incidences_ = 0;
  for (auto& list : res_flows_) std::vector<Incidence>().swap(list);
  std::vector<std::uint32_t>().swap(incidence_pos_);
}

MaxMinSolver::FlowId MaxMinSolver::add_flow(std::span<const ResourceId> resources,
                                            std::uint32_t multiplicity) {
  if (multiplicity == 0) throw std::invalid_argument("MaxMinSolver: multiplicity must be >= 1");
  const FlowId id = new_flow_slot(resources);
  flows_[id].multiplicity = multiplicity;
  weight_pool_.insert(weight_pool_.end(), resources.size(), multiplicity);
  for (ResourceId r : resources) active_weight_[r] += multiplicity;
  return id;
}

MaxMinSolver::FlowId MaxMinSolver::add_weighted_flow(std::span<const ResourceId> resources,
                                                     std::span<const std::uint32_t> weights) {
  if (weights.size() != resources.size())
    throw std::invalid_argument("MaxMinSolver: one weight per resource expected");
  std::uint32_t largest = 0;
  for (std::uint32_t w : weights) {
    if (w == 0) throw std::invalid_argument("MaxMinSolver: weights must be >= 1");
    largest = std::max(largest, w);
  }
  const FlowId id = new_flow_slot(resources);
  flows_[id].multiplicity = std::max<std::uint32_t>(largest, 1);
  weight_pool_.insert(weight_pool_.end(), weights.begin(), weights.end());
  for (std::size_t i = 0; i < resources.size(); ++i) active_weight_[resources[i]] += weights[i];
  return id;
}

void MaxMinSolver::reserve(std::size_t flows, std::size_t incidences) {
  const std::size_t new_ids = flows > free_ids_.size() ? flows - free_ids_.size() : 0;
  reserve_at_least(flows_, flows_.size() + new_ids);
  reserve_at_least(path_pool_, path_pool_.size() + incidences);
  reserve_at_least(weight_pool_, weight_pool_.size() + incidences);
  if (indexed_) reserve_at_least(incidence_pos_, incidence_pos_.size() + incidences);
  reserve_at_least(added_, added_.size() + flows);
  reserve_at_least(order_, num_active_ + flows);
  reserve_at_least(batch_, num_active_ + flows);
  reserve_at_least(frozen_order_, num_active_ + flows);
}

void MaxMinSolver::remove_flow(FlowId id) {
  if (!is_active(id))
    throw std::invalid_argument("MaxMinSolver: remove_flow of inactive flow " + std::to_string(id));
  const auto resources = path(id);
  const auto weight = weights(id);
  if (flows_[id].state == FlowState::Solved) {
    for (std::size_t i = 0; i < resources.size(); ++i)
      load_Bps_[resources[i]] -= weight[i] * flows_[id].rate_Bps;
    removed_min_rate_Bps_ = removed_since_solve_
                                ? std::min(removed_min_rate_Bps_, flows_[id].rate_Bps)
                                : flows_[id].rate_Bps;
    removed_since_solve_ = true;
    dirty_resources_.insert(dirty_resources_.end(), resources.begin(), resources.end());
  }
  unlink_incidences(id);
  for (std::size_t i = 0; i < resources.size(); ++i) {
    const ResourceId r = resources[i];
    active_weight_[r] -= weight[i];
    if (active_weight_[r] == 0) load_Bps_[r] = 0;  // idle: no rounding residue left behind
  }
  // The id is reused only after the next solve: until then order_ still lists it and is
  // searched by rate, so flows_[id].rate_Bps must stay as it was.
  flows_[id].state = FlowState::Free;
  path_garbage_ += flows_[id].path_len;
  released_ids_.push_back(id);
  --num_active_;
}

std::span<const MaxMinSolver::ResourceId> MaxMinSolver::resources_of(FlowId id) const {
  if (!is_active(id))
    throw std::invalid_argument("MaxMinSolver: resources_of inactive flow " + std::to_string(id));
  return {path_pool_.data() + flows_[id].path_begin, flows_[id].path_len};
}

std::span<const std::uint32_t> MaxMinSolver::weights_of(FlowId id) const {
  if (!is_active(id))
    throw std::invalid_argument("MaxMinSolver: weights_of inactive flow " + std::to_string(id));
  return weights(id);
}

void MaxMinSolver::compact_paths() {
  std::vector<ResourceId> pool;
  std::vector<std::uint32_t> weight_pool, positions;
  pool.reserve(path_pool_.size() - path_garbage_);
  weight_pool.reserve(path_pool_.size() - path_garbage_);
  positions.reserve(path_pool_.size() - path_garbage_);
  for (std::size_t id = 0; id < flows_.size(); ++id) {
    if (flows_[id].state == FlowState::Free) continue;
    const std::size_t begin = pool.size();
    pool.insert(pool.end(), path_pool_.begin() + static_cast<std::ptrdiff_t>(flows_[id].path_begin),
                path_pool_.begin() +
                    static_cast<std::ptrdiff_t>(flows_[id].path_begin + flows_[id].path_len));
    const auto w = weights(static_cast<FlowId>(id));
    weight_pool.insert(weight_pool.end(), w.begin(), w.end());
    if (indexed_) {
      const auto p = incidence_pos_.begin() + static_cast<std::ptrdiff_t>(flows_[id].path_begin);
      positions.insert(positions.end(), p, p + flows_[id].path_len);
    }
    flows_[id].path_begin = begin;
  }
  path_pool_.swap(pool);
  weight_pool_.swap(weight_pool);
  incidence_pos_.swap(positions);
  path_garbage_ = 0;
}

std::span<const MaxMinSolver::FlowId> MaxMinSolver::solve() {
  batch_.clear();
  if (added_.empty() && !removed_since_solve_) {
    dirty_resources_.clear();
    return {};
  }

  // The level below which nothing can change (see the header): the smallest removed rate,
  // and for added flows a lower bound on where any of their resources can saturate now,
  // capacity / (multiplicity of all flows on it).
  double start_level_Bps = std::numeric_limits<double>::infinity();
  if (removed_since_solve_) start_level_Bps = removed_min_rate_Bps_;
  for (FlowId f : added_)
    if (flows_[f].state == FlowState::Added)
      for (ResourceId r : path(f))
        start_level_Bps = std::min(start_level_Bps, capacity_Bps_[r] / active_weight_[r]);
  const auto keep = static_cast<std::size_t>(
      std::lower_bound(order_.begin(), order_.end(), start_level_Bps,
                       [this](FlowId f, double x) { return flows_[f].rate_Bps < x; }) -
      order_.begin());

  // The changed flows' components, where they are smaller than every flow above the level
  // (and the merge into order_ costs less than re-solving those).
  std::size_t above_work = 0;
  for (std::size_t i = keep; i < order_.size(); ++i)
    if (flows_[order_[i]].state == FlowState::Solved) above_work += flows_[order_[i]].path_len;
  if (indexed_ && above_work >= kComponentMinWork && order_.size() <= above_work) {
    bool whole = false;
    if (collect_component(start_level_Bps, above_work / 2, whole)) {
      ++partial_solves_;
      ++component_solves_;
      // The whole component is re-solved from zero when no flow below the level shares its
      // resources (which also discards rounding drift in their loads); otherwise from the
      // level, on what the flows below it leave.
      for (FlowId f : batch_) {
        FlowSlot& slot = flows_[f];
        if (slot.state == FlowState::Added) {
          slot.state = FlowState::Solved;
        } else if (!whole) {
          shift_loads(f, -1);
        }
      }
      fill(whole ? 0 : start_level_Bps, whole);
      merge_into_order();
      return finish_solve();
    }
  }
  if (keep == 0) {
    ++full_solves_;
    start_level_Bps = 0;
    // Every load is recomputed from zero (fill() clears those of the resources the batch
    // touches; the others carry no flow), which also discards rounding drift.
  } else {
    ++partial_solves_;
  }
  for (std::size_t i = keep; i < order_.size(); ++i) {
    const FlowId f = order_[i];
    if (flows_[f].state != FlowState::Solved) continue;
    batch_.push_back(f);
    if (keep != 0) shift_loads(f, -1);
  }
  for (FlowId f : added_) {
    if (flows_[f].state != FlowState::Added) continue;  // removed again, or listed twice
    flows_[f].state = FlowState::Solved;
    batch_.push_back(f);
  }

  fill(start_level_Bps, keep == 0);

  order_.resize(keep);
  order_.insert(order_.end(), batch_.begin(), batch_.end());
  return finish_solve();
}

void MaxMinSolver::shift_loads(FlowId f, double sign) {
  const double rate_Bps = flows_[f].rate_Bps;
  if (!std::isfinite(rate_Bps)) return;
  const auto resources = path(f);
  const auto weight = weights(f);
  for (std::size_t i = 0; i < resources.size(); ++i)
    load_Bps_[resources[i]] += sign * weight[i] * rate_Bps;
}

std::span<const MaxMinSolver::FlowId> MaxMinSolver::finish_solve() {
  for (FlowId f : batch_) shift_loads(f, +1);
  flows_solved_ += batch_.size();
  added_.clear();
  dirty_resources_.clear();
  removed_since_solve_ = false;
  free_ids_.insert(free_ids_.end(), released_ids_.begin(), released_ids_.end());
  released_ids_.clear();
  return batch_;
}

void MaxMinSolver::next_stamp() {
  if (++stamp_ != 0) return;
  // Wrapped: clear the old marks, so that no flow or resource carries the new one.
  for (FlowSlot& slot : flows_) slot.stamp = 0;
  std::fill(res_stamp_.begin(), res_stamp_.end(), 0);
  stamp_ = 1;
}

bool MaxMinSolver::collect_component(double level_Bps, std::size_t work_limit, bool& whole) {
  next_stamp();
  batch_.clear();
  walk_.clear();
  whole = true;
  auto reach = [this](ResourceId r) {
    if (res_stamp_[r] == stamp_) return;
    res_stamp_[r] = stamp_;
    walk_.push_back(r);
  };
  for (FlowId f : added_) {
    FlowSlot& slot = flows_[f];
    if (slot.state != FlowState::Added || slot.stamp == stamp_) continue;
    slot.stamp = stamp_;
    batch_.push_back(f);
    for (ResourceId r : path(f)) reach(r);
  }
  for (ResourceId r : dirty_resources_) reach(r);
  std::size_t work = 0;
  for (std::size_t head = 0; head < walk_.size(); ++head) {
    const std::vector<Incidence>& on = res_flows_[walk_[head]];
    work += on.size();
    for (const Incidence& in : on) {
      const FlowId f = in.flow;
      FlowSlot& slot = flows_[f];
      if (slot.stamp == stamp_) continue;
      slot.stamp = stamp_;
      if (slot.state == FlowState::Solved && slot.rate_Bps < level_Bps) {
        whole = false;
        continue;
      }
      batch_.push_back(f);
      work += slot.path_len;
      for (ResourceId r : path(f)) reach(r);
    }
    if (work > work_limit) {
      batch_.clear();
      return false;
    }
  }
  return true;
}

void MaxMinSolver::merge_into_order() {
  next_stamp();
  for (FlowId f : batch_) flows_[f].stamp = stamp_;
  order_scratch_.clear();
  order_scratch_.reserve(order_.size() + batch_.size());
  std::size_t j = 0;
  for (FlowId f : order_) {
    const FlowSlot& slot = flows_[f];
    if (slot.state != FlowState::Solved || slot.stamp == stamp_) continue;  // removed or re-solved
    while (j < batch_.size() && flows_[batch_[j]].rate_Bps < slot.rate_Bps)
      order_scratch_.push_back(batch_[j++]);
    order_scratch_.push_back(f);
  }
  order_scratch_.insert(order_scratch_.end(), batch_.begin() + static_cast<std::ptrdiff_t>(j),
                        batch_.end());
  order_.swap(order_scratch_);
}

// Sorts initial_ by (level, resource) when its levels take few distinct values, as they
// do: symmetric traffic (ring steps, an all-to-all's NIC links, the folded images of a
// pipeline send) gives many resources one level, and a partial solve's start level clamps
// every level below it. A counting sort by level whose buckets are filled in resource
// order, read off a bitmap: O(entries x levels + resources / 64). The heap it replaces
// popped ~285 of ~790 entries per solve of a GPT-3 step, a tenth of the simulation. With
// more distinct levels (or a NaN) returns false and leaves the order to a heap; an
// aggregate crosses hundreds of resources and freezes after a few of them, so a full sort
// by comparisons would cost more than the filling.
bool MaxMinSolver::sort_initial_levels() {
  if (initial_.empty()) return true;
  constexpr std::size_t kMaxLevels = 16;
  std::array<double, kMaxLevels> levels;
  std::size_t num_levels = 0;
  for (const auto& [level, r] : initial_) {
    if (std::isnan(level)) return false;
    std::size_t b = 0;
    while (b < num_levels && levels[b] != level) ++b;
    if (b == num_levels) {
      if (num_levels == kMaxLevels) return false;
      levels[num_levels++] = level;
    }
    level_bucket_[r] = static_cast<std::uint8_t>(b);
  }
  // Position of each bucket's first entry in (level) order.
  std::array<std::uint8_t, kMaxLevels> by_level;
  for (std::size_t b = 0; b < num_levels; ++b) by_level[b] = static_cast<std::uint8_t>(b);
  std::sort(by_level.begin(), by_level.begin() + static_cast<std::ptrdiff_t>(num_levels),
            [&levels](std::uint8_t a, std::uint8_t b) { return levels[a] < levels[b]; });
  std::array<std::size_t, kMaxLevels> count{};
  for (const auto& e : initial_) ++count[level_bucket_[e.second]];
  std::array<std::size_t, kMaxLevels> next;
  std::size_t offset = 0;
  for (std::size_t i = 0; i < num_levels; ++i) {
    next[by_level[i]] = offset;
    offset += count[by_level[i]];
  }
  std::size_t lo_word = resource_bits_.size(), hi_word = 0;
  for (const auto& e : initial_) {
    const std::size_t w = e.second / 64;
    lo_word = std::min(lo_word, w);
    hi_word = std::max(hi_word, w);
  }
  // Few resources spread over many ids (the two NIC links of each of a few flows across a
  // large fabric): sorting them costs less than reading the bitmap between them. The order
  // is the same, (level, resource).
  if (hi_word - lo_word > 4 * initial_.size()) {
    std::sort(initial_.begin(), initial_.end());
    return true;
  }
  for (const auto& e : initial_)
    resource_bits_[e.second / 64] |= std::uint64_t{1} << (e.second % 64);
  for (std::size_t w = lo_word; w <= hi_word; ++w) {
    for (std::uint64_t bits = resource_bits_[w]; bits != 0; bits &= bits - 1) {
      const auto r = static_cast<ResourceId>(w * 64 + std::countr_zero(bits));
      const std::uint8_t b = level_bucket_[r];
      initial_[next[b]++] = {levels[b], r};
    }
    resource_bits_[w] = 0;
  }
  return true;
}

// Most solves of a step are small: a send's flow, a ring's few flows on their NVLink or
// NIC links (a 64-node GPT-3 configuration on H100: 3.7 M solves of 3 flows and 10
// resources on average). For those the CSR, the sorted level list and the heap cost more
// than the filling; this is the same filling over local arrays, the next resource found by
// a scan. It takes resources in the same (level, resource id) order as fill()'s merged list
// and heap (each resource has at most one entry at a time: an entry is re-queued only when
// popped), freezes flows in batch order as fill()'s CSR rows list them, and evaluates the
// same expressions, so the rates are bit-identical.
bool MaxMinSolver::fill_small(double start_level_Bps, bool from_zero_load) {
  if (batch_.size() > kSmallFlows || std::isnan(start_level_Bps)) return false;
  // touched_[r] holds the resource's local index + 1 while in use.
  ResourceId res[kSmallResources];
  std::uint64_t unfrozen[kSmallResources];
  std::size_t n = 0;
  std::size_t unfrozen_flows = 0;  // batch flows with resources, not yet frozen
  for (FlowId f : batch_) {
    flows_[f].frozen = false;
    if (flows_[f].path_len != 0) ++unfrozen_flows;
    const auto weight = weights(f);
    std::size_t k = 0;
    for (ResourceId r : path(f)) {
      if (!touched_[r]) {
        if (n == kSmallResources) {
          for (std::size_t i = 0; i < n; ++i) touched_[res[i]] = 0;
          return false;
        }
        res[n] = r;
        unfrozen[n] = 0;
        touched_[r] = static_cast<std::uint8_t>(++n);
      }
      unfrozen[touched_[r] - 1u] += weight[k++];
    }
  }
  // The initial (level, resource) entries sorted; re-queued ones in a small list kept in
  // descending order (its least at the back). Plain arrays: a std::array of std::pair is
  // zeroed on every call.
  struct Entry {
    double level_Bps;
    ResourceId r;
    bool operator<(const Entry& o) const {  // std::pair's order
      return level_Bps < o.level_Bps || (!(o.level_Bps < level_Bps) && r < o.r);
    }
  };
  double remaining[kSmallResources];
  Entry initial[kSmallResources];
  for (std::size_t i = 0; i < n; ++i) {
    const ResourceId r = res[i];
    if (from_zero_load) load_Bps_[r] = 0;
    remaining[i] = std::clamp(capacity_Bps_[r] - load_Bps_[r], 0.0, capacity_Bps_[r]);
    const Entry e{std::max(start_level_Bps, remaining[i] / unfrozen[i]), r};
    std::size_t j = i;
    for (; j > 0 && e < initial[j - 1]; --j) initial[j] = initial[j - 1];
    initial[j] = e;
  }
  Entry requeued[kSmallResources];
  std::size_t num_requeued = 0;
  std::size_t next_initial = 0;
  frozen_order_.clear();
  double level_Bps = start_level_Bps;
  while ((next_initial < n || num_requeued > 0) && unfrozen_flows > 0) {
    Entry entry;
    if (num_requeued == 0 ||
        (next_initial < n && initial[next_initial] < requeued[num_requeued - 1])) {
      entry = initial[next_initial++];
    } else {
      entry = requeued[--num_requeued];
    }
    const double key_Bps = entry.level_Bps;
    const ResourceId bottleneck = entry.r;
    const std::size_t b = touched_[bottleneck] - 1u;
    if (unfrozen[b] == 0) continue;
    const double current_Bps = remaining[b] / unfrozen[b];
    if (current_Bps > key_Bps) {
      const Entry e{current_Bps, bottleneck};
      std::size_t j = num_requeued++;
      for (; j > 0 && requeued[j - 1] < e; --j) requeued[j] = requeued[j - 1];
      requeued[j] = e;
      continue;
    }
    level_Bps = std::max(level_Bps, current_Bps);
    for (FlowId f : batch_) {
      FlowSlot& slot = flows_[f];
      if (slot.frozen) continue;
      const auto p = path(f);
      if (std::find(p.begin(), p.end(), bottleneck) == p.end()) continue;
      slot.frozen = true;
      --unfrozen_flows;
      slot.rate_Bps = level_Bps;
      frozen_order_.push_back(f);
      const auto w = weights(f);
      for (std::size_t k = 0; k < p.size(); ++k) {
        const std::size_t i = touched_[p[k]] - 1u;
        remaining[i] -= w[k] * level_Bps;
        unfrozen[i] -= w[k];
      }
    }
  }
  for (FlowId f : batch_) {
    if (flows_[f].path_len != 0) continue;
    flows_[f].rate_Bps = kInfinity;
    frozen_order_.push_back(f);
  }
  for (std::size_t i = 0; i < n; ++i) touched_[res[i]] = 0;
  batch_.swap(frozen_order_);
  return true;
}

void MaxMinSolver::fill(double start_level_Bps, bool from_zero_load) {
  if (fill_small(start_level_Bps, from_zero_load)) return;
  // Resource -> batch flows, as a compressed sparse row over the resources the batch touches.
  touched_list_.clear();
  std::size_t incidences = 0;
  std::size_t unfrozen_flows = 0;  // batch flows with resources, not yet frozen
  for (FlowId f : batch_) {
    flows_[f].frozen = false;
    if (flows_[f].path_len != 0) ++unfrozen_flows;
    const auto weight = weights(f);
    std::size_t k = 0;
    for (ResourceId r : path(f)) {
      if (!touched_[r]) {
        touched_[r] = 1;
        touched_list_.push_back(r);
        if (from_zero_load) load_Bps_[r] = 0;
        csr_fill_[r] = 0;
        unfrozen_[r] = 0;
      }
      ++csr_fill_[r];
      unfrozen_[r] += weight[k++];
      ++incidences;
    }
  }
  if (incidences > std::numeric_limits<std::uint32_t>::max())
    throw std::length_error("MaxMinSolver: more than 2^32 flow-resource incidences");
  std::uint32_t offset = 0;
  for (ResourceId r : touched_list_) {
    csr_begin_[r] = offset;
    offset += csr_fill_[r];
    csr_fill_[r] = csr_begin_[r];
  }
  csr_flows_.resize(incidences);
  for (FlowId f : batch_)
    for (ResourceId r : path(f)) csr_flows_[csr_fill_[r]++] = f;

  // Resources in order of the level at which they saturate. Freezing flows at level l never
  // lowers a resource's saturation level ((R - m l) / (U - m) >= R / U whenever R / U >= l),
  // so an entry is only ever stale by being too low: a resource taken with a level that has
  // since risen is queued again at its current level, and processed otherwise. The initial
  // levels are sorted once (sequential, cheaper than heap pops); re-queued ones go to a
  // small heap; the two are merged in (level, resource) order.
  const auto heap_greater = std::greater<std::pair<double, ResourceId>>();
  initial_.clear();
  for (ResourceId r : touched_list_) {
    // Rounding in incremental loads must not let the remainder leave [0, capacity].
    remaining_Bps_[r] = std::clamp(capacity_Bps_[r] - load_Bps_[r], 0.0, capacity_Bps_[r]);
    initial_.emplace_back(std::max(start_level_Bps, remaining_Bps_[r] / unfrozen_[r]), r);
  }
  heap_.clear();
  if (!sort_initial_levels()) {
    heap_.swap(initial_);  // initial_ is now empty
    std::make_heap(heap_.begin(), heap_.end(), heap_greater);
    for (const auto& e : heap_) in_heap_[e.second] = 1;
  }
  std::size_t next_initial = 0;
  // Heap entries of resources whose flows have all been frozen (through other resources).
  // An aggregate crosses hundreds of resources, so after one freezes most entries are
  // dead; popping them one by one was most of the time of a DeepSeek-V3 step (98 % of the
  // pops), so once they are the majority the heap is rebuilt without them. Only dead
  // entries go, which the loop would skip: the freeze order is unchanged.
  std::size_t dead_in_heap = 0;

  frozen_order_.clear();
  double level_Bps = start_level_Bps;
  // Entries left once every flow is frozen would all be skipped (no unfrozen weight).
  while ((next_initial < initial_.size() || !heap_.empty()) && unfrozen_flows > 0) {
    std::pair<double, ResourceId> entry;
    if (heap_.empty() ||
        (next_initial < initial_.size() && initial_[next_initial] < heap_.front())) {
      entry = initial_[next_initial++];
    } else {
      std::pop_heap(heap_.begin(), heap_.end(), heap_greater);
      entry = heap_.back();
      heap_.pop_back();
      in_heap_[entry.second] = 0;
      if (unfrozen_[entry.second] == 0) --dead_in_heap;
    }
    const auto [key_Bps, bottleneck] = entry;
    if (unfrozen_[bottleneck] == 0) continue;
    const double current_Bps = remaining_Bps_[bottleneck] / unfrozen_[bottleneck];
    if (current_Bps > key_Bps) {
      heap_.emplace_back(current_Bps, bottleneck);
      std::push_heap(heap_.begin(), heap_.end(), heap_greater);
      in_heap_[bottleneck] = 1;
      continue;
    }
    // Never below the level already reached: keeps the freeze order monotone despite
    // rounding, which the partial re-solve relies on.
    level_Bps = std::max(level_Bps, current_Bps);
    double* const remaining = remaining_Bps_.data();
    std::uint64_t* const unfrozen = unfrozen_.data();
    const ResourceId* const pool = path_pool_.data();
    const std::uint32_t* const weight_pool = weight_pool_.data();
    for (std::uint32_t i = csr_begin_[bottleneck]; i < csr_fill_[bottleneck]; ++i) {
      const FlowId f = csr_flows_[i];
      FlowSlot& slot = flows_[f];
      if (slot.frozen) continue;
      slot.frozen = true;
      --unfrozen_flows;
      slot.rate_Bps = level_Bps;
      frozen_order_.push_back(f);
      const ResourceId* r = pool + slot.path_begin;
      const std::uint32_t* w = weight_pool + slot.path_begin;
      for (const ResourceId* end = r + slot.path_len; r != end; ++r, ++w) {
        remaining[*r] -= *w * level_Bps;
        unfrozen[*r] -= *w;
        if (unfrozen[*r] == 0 && in_heap_[*r]) ++dead_in_heap;
      }
    }
    if (heap_.size() > 64 && 2 * dead_in_heap > heap_.size()) {
      std::size_t kept = 0;
      for (const auto& e : heap_) {
        if (unfrozen_[e.second] == 0)
          in_heap_[e.second] = 0;
        else
          heap_[kept++] = e;
      }
      heap_.resize(kept);
      std::make_heap(heap_.begin(), heap_.end(), heap_greater);
      dead_in_heap = 0;
    }
  }
  for (const auto& e : heap_) in_heap_[e.second] = 0;
  for (FlowId f : batch_) {
    if (flows_[f].path_len != 0) continue;
    flows_[f].rate_Bps = kInfinity;
    frozen_order_.push_back(f);
  }
  for (ResourceId r : touched_list_) touched_[r] = 0;
  batch_.swap(frozen_order_);
}

}  // namespace overlapsim::sim
