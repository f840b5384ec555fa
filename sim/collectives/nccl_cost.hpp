#pragma once
// NCCL's algorithm-selection cost model (src/graph/tuning.cc): time = latency +
// bytes / bandwidth per (algorithm, protocol), with the latency built from a base
// launch cost plus a per-step hardware latency (NVLink, PCI or network) times the
// number of steps. `auto` picks the cheapest algorithm by this model, as NCCL does;
// the simulation then runs that algorithm's flows.
#include <vector>

#include "sim/collectives/collective.hpp"

namespace overlapsim::sim::detail {

// Protocols as in NCCL: LL (8-byte flag+data stores), LL128, Simple.
enum class Protocol { LL, LL128, Simple };
const char* to_string(Protocol p);

// What NCCL's model needs to know about the communicator.
struct CommShape {
  int ranks = 0;
  int nodes = 0;                 // distinct hosts
  bool intra_nvlink = true;      // intra-node hardware class (NVLink vs PCI)
  double bus_bandwidth_Bps = 0;  // per-rank bus bandwidth the algorithms can reach
};

CommShape comm_shape(const CollectiveRequest& req, const NetworkApi& net);

struct CostEstimate {
  Algorithm algo;
  Protocol protocol;
  double latency_s;
  double algbw_Bps;
  double time_s;
};

// Every (algorithm, protocol) NCCL would consider for this op, fastest first.
std::vector<CostEstimate> nccl_costs(CollectiveOp op, std::uint64_t bytes, const CommShape& shape);

}  // namespace overlapsim::sim::detail
