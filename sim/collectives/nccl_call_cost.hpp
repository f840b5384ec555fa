#pragma once
// What one NCCL call costs beyond what the flow network charges. The flows give each
// link's bandwidth share under contention and each hop's wire latency; NCCL adds, by its
// own cost structure (nccl_tables.hpp):
//   latency     the base launch latency of the chosen (algorithm, protocol) and the
//               software part of every step (its hardware latency less the wire hop the
//               flows pay); for all-to-all and send/recv a launch, a proxy post per
//               network peer, and a per-step latency per round of peers;
//   efficiency  the protocol's payload share and the algorithm's bandwidth refinements
//               (LL 1/2, LL128 0.92, tree 0.92 and its size correction), times the
//               fraction of the line rate the proxy/NIC path reaches across hosts: the
//               network time is stretched by 1 / efficiency;
//   fill        NVLSTree's chunked pipeline, which NCCL's selection model leaves out: a
//               further stretch of (rounds + stages - 1) / rounds (nvls_tree_pipeline_stretch);
//   routing     all-to-all across hosts through PXN: a rank hands data for a remote peer
//               to the local GPU on that peer's rail, whose NIC sends it (rail-aligned).
// The choice of algorithm and protocol is NCCL's (nccl_costs, NVLSTree included on hosts with
// NVLink SHARP, run as the tree's flows at the NIC path's rate), so the layer runs what NCCL
// would run.
#include <string>

#include "sim/collectives/collective.hpp"
#include "sim/collectives/nccl_cost.hpp"

namespace overlapsim::sim::detail {

struct NcclCallCost {
  Algorithm algo = Algorithm::Ring;  // what runs on the flow network
  Protocol protocol = Protocol::Simple;
  double latency_s = 0;       // waited before the flows start
  double efficiency = 1;      // network time beyond the wire latency x 1 / efficiency
  double pipeline_stretch = 1;  // and x this: the fill of NCCL's chunked pipeline
  double wire_latency_s = 0;  // the part of the network time that is hop latency
  bool pxn = false;           // all-to-all through the peer's rail
  bool nvls_tree = false;     // NCCL's NVLSTree, run as the tree's flows
  int nodes = 1;
};

// The cost of `req` (its algorithm Auto or one it supports) on `net`. Cheap: O(ranks) to
// group the communicator by host plus a constant number of path estimates.
NcclCallCost nccl_call_cost(const CollectiveRequest& req, const NetworkApi& net);

// "ring/Simple, 25.3 us + network / 0.97" for reports.
std::string describe(const NcclCallCost& cost);

}  // namespace overlapsim::sim::detail
