#pragma once
// Links that can never be the bottleneck of a max-min allocation, whatever the traffic,
// because every byte on them reaches them through (or leaves them through) other links of no
// more total capacity. The flow network leaves them out of the solver: a non-blocking fat
// tree's uplinks and spine, the PCIe hop that feeds one NIC. An all-to-all path of seven
// links then costs the solver two (the NIC links), and a collective's background images,
// which cross hundreds of links, a third of them.
//
// Why dropping them is exact. Traffic starts and ends only at GPUs, and routes are shortest
// paths, so they never revisit a vertex. For a link u -> v leaving a vertex u that is not a
// GPU, every flow on it entered u over some other link x -> u, x != v; so its load is at most
// the summed load of those links, at most their summed capacity (inflow bound). Likewise for
// a link u -> v entering a non-GPU vertex v, every flow on it leaves v over some v -> y,
// y != u (outflow bound). If that sum is <= the link's capacity, the link's constraint is
// implied by the others: the max-min allocation without it satisfies it, and since max-min
// fairness is a lexicographic optimum over the feasible set, that allocation is also the
// max-min allocation with it (rates agree up to rounding).
//
// The implication holds only through links that are themselves kept: two links dropped on
// each other's account (a chain a -> b -> c of equal capacities) would leave the flow
// unconstrained. So links are considered widest first, and a link is dropped only if every
// link its bound uses is kept; those are then pinned as kept.
#include <vector>

#include "sim/topology/topology.hpp"

namespace overlapsim::sim {

// One flag per link id: true where the link can be left out of max-min sharing.
std::vector<bool> unsaturable_links(const Topology& topology);

}  // namespace overlapsim::sim
