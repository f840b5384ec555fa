#pragma once
// Flow-level network: flows share link capacity max-min fairly (MaxMinSolver), shares
// are recomputed only when the set of active flows changes, and each flow pays its
// path latency once (the first byte's trip) on top of its transfer time.
//
// Timing model of one flow: it occupies bandwidth from its start until its bytes have
// left at the (changing) max-min rate; its last byte arrives path_latency_s later. One
// flow alone therefore takes path_latency + bytes / bottleneck bandwidth (alpha + S/B).
// Flows finishing within a relative 1e-9 of each other finish together (one re-solve);
// a group's on_done runs at its latest arrival. The topology must not change while a
// FlowNetwork uses it; the FlowNetwork must outlive the simulator run that drives it and
// be destroyed before the Simulator (it cancels its pending events).
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>

#include "sim/network/network_api.hpp"
#include "sim/topology/topology.hpp"

namespace overlapsim::sim {

struct FlowNetworkStats {
  std::uint64_t flows_started = 0;      // transfers given by callers (src != dst, bytes > 0)
  std::uint64_t flows_simulated = 0;    // after aggregating identical flows
  std::uint64_t rate_solves = 0;        // max-min recomputations
  std::uint64_t peak_active_flows = 0;  // simulated flows active at once
  std::uint64_t flows_rate_solved = 0;  // flow rates computed over all solves (solver work)
  std::uint64_t routes_computed = 0;    // Topology::route calls (the rest came from a cache)
};

// Observer for traces: called when a group starts and when it completes.
struct FlowObserver {
  std::function<void(std::uint64_t group, double t_s)> on_group_start;
  std::function<void(std::uint64_t group, double t_s)> on_group_done;
};

class FlowNetwork final : public NetworkApi {
 public:
  FlowNetwork(Simulator& sim, const Topology& topo);
  ~FlowNetwork() override;

  Simulator& simulator() override;
  int num_ranks() const override;
  int host_of(int rank) const override;
  // Throws std::out_of_range for a rank outside the topology (nothing is started then).
  void transfer_group(std::span<const Transfer> transfers, Done on_done,
                      std::uint64_t flow_id = 0) override;
  // One group, aggregated by class from two transfers on (none when aggregation is off).
  void transfer_background(std::span<const Transfer> transfers) override;
  // Zero-load latency and narrowest link of route(src, dst, 0); {0, +inf} for src == dst.
  std::optional<PathEstimate> path_estimate(int src_rank, int dst_rank) const override;

  // Groups of at least this many distinct transfers (0: none) are simulated as a few
  // weighted aggregates, one per class of same-shaped transfers (same bytes, hop count and
  // end link classes), each of whose members gets one rate (flow_network.cpp says when that
  // is exact). An all-to-all over 64 GPUs on 8 hosts is then 3 solver flows instead of
  // 4,032. Default kDefaultAggregateMinTransfers; set before starting groups.
  static constexpr std::size_t kDefaultAggregateMinTransfers = 1024;
  void set_aggregate_min_transfers(std::size_t min_transfers);

  void set_observer(FlowObserver observer);

  const Topology& topology() const;
  const FlowNetworkStats& stats() const;
  // Bytes carried so far per link class, for utilisation reports and trace counters: a flow
  // of S bytes over two NVLink hops adds 2S to NvLink (byte-hops, so that bytes /
  // (capacity * time) over a class's links is its utilisation). Flows in flight count what
  // they have sent by now(), so the value grows continuously; O(1) to read.
  double bytes_on_class(LinkClass cls) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace overlapsim::sim
