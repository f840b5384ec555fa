#pragma once
// Published nccl-tests tables against the simulator: each point is one collective, timed
// by the cost model a simulation uses (sim::CollectiveCostModel, no profile curves, alone
// as nccl-tests times it), on the table's machine; error = (predicted - published) /
// published, and the median |error| per table and over every point in the size range.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "sim/collectives/reference_table.hpp"
#include "sim/topology/topology.hpp"

namespace overlapsim::sim {

struct ReferencePointResult {
  std::uint64_t bytes = 0;
  double published_s = 0;
  double predicted_s = 0;
  double rel_err = 0;     // (predicted - published) / published
  bool in_range = false;  // within [min_bytes, max_bytes], counted in the medians
  std::string how;        // NCCL's algorithm/protocol and costs the model charged
};

struct ReferenceTableResult {
  ReferenceTable table;
  std::vector<ReferencePointResult> points;
  int in_range = 0;
  double median_abs_err = 0;  // over the points in range
};

struct ReferenceValidation {
  std::uint64_t min_bytes = 0;
  std::uint64_t max_bytes = 0;
  std::vector<ReferenceTableResult> tables;
  int in_range = 0;
  double median_abs_err = 0;  // over every table's points in range, pooled
};

// Builds the table's machine: its cluster file with `nodes` hosts.
using ClusterTopologyLoader = std::function<Topology(const std::string& cluster_file, int nodes)>;

inline constexpr std::uint64_t kReferenceMinBytes = 64ull << 10;  // 64 KiB
inline constexpr std::uint64_t kReferenceMaxBytes = 4ull << 30;   // 4 GiB

// Throws config::ConfigError when a table does not fit its machine (more nodes or ranks per
// node than the cluster has).
// `nccl_costs` false times the bare flows (CollectiveTimingOptions::nccl_costs), the network
// without NCCL's costs, for comparison.
ReferenceValidation validate_references(const std::vector<ReferenceTable>& tables,
                                        const ClusterTopologyLoader& load,
                                        std::uint64_t min_bytes = kReferenceMinBytes,
                                        std::uint64_t max_bytes = kReferenceMaxBytes,
                                        bool nccl_costs = true);

// The median of |values| (0 for none).
double median_abs(std::vector<double> values);

}  // namespace overlapsim::sim
