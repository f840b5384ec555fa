#pragma once
// Max-min fair sharing of resources (links) among flows, by progressive filling: all
// unfrozen flows rise together; the first resource to saturate freezes the flows crossing
// it at that level; repeat with what is left (Bertsekas & Gallager, Data Networks, 6.5.2;
// SimGrid's lmm solver plays the same role). The solver knows nothing about topologies:
// a resource is an index with a capacity, a flow is a list of resource indices.
//
// A flow has a multiplicity k: it stands for k identical flows on the same resources, each
// of which gets rate(id), so together they load every resource on the path with k * rate.
// A flow may also be an aggregate of members on different paths (add_weighted_flow): every
// member gets rate(id), and resource r carries weight(r) of them, so the flow loads r with
// weight(r) * rate. That is the max-min allocation of the members exactly when they would
// all get the same rate anyway (symmetric members: an all-to-all's inter-host pairs on a
// non-blocking fabric); otherwise every member gets the rate of the most constrained one.
// A flow with no resources is unconstrained: its rate is +infinity (callers decide what
// that means; FlowNetwork never creates one).
//
// Incremental: solve() re-solves only the flows whose rate can have changed, those at or
// above a level L below which the filling is provably the same as in the last solve:
//  - removals: L <= the smallest removed rate x. A removed flow's resources all saturated
//    at >= x (else it would have been frozen lower); without it they carry less, so below
//    x no saturation moves and every flow frozen below x keeps its rate.
//  - additions: L <= min over the new flows' resources of capacity / (multiplicity of all
//    flows on it): below that level such a resource cannot be full even in the new state,
//    so again no saturation below L moves (and new flows get at least L).
// Flows frozen below L keep their rates and their load; the rest are filled from L up.
// For an all-to-all, where the fastest flows finish first, each completion re-solves only
// the few flows still rising above it; a small intra-node group added next to a big
// inter-node exchange re-solves only the flows faster than its NVLink share.
//
// Components: flows at or above L that share no resource with a changed flow, directly or
// through other flows at or above L, keep their rates too: the flows below L are frozen with
// fixed loads, so the filling of one such component never reads another's resources. Where
// many flows are above L (a pipeline's sends on disjoint NICs, each with its images), the
// solve walks out from the changed flows' resources over the flows at or above L and
// re-solves only what it reaches; it falls back to every flow above L when the walk grows
// past that batch's size. The walk needs each resource's flows, an index kept only while the
// active flows cross at most kIndexMaxIncidences resources in all (a ring's all-to-all
// crosses tens of millions): past that it is dropped, and built again from the next time
// no flow is active.
//
// Deterministic: resources saturating at the same level are taken in id order, and every
// loop runs in an order fixed by the calls made, so equal inputs give bit-equal rates.
#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace overlapsim::sim {

class MaxMinSolver {
 public:
  using ResourceId = std::uint32_t;
  using FlowId = std::uint32_t;

  // Capacity in units per second (bytes/s in FlowNetwork). Throws std::invalid_argument
  // unless it is finite and > 0.
  ResourceId add_resource(double capacity_Bps);
  std::size_t num_resources() const { return capacity_Bps_.size(); }
  double capacity_Bps(ResourceId r) const { return capacity_Bps_.at(r); }

  // Adds a flow standing for `multiplicity` (>= 1) identical flows over `resources` (each
  // must exist; throws std::invalid_argument otherwise). Ids of removed flows are reused
  // after the next solve.
  FlowId add_flow(std::span<const ResourceId> resources, std::uint32_t multiplicity = 1);
  // Adds an aggregate: weights[i] (>= 1) of its members cross resources[i] (spans of equal
  // length; each resource at most once). multiplicity() is then the largest weight.
  FlowId add_weighted_flow(std::span<const ResourceId> resources,
                           std::span<const std::uint32_t> weights);
  // Makes room for `flows` more flows crossing `incidences` resources in all, so that a
  // million-flow batch does not grow the arrays by doubling (and touch their pages twice).
  void reserve(std::size_t flows, std::size_t incidences);
  // Removes an active flow (throws std::invalid_argument for an unknown or removed id).
  void remove_flow(FlowId id);

  bool is_active(FlowId id) const {
    return id < flows_.size() && flows_[id].state != FlowState::Free;
  }
  std::size_t num_active() const { return num_active_; }
  std::span<const ResourceId> resources_of(FlowId id) const;
  std::uint32_t multiplicity(FlowId id) const { return flows_.at(id).multiplicity; }
  // Members of an active flow crossing each of resources_of(id), in the same order.
  std::span<const std::uint32_t> weights_of(FlowId id) const;

  // Recomputes rates after additions/removals and returns the flows whose rate was
  // recomputed (a superset of those whose rate changed), valid until the next call that
  // changes the solver. Returns an empty span when nothing changed since the last solve.
  std::span<const FlowId> solve();
  // Per-member rate of an active flow as of the last solve (0 before its first solve).
  double rate_Bps(FlowId id) const { return flows_.at(id).rate_Bps; }
  // Sum over active solved flows of multiplicity * rate on resource r.
  double load_Bps(ResourceId r) const { return load_Bps_.at(r); }

  std::uint64_t full_solves() const { return full_solves_; }
  std::uint64_t partial_solves() const { return partial_solves_; }
  // Solves that re-solved only the changed flows' components (counted in partial_solves).
  std::uint64_t component_solves() const { return component_solves_; }
  // Flows whose rate the solver computed, over all solves (the work it did).
  std::uint64_t flows_solved() const { return flows_solved_; }

 private:
  enum class FlowState : std::uint8_t { Free, Added, Solved };

  // Progressive filling over `batch_` starting at `start_level_Bps`; resources' remaining
  // capacity is their capacity minus the load of the flows outside the batch (none when
  // `from_zero_load`: the batch is every active flow).
  void fill(double start_level_Bps, bool from_zero_load);
  // fill() for a batch of at most kSmallFlows flows touching at most kSmallResources
  // resources, in local arrays; false (nothing changed) when the batch is larger.
  static constexpr std::size_t kSmallFlows = 16;
  static constexpr std::size_t kSmallResources = 32;
  bool fill_small(double start_level_Bps, bool from_zero_load);
  // The component solve (see the header): fills batch_ with the flows at or above
  // `level_Bps` reachable from the changed flows, plus the added ones. False (batch_ left
  // empty) when the walk scans more than `work_limit` incidences. `whole` tells whether every
  // flow on the resources reached is in the batch (none below the level).
  bool collect_component(double level_Bps, std::size_t work_limit, bool& whole);
  // Replaces the batch's flows in order_ by their new rates, keeping order_ sorted by rate.
  void merge_into_order();
  // Adds (sign +1) or takes away (-1) a solved flow's load on its resources; nothing for an
  // unconstrained flow.
  void shift_loads(FlowId f, double sign);
  // After fill(): the batch's new loads, the counters, the change lists; returns batch_.
  std::span<const FlowId> finish_solve();
  static constexpr std::size_t kIndexMaxIncidences = std::size_t{1} << 20;
  void link_incidences(FlowId id);
  void unlink_incidences(FlowId id);
  void compact_paths();
  bool sort_initial_levels();
  // resources_of without the checks, for the inner loops.
  std::span<const ResourceId> path(FlowId id) const {
    return {path_pool_.data() + flows_[id].path_begin, flows_[id].path_len};
  }
  // Members crossing each resource of path(id), in the same order.
  std::span<const std::uint32_t> weights(FlowId id) const {
    return {weight_pool_.data() + flows_[id].path_begin, flows_[id].path_len};
  }
  FlowId new_flow_slot(std::span<const ResourceId> resources);

  // Resources.
  std::vector<double> capacity_Bps_;
  std::vector<double> load_Bps_;
  std::vector<std::uint64_t> active_weight_;  // sum of multiplicities of active flows
  // Per-resource scratch for fill(), kept allocated between solves.
  std::vector<double> remaining_Bps_;
  std::vector<std::uint64_t> unfrozen_;  // sum of multiplicities of unfrozen batch flows
  std::vector<std::uint32_t> csr_begin_;
  std::vector<std::uint32_t> csr_fill_;
  std::vector<std::uint8_t> touched_;
  std::vector<ResourceId> touched_list_;
  std::vector<FlowId> csr_flows_;
  std::vector<std::pair<double, ResourceId>> initial_;  // sorted (level, resource)
  std::vector<std::pair<double, ResourceId>> heap_;     // min-heap of re-queued ones
  std::vector<std::uint64_t> resource_bits_;            // scratch bitmap, all zero between uses
  std::vector<std::uint8_t> level_bucket_;  // sort_initial_levels' scratch: bucket of each resource
  std::vector<std::uint8_t> in_heap_;  // resource has an entry in heap_ (all zero between uses)

  // Flows (indexed by FlowId). Paths live in one pool; removed paths are garbage until the
  // pool is compacted.
  // One 32-byte record per flow: the filling loop touches all of it for each frozen flow,
  // so one cache line instead of one per field.
  struct FlowSlot {
    std::size_t path_begin = 0;  // into path_pool_
    std::uint32_t path_len = 0;
    std::uint32_t multiplicity = 0;
    double rate_Bps = 0;
    FlowState state = FlowState::Free;
    bool frozen = false;
    std::uint32_t stamp = 0;  // collect_component's visit mark
  };
  std::vector<FlowSlot> flows_;
  std::vector<ResourceId> path_pool_;
  std::vector<std::uint32_t> weight_pool_;  // parallel to path_pool_
  // While indexed_: per resource, its active flows (with which of the flow's resources it
  // is); incidence_pos_ (parallel to path_pool_) is where each incidence sits in that list,
  // so that a removal is a swap with the last.
  struct Incidence {
    FlowId flow;
    std::uint32_t k;  // index into path(flow)
  };
  std::vector<std::vector<Incidence>> res_flows_;
  std::vector<std::uint32_t> incidence_pos_;
  bool indexed_ = true;
  std::size_t indexed_incidences_ = 0;
  void drop_index();
  std::vector<ResourceId> dirty_resources_;  // of flows removed since the last solve
  std::vector<std::uint32_t> res_stamp_;
  std::uint32_t stamp_ = 0;
  void next_stamp();              // a fresh visit mark in stamp_
  std::vector<ResourceId> walk_;  // collect_component's queue
  std::vector<FlowId> order_scratch_;
  std::size_t path_garbage_ = 0;
  std::vector<FlowId> free_ids_;      // reusable now
  std::vector<FlowId> released_ids_;  // removed since the last solve: reusable after it
  std::size_t num_active_ = 0;

  // Active flows in nondecreasing rate order as of the last solve (the freeze order).
  std::vector<FlowId> order_;
  std::vector<FlowId> batch_;  // flows being (re)solved; returned by solve()
  std::vector<FlowId> frozen_order_;
  std::vector<FlowId> added_;  // flows added since the last solve
  bool removed_since_solve_ = false;
  double removed_min_rate_Bps_ = 0;

  std::uint64_t full_solves_ = 0;
  std::uint64_t partial_solves_ = 0;
  std::uint64_t component_solves_ = 0;
  std::uint64_t flows_solved_ = 0;
};

}  // namespace overlapsim::sim
