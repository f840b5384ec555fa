#pragma once
// How many transfers the largest group of a collective holds, worked out from the
// communicator's shape without building the plan: what drives the collective's memory
// (each transfer is a flow record, a route and solver entries while it is in flight).
#include <cstdint>

#include "sim/collectives/collective.hpp"

namespace overlapsim::sim {

// `req.algo` Auto counts as the algorithm resolve_algorithm() would most likely pick for
// the op (direct for all-to-all and send/recv, ring otherwise); the count is exact for
// direct and an upper bound (one ring per member of a host) for the others.
std::uint64_t peak_group_transfers(const NetworkApi& net, const CollectiveRequest& req,
                                   const CollectiveTuning& tuning);

}  // namespace overlapsim::sim
