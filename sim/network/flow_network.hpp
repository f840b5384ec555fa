#pragma once
// Flow-level network: flows share link capacity max-min fairly (MaxMinSolver), shares
// are recomputed only when the set of active flows changes, and each flow pays its
// path latency once (the first byte's trip) on top of its transfer time.
#include <cstdint>
#include <memory>

#include "sim/network/network_api.hpp"
#include "sim/topology/topology.hpp"

namespace overlapsim::sim {

struct FlowNetworkStats {
  std::uint64_t flows_started = 0;     // flows as given by callers
  std::uint64_t flows_simulated = 0;   // after aggregating identical flows
  std::uint64_t rate_solves = 0;       // max-min recomputations
  std::uint64_t peak_active_flows = 0; // simulated flows active at once
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
  void transfer_group(std::span<const Transfer> transfers, Done on_done,
                      std::uint64_t flow_id = 0) override;

  const Topology& topology() const;
  const FlowNetworkStats& stats() const;
  // Bytes carried so far per link class, for utilisation reports.
  double bytes_on_class(LinkClass cls) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace overlapsim::sim
