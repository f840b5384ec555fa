#pragma once
// Cluster YAML (schema: docs/cluster-format.md): how many nodes of which GPUs, wired how,
// at what price. load_cluster() checks a file against the ParamDoc tables below (unknown
// keys, missing keys, units, ranges: one-line config::ConfigError naming file:line:col and
// key); build_topology() turns the spec into a sim::Topology through sim/topology/builders.
// Every physical number must carry a source: a section-level `source:` string, or the
// value written as {value: ..., source: ...}.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config/config_node.hpp"
#include "sim/topology/topology.hpp"

namespace overlapsim::workloads {

template <class T>
struct Cited {
  T value{};
  std::string source;  // datasheet, paper or measurement the value comes from
};

struct GpuSpec {
  std::string name;          // e.g. "NVIDIA H200 SXM"; empty when not given
  std::string profile_path;  // resolved, readable path of a calibration profile; empty: none
  std::optional<Cited<double>> peak_bf16_flops;       // FLOP/s, dense
  std::optional<Cited<double>> peak_fp8_flops;        // FLOP/s, dense
  std::optional<Cited<double>> memory_bandwidth_Bps;  // bytes/s
  std::optional<Cited<std::uint64_t>> memory_bytes;
  std::optional<Cited<double>> power_W;  // board power at full load (energy estimates)
};

enum class IntraNodeKind { NvSwitch, Pcie, None };
enum class InterNodeKind { RailFatTree, Switch, Ring, None };

const char* to_string(IntraNodeKind kind);
const char* to_string(InterNodeKind kind);

struct IntraNodeSpec {
  IntraNodeKind kind = IntraNodeKind::None;
  double gpu_bandwidth_Bps = 0;            // nvswitch: NVLink per GPU; pcie: GPU <-> PCIe switch
  double latency_s = 0;                    // per hop
  int gpus_per_switch = 0;                 // pcie only
  double switch_uplink_bandwidth_Bps = 0;  // pcie only: PCIe switch <-> host bridge
  std::string source;
};

struct InterNodeSpec {
  InterNodeKind kind = InterNodeKind::None;
  int nics_per_node = 0;             // rail-fat-tree
  double nic_bandwidth_Bps = 0;      // per NIC (switch/ring: per GPU link), per direction
  double gpu_nic_bandwidth_Bps = 0;  // rail-fat-tree: GPU <-> NIC PCIe link
  double gpu_nic_latency_s = 0;      // rail-fat-tree: GPU <-> NIC hop
  double link_latency_s = 0;         // per network hop
  int leaf_radix = 0;                // rail-fat-tree: NICs per leaf switch
  int spines = 0;                    // rail-fat-tree
  double oversubscription = 1;       // rail-fat-tree: >= 1
  std::string source;
};

struct ClusterSpec {
  std::string name;
  std::string file;  // the file it was loaded from (for messages)
  int nodes = 1;
  int gpus_per_node = 1;
  std::optional<GpuSpec> gpu;
  IntraNodeSpec intra_node;
  InterNodeSpec inter_node;
  std::optional<Cited<double>> price_per_gpu_hour_usd;

  int num_gpus() const { return nodes * gpus_per_node; }
};

// Throws config::ConfigError ("file:line:col: key: problem (expected ...)").
ClusterSpec load_cluster(const std::string& path);
ClusterSpec parse_cluster(const config::ConfigNode& root);  // for in-memory YAML in tests

// Throws std::invalid_argument when the spec is inconsistent (e.g. after changing nodes).
sim::Topology build_topology(const ClusterSpec& spec);

// Throws std::invalid_argument("rank R is outside cluster 'name' (file): N GPUs, ranks
// 0..N-1") for a rank < 0 or >= num_gpus(); check_rank_count does the same for a count of
// ranks that must fit in the cluster (1..N).
void validate_rank(const ClusterSpec& spec, int rank);
void validate_rank_count(const ClusterSpec& spec, int ranks);

// The documented keys of each section, for check_keys() and for the CLI to print.
const std::vector<config::ParamDoc>& cluster_params();
const std::vector<config::ParamDoc>& gpu_params();
const std::vector<config::ParamDoc>& intra_node_params();
const std::vector<config::ParamDoc>& inter_node_params();

}  // namespace overlapsim::workloads
