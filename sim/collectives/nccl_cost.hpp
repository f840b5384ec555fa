#pragma once
// NCCL's algorithm-selection cost model (src/graph/tuning.cc): time = latency +
// bytes / bandwidth per (algorithm, protocol), with the latency built from a base
// launch cost plus a per-step hardware latency (NVLink, PCI or network) times the
// number of steps. `auto` picks the cheapest algorithm by this model, as NCCL does;
// the simulation then runs that algorithm's flows. The same table gives the costs the
// flow network does not charge by itself (nccl_call_cost.hpp): the software part of each
// step's latency and the bandwidth efficiency of the protocol.
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
  // Zero-load latency of one intra-node and one inter-node hop on the simulated network:
  // the wire part of NCCL's per-step latency, which the flows already pay.
  double intra_wire_s = 0;
  double inter_wire_s = 0;
  // NVLink SHARP inside the hosts (an NVLink-4-class intra-node rate, kNvlink4PerGpu_Bps).
  bool nvls = false;
};

CommShape comm_shape(const CollectiveRequest& req, const NetworkApi& net);

struct CostEstimate {
  Algorithm algo;
  Protocol protocol;
  double latency_s;  // NCCL's latency: base + per-step hardware latency x steps
  double algbw_Bps;
  double time_s;
  // The latency beyond the wire: each step's hardware latency less the hop latency the
  // network charges (never below 0), plus the base; what a flow simulation must add.
  double software_latency_s = 0;
  // The wire part of the latency: hop latencies x steps, which the flows pay themselves.
  double wire_latency_s = 0;
  // NCCL's bus bandwidth for this (algorithm, protocol, size) over the raw bus bandwidth:
  // protocol payload share (LL 1/2 capped by llMaxBw, LL128 0.92), the tree's 0.92 and its
  // size correction. A flow simulation stretches its network time by 1 / efficiency.
  double efficiency = 1;
  // NVLSTree: NVLink SHARP inside the hosts, a tree across them; a flow simulation runs the
  // tree's flows for it.
  bool nvls_tree = false;
  // What NCCL's model leaves out and the run pays: the fill of its chunked pipeline,
  // (rounds + stages - 1) / rounds, a further stretch of the network time (1: none modelled).
  double pipeline_stretch = 1;
};

// NVLSTree's pipeline fill for an all-reduce of `bytes` per rank over `nodes` hosts of
// `heads` NVLS head ranks each (one per NIC-attached GPU): NCCL moves the message in rounds of
// kNvlsChannelsHopper x heads chunks (chunk size as src/enqueue.cc picks it), and a chunk
// passes 2 + log2(nodes) stages: the NVLS reduce-scatter inside its host, one per level of
// the tree across hosts, and the NVLS all-gather. A pipeline of S stages takes
// (rounds + S - 1) rounds instead of `rounds`.
double nvls_tree_pipeline_stretch(std::uint64_t bytes, int nodes, int heads);

// Every (algorithm, protocol) NCCL would consider for this op, fastest first. `with_nvls`
// adds NVLSTree for all-reduce across hosts with NVLink SHARP (shape.nvls); `auto` leaves it
// out (it has no plan of its own), the cost model's cluster path includes it.
std::vector<CostEstimate> nccl_costs(CollectiveOp op, std::uint64_t bytes, const CommShape& shape,
                                     bool with_nvls = false);

}  // namespace overlapsim::sim::detail
