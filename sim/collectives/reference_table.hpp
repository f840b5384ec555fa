#pragma once
// A published nccl-tests table (workloads/reference/collectives/README.md): the op, the
// machine (a cluster file and how many of its nodes and GPUs per node ran), where it was
// published, and its (size, time) points as printed. load_reference_table() checks every
// key (one-line config::ConfigError naming file:line:col, key and the expected form).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config/config_node.hpp"
#include "sim/collectives/collective.hpp"

namespace overlapsim::sim {

struct ReferencePoint {
  std::uint64_t bytes = 0;          // nccl-tests "size"
  double time_s = 0;                // nccl-tests "time" of the table's column
  std::optional<double> busbw_Bps;  // as printed, for reading the table; not compared
};

struct ReferenceSource {
  std::string title;
  std::string url;
  std::string date;    // of the publication or post, YYYY-MM-DD
  std::string system;  // GPUs, NICs and their rate, NCCL version, as the source states them
};

struct ReferenceTable {
  std::string name;
  std::string file;  // the YAML it was loaded from
  CollectiveOp op = CollectiveOp::AllReduce;
  std::string cluster_file;  // resolved against the table's folder
  int nodes = 1;
  int ranks_per_node = 1;
  std::string column;  // "out-of-place" or "in-place"
  ReferenceSource source;
  std::vector<ReferencePoint> points;  // sorted by bytes

  int ranks() const { return nodes * ranks_per_node; }
};

// The documented keys, for check_keys() and the README.
const std::vector<config::ParamDoc>& reference_table_params();
const std::vector<config::ParamDoc>& reference_source_params();
const std::vector<config::ParamDoc>& reference_point_params();

ReferenceTable load_reference_table(const std::string& path);
ReferenceTable parse_reference_table(const config::ConfigNode& root);
// Every *.yaml directly in `dir` (not its subfolders, where the cluster files live), in
// name order; a ConfigError when the folder cannot be read or holds no table.
std::vector<ReferenceTable> load_reference_tables(const std::string& dir);

}  // namespace overlapsim::sim
