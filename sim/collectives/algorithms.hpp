#pragma once
// Plan builders, one file per algorithm. Each takes a validated request whose
// algorithm is resolved and supported for its op (see supports()).
#include <cstdint>
#include <span>

#include "sim/collectives/collective.hpp"
#include "sim/collectives/plan.hpp"

namespace overlapsim::sim::detail {

// What start_collective runs: the request validated, its algorithm resolved, its plan built.
// A function of the request, the tuning and the network's fixed layout (hosts, routes'
// latencies and widths), never of the traffic in flight. Throws as start_collective does.
Plan collective_plan(const NetworkApi& net, const CollectiveRequest& req,
                     const CollectiveTuning& tuning);

// ring.cpp: NCCL's ring (allreduce, allgather, reducescatter) and its pipelined chain
// (broadcast).
Plan ring_plan(const NetworkApi& net, const CollectiveRequest& req, const CollectiveTuning& tuning);
// One ring phase in which each of `steps` steps moves `share_bytes` from every member to
// its successor. Empty transfers when there is nothing to move.
Phase ring_phase(const NetworkApi& net, std::span<const int> members, int steps,
                 std::uint64_t share_bytes, const CollectiveTuning& tuning);
// A pipelined chain from members[root_index] through the ring order, `bytes` per hop.
Phase chain_phase(const NetworkApi& net, std::span<const int> members, int root_index,
                  std::uint64_t bytes, const CollectiveTuning& tuning);

// tree.cpp: NCCL's double binary tree (allreduce).
Plan tree_plan(const NetworkApi& net, const CollectiveRequest& req, const CollectiveTuning& tuning);

// direct.cpp: every pair at once.
Plan direct_plan(const NetworkApi& net, const CollectiveRequest& req,
                 const CollectiveTuning& tuning);
// Every member sends `bytes` to every other member, one group, one transfer per pair.
Phase all_pairs_phase(std::span<const int> members, std::uint64_t bytes,
                      const CollectiveTuning& tuning);
// The same, built per class of equivalent host pairs (copies) when the members are more
// than tuning.aggregate_min_pairs pairs on a host-symmetric layout (direct.cpp).
Phase all_pairs_phase(const NetworkApi& net, std::span<const int> members, std::uint64_t bytes,
                      const CollectiveTuning& tuning);
// All-to-all of `bytes` per pair: all pairs, or through PXN when tuning.pxn.
Phase all_to_all_phase(const NetworkApi& net, std::span<const int> members, std::uint64_t bytes,
                       const CollectiveTuning& tuning);

// hierarchical.cpp: intra-node phase, inter-node phase among same-local-rank GPUs (one
// per rail), intra-node phase.
Plan hierarchical_plan(const NetworkApi& net, const CollectiveRequest& req,
                       const CollectiveTuning& tuning);

}  // namespace overlapsim::sim::detail
