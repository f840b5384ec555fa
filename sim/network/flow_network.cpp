#include "sim/network/flow_network.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "sim/engine/dary_heap.hpp"
#include "sim/engine/simulator.hpp"
#include "sim/network/maxmin.hpp"
#include "sim/network/route_cache.hpp"
#include "sim/network/unsaturable_links.hpp"

namespace overlapsim::sim {

namespace {

using FlowId = MaxMinSolver::FlowId;

// Flows whose data finishes within this relative distance of the current completion event
// finish with it: one re-solve instead of one per rounding-level difference (identical
// flows on symmetric paths get rates that differ in the last bits).
constexpr double kBatchRelativeEpsilon = 1e-9;
constexpr std::size_t kNumLinkClasses = 3;
// Children per node of the pending-completion heap (see dary_heap.hpp).
constexpr std::size_t kHeapArity = 8;

std::size_t class_index(LinkClass cls) { return static_cast<std::size_t>(cls); }

// A distinct transfer of a group with how many identical copies it stands for.
struct UniqueTransfer {
  Transfer transfer;
  std::uint32_t copies = 1;
};

bool before(const Transfer& a, const Transfer& b) {
  if (a.src_rank != b.src_rank) return a.src_rank < b.src_rank;
  if (a.dst_rank != b.dst_rank) return a.dst_rank < b.dst_rank;
  return a.bytes < b.bytes;
}

bool same(const Transfer& a, const Transfer& b) {
  return a.src_rank == b.src_rank && a.dst_rank == b.dst_rank && a.bytes == b.bytes;
}

// Identical transfers of one group (same src, dst and bytes, hence the same route for the
// group's flow id and the same start time) are one flow with multiplicity. Collectives
// usually emit pairs in increasing (src, dst) order; then no two can be equal and the sort
// is skipped.
void unique_transfers(std::span<const Transfer> transfers, std::vector<UniqueTransfer>& out) {
  out.clear();
  out.reserve(transfers.size());
  bool strictly_increasing = true;
  const Transfer* prev = nullptr;
  for (const Transfer& t : transfers) {
    if (t.src_rank == t.dst_rank || t.bytes == 0 || t.copies == 0) continue;  // at once
    if (prev != nullptr && (prev->src_rank > t.src_rank ||
                            (prev->src_rank == t.src_rank && prev->dst_rank >= t.dst_rank)))
      strictly_increasing = false;
    prev = &t;
    out.push_back({t, t.copies});
  }
  if (strictly_increasing) return;
  std::sort(out.begin(), out.end(), [](const UniqueTransfer& a, const UniqueTransfer& b) {
    return before(a.transfer, b.transfer);
  });
  std::size_t kept = 0;
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (kept > 0 && same(out[kept - 1].transfer, out[i].transfer)) {
      out[kept - 1].copies += out[i].copies;
    } else {
      out[kept++] = out[i];
    }
  }
  out.resize(kept);
}

}  // namespace

struct FlowNetwork::Impl {
  Impl(Simulator& simulator, const Topology& topology)
      : sim(simulator), topo(topology), routes(topology), unsaturable(unsaturable_links(topology)) {
    link_class.reserve(topo.num_links());
    for (LinkId id = 0; id < topo.num_links(); ++id) {
      const TopoLink& link = topo.link(id);
      if (solver.add_resource(link.bandwidth_Bps) != id)
        throw std::logic_error("FlowNetwork: link ids must be dense");
      link_class.push_back(link.cls);
    }
  }

  ~Impl() {
    sim.cancel(solve_event);
    sim.cancel(completion_event);
  }

  // State of one simulated flow, indexed by its solver id. Bytes left are brought up to
  // date only when the rate changes (remaining -= rate * elapsed), never per event.
  struct FlowRecord {
    double remaining_bytes = 0;
    double last_update_s = 0;
    double rate_Bps = 0;  // rate the remaining bytes drain at since last_update_s
    double latency_s = 0;
    std::uint64_t bytes = 0;
    std::uint32_t group = 0;
    std::uint32_t version = 0;  // bumps on every rate change and at the end: stale heap entries
    std::uint32_t copies = 1;   // multiplicity
    // Links of each class on the path (an aggregate: summed over its members).
    std::array<std::uint32_t, kNumLinkClasses> hops{};
  };
  FlowRecord& new_record(FlowId f, std::uint64_t bytes, std::uint32_t slot, double now_s);
  struct Group {
    Done on_done;
    std::uint64_t id = 0;
    std::size_t pending = 0;
    double last_arrival_s = 0;
  };
  // A projected end of a flow's data; the heap holds one per rate change, stale ones are
  // skipped by version.
  struct Finish {
    double time_s;
    FlowId flow;
    std::uint32_t version;
    // A function object rather than a function: a function pointer is not inlined into
    // the heap's loops.
    struct Earlier {
      bool operator()(const Finish& a, const Finish& b) const {
        return a.time_s != b.time_s ? a.time_s < b.time_s : a.flow < b.flow;
      }
    };
  };

  void start_group(std::span<const Transfer> transfers, Done on_done, std::uint64_t flow_id,
                   std::size_t aggregate_min);
  void start_flows(const std::vector<UniqueTransfer>& unique, const GroupRoutes& group_routes,
                   std::uint32_t slot, double now_s);
  void start_flow(const UniqueTransfer& u, std::span<const LinkId> links, double latency_s,
                  std::uint32_t slot, double now_s);
  bool start_aggregates(const std::vector<UniqueTransfer>& unique, const GroupRoutes& group_routes,
                        std::uint32_t slot, double now_s);
  void request_solve();
  void solve_now();
  void on_completion();
  void finish_flow(FlowId f, double now_s);
  void complete_group(std::uint32_t slot);
  void reschedule_completion();
  bool is_current(const Finish& e) const {
    return solver.is_active(e.flow) && flows[e.flow].version == e.version;
  }
  void compact_finish_heap();

  Simulator& sim;
  const Topology& topo;
  RouteCache routes;
  MaxMinSolver solver;
  FlowNetworkStats stats;
  FlowObserver observer;
  std::vector<LinkClass> link_class;
  // Links no allocation can saturate (unsaturable_links.hpp): left out of the solver's
  // paths, still counted in hops and latency.
  std::vector<bool> unsaturable;
  std::vector<LinkId> solver_links;  // scratch: a path without its unsaturable links
  // Byte-hops per link class: finished flows exactly, plus the flows in flight as
  //   in_flight_bytes + in_flight_rate_Bps * (now - in_flight_since_s)
  // brought up to date whenever a rate changes, so reading it is O(1) at any time.
  std::array<double, kNumLinkClasses> finished_bytes{};
  std::array<double, kNumLinkClasses> in_flight_bytes{};
  std::array<double, kNumLinkClasses> in_flight_rate_Bps{};
  double in_flight_since_s = 0;
  void advance_in_flight(double now_s) {
    for (std::size_t c = 0; c < kNumLinkClasses; ++c)
      in_flight_bytes[c] += in_flight_rate_Bps[c] * (now_s - in_flight_since_s);
    in_flight_since_s = now_s;
  }
  void add_in_flight_rate(const FlowRecord& rec, double delta_Bps) {
    for (std::size_t c = 0; c < kNumLinkClasses; ++c)
      in_flight_rate_Bps[c] += delta_Bps * rec.copies * rec.hops[c];
  }

  std::vector<FlowRecord> flows;
  std::vector<Group> groups;
  std::vector<std::uint32_t> free_groups;
  std::uint64_t next_group_id = 0;
  std::vector<Finish> finish_heap;  // 8-ary min-heap by (time, flow)
  std::vector<FlowId> due_scratch;
  std::vector<UniqueTransfer> unique_scratch;
  std::vector<std::uint64_t> pairs_scratch;
  std::vector<std::uint64_t> due_bits;
  std::size_t aggregate_min_transfers = kDefaultAggregateMinTransfers;
  std::vector<std::uint32_t> link_weight;  // per link, zero between uses
  std::vector<LinkId> agg_links;
  std::vector<std::uint32_t> agg_weights;

  EventId solve_event = kNoEvent;
  EventId completion_event = kNoEvent;
  double completion_time_s = 0;

  // path_estimate answers by pair (RouteCache::pair_key): collectives ask for the same few
  // pairs at every launch (NCCL's cost of each call), and a route walk per question was a
  // tenth of a step's simulation. Bounded: past the limit the cache starts over.
  static constexpr std::size_t kMaxEstimates = std::size_t{1} << 16;
  std::unordered_map<std::uint64_t, PathEstimate> estimates;
};

void FlowNetwork::Impl::start_group(std::span<const Transfer> transfers, Done on_done,
                                    std::uint64_t flow_id, std::size_t aggregate_min) {
  const int n = topo.num_gpus();
  for (std::size_t i = 0; i < transfers.size(); ++i) {
    const Transfer& t = transfers[i];
    if (t.src_rank < 0 || t.src_rank >= n || t.dst_rank < 0 || t.dst_rank >= n)
      throw std::out_of_range("FlowNetwork::transfer_group: transfer " + std::to_string(i) +
                              " from rank " + std::to_string(t.src_rank) + " to rank " +
                              std::to_string(t.dst_rank) + " is outside ranks 0.." +
                              std::to_string(n - 1));
  }
  // Scratch kept between calls: re-touching fresh pages for every million-transfer group
  // cost more than filling them.
  std::vector<UniqueTransfer>& unique = unique_scratch;
  unique_transfers(transfers, unique);
  // Routing can throw (an unreachable rank); nothing has been started before it. A group
  // of one transfer (every send/recv) takes the per-pair table.
  const bool single = unique.size() == 1;
  RouteCache::PairRoute single_route;
  const GroupRoutes* group_routes = nullptr;
  if (single) {
    const Transfer& t = unique.front().transfer;
    single_route = routes.pair_route(RouteCache::pair_key(t.src_rank, t.dst_rank), flow_id);
  } else {
    std::vector<std::uint64_t>& pairs = pairs_scratch;
    pairs.clear();
    pairs.reserve(unique.size());
    for (const UniqueTransfer& u : unique)
      pairs.push_back(RouteCache::pair_key(u.transfer.src_rank, u.transfer.dst_rank));
    group_routes = &routes.routes(pairs, flow_id);
  }
  stats.routes_computed = routes.routes_computed();

  const std::uint64_t group_id = next_group_id++;
  const double now_s = sim.now();
  if (unique.empty()) {
    sim.schedule(0.0, [on_done = std::move(on_done), done = observer.on_group_done, group_id,
                       &simulator = sim] {
      if (done) done(group_id, simulator.now());
      if (on_done) on_done();
    });
    if (observer.on_group_start) observer.on_group_start(group_id, now_s);
    return;
  }

  std::uint32_t slot;
  if (!free_groups.empty()) {
    slot = free_groups.back();
    free_groups.pop_back();
  } else {
    slot = static_cast<std::uint32_t>(groups.size());
    groups.emplace_back();
  }
  groups[slot] = Group{std::move(on_done), group_id, unique.size(), now_s};

  if (single) {
    start_flow(unique.front(), single_route.links, single_route.latency_s, slot, now_s);
    ++stats.flows_simulated;
  } else if (aggregate_min > 0 && unique.size() >= aggregate_min &&
             start_aggregates(unique, *group_routes, slot, now_s)) {
    // groups[slot].pending counts the aggregates.
  } else {
    start_flows(unique, *group_routes, slot, now_s);
  }
  stats.peak_active_flows = std::max<std::uint64_t>(stats.peak_active_flows, solver.num_active());
  request_solve();
  // Last: the observer may start other groups, which reuse the scratch above.
  if (observer.on_group_start) observer.on_group_start(group_id, now_s);
}

void FlowNetwork::Impl::start_flows(const std::vector<UniqueTransfer>& unique,
                                    const GroupRoutes& group_routes, std::uint32_t slot,
                                    double now_s) {
  std::size_t incidences = 0;
  for (std::size_t i = 0; i < unique.size(); ++i) incidences += group_routes.links(i).size();
  solver.reserve(unique.size(), incidences);
  if (const std::size_t n = solver.num_active() + unique.size(); n > flows.capacity())
    flows.reserve(std::max(n, 2 * flows.capacity()));  // geometric, as push_back
  for (std::size_t i = 0; i < unique.size(); ++i)
    start_flow(unique[i], group_routes.links(i), group_routes.latency_s(i), slot, now_s);
  stats.flows_simulated += unique.size();
}

void FlowNetwork::Impl::start_flow(const UniqueTransfer& u, std::span<const LinkId> links,
                                   double latency_s, std::uint32_t slot, double now_s) {
  solver_links.clear();
  for (LinkId link : links)
    if (!unsaturable[link]) solver_links.push_back(link);
  const FlowId f = solver.add_flow(solver_links, u.copies);
  FlowRecord& rec = new_record(f, u.transfer.bytes, slot, now_s);
  rec.latency_s = latency_s;
  rec.copies = u.copies;
  for (LinkId link : links) ++rec.hops[class_index(link_class[link])];
  stats.flows_started += u.copies;
}

FlowNetwork::Impl::FlowRecord& FlowNetwork::Impl::new_record(FlowId f, std::uint64_t bytes,
                                                             std::uint32_t slot, double now_s) {
  if (f >= flows.size()) flows.resize(static_cast<std::size_t>(f) + 1);
  FlowRecord& rec = flows[f];
  rec.remaining_bytes = static_cast<double>(bytes);
  rec.last_update_s = now_s;
  rec.rate_Bps = 0;
  rec.latency_s = 0;
  rec.copies = 1;
  rec.hops = {};
  rec.bytes = bytes;
  rec.group = slot;
  ++rec.version;
  return rec;
}

// A large group's transfers fall into a few classes of the same shape: same bytes and
// copies, same hop count, same link class at both ends (an all-to-all's intra-host pairs,
// same-leaf pairs, cross-leaf pairs). Each class becomes one weighted solver flow whose
// members all get one rate (maxmin.hpp): the exact max-min rates when the members are
// symmetric, as in a collective over whole hosts of a symmetric fabric; otherwise every
// member of a class runs at the rate of its most constrained one. The class finishes
// together and arrives with its slowest member's latency. Returns false (nothing started)
// when the transfers fall into too many classes to be worth it.
bool FlowNetwork::Impl::start_aggregates(const std::vector<UniqueTransfer>& unique,
                                         const GroupRoutes& group_routes, std::uint32_t slot,
                                         double now_s) {
  constexpr std::size_t kMaxClasses = 16;
  struct Class {
    std::uint64_t bytes;
    std::uint32_t copies;
    std::size_t hops;
    LinkClass first, last;
    std::vector<std::uint32_t> members;
  };
  std::vector<Class> classes;
  for (std::size_t i = 0; i < unique.size(); ++i) {
    const auto links = group_routes.links(i);
    const UniqueTransfer& u = unique[i];
    const LinkClass first = link_class[links.front()], last = link_class[links.back()];
    auto it = std::find_if(classes.begin(), classes.end(), [&](const Class& c) {
      return c.bytes == u.transfer.bytes && c.copies == u.copies && c.hops == links.size() &&
             c.first == first && c.last == last;
    });
    if (it == classes.end()) {
      if (classes.size() == kMaxClasses) return false;
      classes.push_back({u.transfer.bytes, u.copies, links.size(), first, last, {}});
      it = classes.end() - 1;
    }
    it->members.push_back(static_cast<std::uint32_t>(i));
  }
  if (link_weight.size() < link_class.size()) link_weight.assign(link_class.size(), 0);
  groups[slot].pending = classes.size();
  for (const Class& c : classes) {
    agg_links.clear();
    double latency_s = 0;
    for (std::uint32_t i : c.members) {
      latency_s = std::max(latency_s, group_routes.latency_s(i));
      for (LinkId link : group_routes.links(i)) {
        if (link_weight[link] == 0) agg_links.push_back(link);
        link_weight[link] += c.copies;
      }
    }
    agg_weights.clear();
    std::array<std::uint32_t, kNumLinkClasses> hops{};
    std::size_t kept = 0;
    for (LinkId link : agg_links) {
      hops[class_index(link_class[link])] += link_weight[link];
      if (!unsaturable[link]) {
        agg_links[kept++] = link;
        agg_weights.push_back(link_weight[link]);
      }
      link_weight[link] = 0;
    }
    agg_links.resize(kept);
    const FlowId f = solver.add_weighted_flow(agg_links, agg_weights);
    FlowRecord& rec = new_record(f, c.bytes, slot, now_s);
    rec.latency_s = latency_s;
    rec.hops = hops;
    stats.flows_started += static_cast<std::uint64_t>(c.copies) * c.members.size();
  }
  stats.flows_simulated += classes.size();
  return true;
}

// Solves are deferred to one zero-delay event so that every change made at the same
// instant (many groups started together, completions and the groups their callbacks
// start) costs one solve.
void FlowNetwork::Impl::request_solve() {
  if (solve_event != kNoEvent) return;
  solve_event = sim.schedule(0.0, [this] {
    solve_event = kNoEvent;
    solve_now();
  });
}

void FlowNetwork::Impl::solve_now() {
  const double now_s = sim.now();
  std::span<const FlowId> recomputed = solver.solve();
  if (!recomputed.empty()) ++stats.rate_solves;
  stats.flows_rate_solved += recomputed.size();
  // The solver lists flows in freeze order; many of them are walked in id order instead
  // (a bitmap), so that the per-flow records are read sequentially.
  if (recomputed.size() > 4096) {
    due_bits.assign((flows.size() + 63) / 64, 0);
    for (FlowId f : recomputed) due_bits[f / 64] |= std::uint64_t{1} << (f % 64);
    due_scratch.clear();
    for (std::size_t w = 0; w < due_bits.size(); ++w)
      for (std::uint64_t bits = due_bits[w]; bits != 0; bits &= bits - 1)
        due_scratch.push_back(
            static_cast<FlowId>(w * 64 + static_cast<std::size_t>(std::countr_zero(bits))));
    recomputed = due_scratch;
  }
  const std::size_t heap_before = finish_heap.size();
  advance_in_flight(now_s);
  for (FlowId f : recomputed) {
    FlowRecord& rec = flows[f];
    const double rate_Bps = solver.rate_Bps(f);
    if (rate_Bps == rec.rate_Bps) continue;
    if (rec.rate_Bps > 0) {
      const double sent_bytes = rec.rate_Bps * (now_s - rec.last_update_s);
      rec.remaining_bytes = std::max(0.0, rec.remaining_bytes - sent_bytes);
    }
    add_in_flight_rate(rec, rate_Bps - rec.rate_Bps);
    rec.last_update_s = now_s;
    rec.rate_Bps = rate_Bps;
    ++rec.version;
    finish_heap.push_back(Finish{now_s + rec.remaining_bytes / rate_Bps, f, rec.version});
  }
  // Sift the new entries in one by one, or rebuild the heap when they are many (O(n)).
  if (finish_heap.size() > 2 * solver.num_active() + 4096) {
    compact_finish_heap();
  } else if (finish_heap.size() - heap_before > heap_before / 4) {
    dary_make_heap<kHeapArity>(finish_heap, Finish::Earlier{});
  } else {
    for (std::size_t i = heap_before; i < finish_heap.size(); ++i)
      dary_sift_up<kHeapArity>(finish_heap, i, Finish::Earlier{});
  }
  reschedule_completion();
}

void FlowNetwork::Impl::compact_finish_heap() {
  std::erase_if(finish_heap, [this](const Finish& e) { return !is_current(e); });
  dary_make_heap<kHeapArity>(finish_heap, Finish::Earlier{});
}

void FlowNetwork::Impl::reschedule_completion() {
  while (!finish_heap.empty() && !is_current(finish_heap.front()))
    dary_pop_heap<kHeapArity>(finish_heap, Finish::Earlier{});
  if (finish_heap.empty()) {
    sim.cancel(completion_event);
    completion_event = kNoEvent;
    return;
  }
  const double next_s = std::max(finish_heap.front().time_s, sim.now());
  if (completion_event != kNoEvent && completion_time_s == next_s) return;
  sim.cancel(completion_event);
  completion_time_s = next_s;
  completion_event = sim.schedule_at(next_s, [this] {
    completion_event = kNoEvent;
    on_completion();
  });
}

void FlowNetwork::Impl::on_completion() {
  const double now_s = sim.now();
  const double horizon_s = now_s + now_s * kBatchRelativeEpsilon;
  // Pop due entries one by one while that is cheaper than a linear pass; when more are due
  // (an all-to-all ends a million flows at once), take all due entries in one pass over
  // the heap, in flow-id order (a bitmap), so that finishing them walks the per-flow arrays
  // sequentially: k pops cost k log n random accesses, the pass about 2n sequential ones.
  const std::size_t max_pops = std::max<std::size_t>(64, finish_heap.size() / 16);
  std::vector<FlowId>& due = due_scratch;
  due.clear();
  std::size_t popped = 0;
  while (popped < max_pops && !finish_heap.empty() && finish_heap.front().time_s <= horizon_s) {
    const Finish e = finish_heap.front();
    dary_pop_heap<kHeapArity>(finish_heap, Finish::Earlier{});
    ++popped;
    if (is_current(e)) due.push_back(e.flow);
  }
  if (!finish_heap.empty() && finish_heap.front().time_s <= horizon_s) {
    due_bits.assign((flows.size() + 63) / 64, 0);
    std::size_t kept = 0;
    for (const Finish& e : finish_heap) {
      if (e.time_s > horizon_s) {
        finish_heap[kept++] = e;
      } else if (is_current(e)) {
        due_bits[e.flow / 64] |= std::uint64_t{1} << (e.flow % 64);
      }
    }
    finish_heap.resize(kept);
    dary_make_heap<kHeapArity>(finish_heap, Finish::Earlier{});
    for (std::size_t w = 0; w < due_bits.size(); ++w)
      for (std::uint64_t bits = due_bits[w]; bits != 0; bits &= bits - 1)
        due.push_back(
            static_cast<FlowId>(w * 64 + static_cast<std::size_t>(std::countr_zero(bits))));
  }
  advance_in_flight(now_s);
  for (FlowId f : due) finish_flow(f, now_s);
  if (!due.empty()) {
    request_solve();
  } else {
    reschedule_completion();
  }
}

void FlowNetwork::Impl::finish_flow(FlowId f, double now_s) {
  FlowRecord& rec = flows[f];
  // Move the flow's bytes from in flight to finished (whatever rounding left unsent is
  // counted: the flow is done).
  const double left_bytes =
      std::max(0.0, rec.remaining_bytes - rec.rate_Bps * (now_s - rec.last_update_s));
  const double sent_bytes = static_cast<double>(rec.bytes) - left_bytes;
  for (std::size_t c = 0; c < kNumLinkClasses; ++c) {
    const double hop_copies = static_cast<double>(rec.copies) * rec.hops[c];
    in_flight_bytes[c] -= hop_copies * sent_bytes;
    finished_bytes[c] += hop_copies * static_cast<double>(rec.bytes);
  }
  add_in_flight_rate(rec, -rec.rate_Bps);
  ++rec.version;
  rec.remaining_bytes = 0;
  rec.rate_Bps = 0;
  solver.remove_flow(f);
  if (solver.num_active() == 0) {  // nothing in flight: drop accumulated rounding
    in_flight_bytes = {};
    in_flight_rate_Bps = {};
  }
  Group& g = groups[rec.group];
  g.last_arrival_s = std::max(g.last_arrival_s, now_s + rec.latency_s);
  if (--g.pending == 0) complete_group(rec.group);
}

void FlowNetwork::Impl::complete_group(std::uint32_t slot) {
  Group& g = groups[slot];
  // The callback owns what it needs: it may run after this network is gone.
  sim.schedule_at(g.last_arrival_s, [on_done = std::move(g.on_done), done = observer.on_group_done,
                                     id = g.id, &simulator = sim] {
    if (done) done(id, simulator.now());
    if (on_done) on_done();
  });
  g.on_done = nullptr;
  free_groups.push_back(slot);
}

FlowNetwork::FlowNetwork(Simulator& sim, const Topology& topo)
    : impl_(std::make_unique<Impl>(sim, topo)) {}

FlowNetwork::~FlowNetwork() = default;

Simulator& FlowNetwork::simulator() { return impl_->sim; }
int FlowNetwork::num_ranks() const { return impl_->topo.num_gpus(); }
int FlowNetwork::host_of(int rank) const { return impl_->topo.host_of(rank); }

void FlowNetwork::transfer_group(std::span<const Transfer> transfers, Done on_done,
                                 std::uint64_t flow_id) {
  impl_->start_group(transfers, std::move(on_done), flow_id, impl_->aggregate_min_transfers);
}

void FlowNetwork::transfer_background(std::span<const Transfer> transfers) {
  impl_->start_group(transfers, nullptr, 0, impl_->aggregate_min_transfers == 0 ? 0 : 2);
}

std::optional<PathEstimate> FlowNetwork::path_estimate(int src_rank, int dst_rank) const {
  const Topology& topo = impl_->topo;
  if (src_rank == dst_rank) {
    topo.gpu_vertex(src_rank);  // range check
    return PathEstimate{0.0, std::numeric_limits<double>::infinity()};
  }
  const std::uint64_t key = RouteCache::pair_key(src_rank, dst_rank);
  auto& cache = impl_->estimates;
  if (const auto it = cache.find(key); it != cache.end()) return it->second;
  const std::vector<LinkId> path = topo.route(src_rank, dst_rank, 0);  // throws for bad ranks
  double narrowest_Bps = std::numeric_limits<double>::infinity();
  for (LinkId id : path) narrowest_Bps = std::min(narrowest_Bps, topo.link(id).bandwidth_Bps);
  const PathEstimate estimate{topo.path_latency_s(path), narrowest_Bps};
  if (cache.size() >= Impl::kMaxEstimates) cache.clear();
  cache.emplace(key, estimate);
  return estimate;
}

void FlowNetwork::set_aggregate_min_transfers(std::size_t min_transfers) {
  impl_->aggregate_min_transfers = min_transfers;
}

void FlowNetwork::set_observer(FlowObserver observer) { impl_->observer = std::move(observer); }

const Topology& FlowNetwork::topology() const { return impl_->topo; }
const FlowNetworkStats& FlowNetwork::stats() const { return impl_->stats; }

double FlowNetwork::bytes_on_class(LinkClass cls) const {
  const std::size_t i = class_index(cls);
  if (i >= kNumLinkClasses) throw std::out_of_range("FlowNetwork::bytes_on_class: bad class");
  const Impl& m = *impl_;
  return m.finished_bytes[i] + m.in_flight_bytes[i] +
         m.in_flight_rate_Bps[i] * (m.sim.now() - m.in_flight_since_s);
}

}  // namespace overlapsim::sim
