#pragma once
// The memory budget of a run: its peak resident memory estimated before it starts from the
// counts that drive it (topology vertices and links, step-graph operations, transfers that
// can be in flight at once), and the limit it must stay under. The per-item costs are
// measured (run_budget.cpp says how); the estimate is meant to be within a factor of about
// two, enough to refuse at once a run that would exhaust the machine minutes later.
#include <cstdint>
#include <optional>
#include <string>

#include "sim/collectives/collective.hpp"
#include "sim/graph/op_graph.hpp"
#include "sim/topology/topology.hpp"

namespace overlapsim::sim {

struct RunSize {
  std::uint64_t topology_vertices = 0;
  std::uint64_t topology_links = 0;       // directed links
  std::uint64_t ops = 0;                  // operations of the simulated ranks' step graphs
  std::uint64_t transfers_in_flight = 0;  // transfers of every group that may run at once
  // Links of those transfers' routes, summed (each flow keeps its route and a solver entry
  // per link); 0: unknown, taken as kRouteLinksMeasured each.
  std::uint64_t route_links_in_flight = 0;
};

struct RunMemoryEstimate {
  std::uint64_t base_bytes = 0;
  std::uint64_t topology_bytes = 0;
  std::uint64_t graph_bytes = 0;
  std::uint64_t flow_bytes = 0;
  std::uint64_t transfers = 0;
  std::uint64_t total_bytes() const;  // saturates at the largest uint64
  // "about 3.2 GiB: flows 3.1 GiB (268,419,072 transfers in flight), topology 0.1 GiB, ..."
  std::string explain() const;
};

RunMemoryEstimate estimate_run_memory(const RunSize& size);

// The counts of one collective on `topo` (req.algo resolved or Auto).
RunSize collective_run_size(const Topology& topo, const CollectiveRequest& req,
                            const CollectiveTuning& tuning);
// The counts of a step: every communicator a collective uses may be in flight at once (the
// executor launches folded ranks' collectives as background images), all-to-alls through
// PXN across hosts as NCCL runs them.
RunSize step_run_size(const StepGraph& step, const Topology& topo);

// Physical memory of this machine (0 when it cannot be read).
std::uint64_t physical_memory_bytes();
// What this process can have: physical memory, or less where its address-space or data
// resource limit (ulimit -v, -d) or its cgroup's memory.max (a container) is lower; 0 when
// none of them can be read.
std::uint64_t available_memory_bytes();
// The limit when none is given: 80% of available memory, leaving room for the OS and page
// cache; unlimited when it is unknown.
std::uint64_t default_memory_limit_bytes();
// The most step-graph operations `limit_bytes` holds at the measured cost per operation:
// generators stop there rather than exhaust memory before the budget is checked.
std::uint64_t max_ops_within(std::uint64_t limit_bytes);

// nullopt when the estimate fits in `limit_bytes`; otherwise one line saying what the run
// needs and why (no file or flag named: the caller adds those).
std::optional<std::string> over_memory_budget(const RunMemoryEstimate& estimate,
                                              std::uint64_t limit_bytes);

}  // namespace overlapsim::sim
