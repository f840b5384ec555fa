#pragma once
// Builders of the topologies overlapsim ships: plain specs in, a Topology out. No YAML here
// (workloads/cluster.cpp maps cluster files onto these specs). Every builder validates its
// spec and throws std::invalid_argument naming the offending field. Bandwidths are per
// direction of a full-duplex link; latencies are per hop (per directed link).
#include <cstdint>
#include <variant>
#include <vector>

#include "sim/topology/topology.hpp"

namespace overlapsim::sim {

// One NVSwitch server: the NVSwitch plane is a single switch vertex, each GPU joined to it
// by one duplex link carrying all its NVLinks (e.g. H100/H200: 18 links x 25 GB/s = 450 GB/s
// per direction). A GPU-to-GPU path has two hops (GPU -> NVSwitch -> GPU).
struct NvSwitchNodeSpec {
  int gpus = 8;
  double nvlink_bandwidth_Bps = 0;  // per GPU, per direction
  double nvlink_latency_s = 0;      // per hop
};

// A PCIe server: GPUs behind PCIe switches, the switches behind one host bridge (root
// complex). GPUs under one switch talk through it peer-to-peer; others via the host bridge.
struct PcieBoxSpec {
  int gpus = 8;
  int gpus_per_switch = 2;
  double gpu_link_bandwidth_Bps = 0;       // GPU <-> PCIe switch, per direction
  double switch_uplink_bandwidth_Bps = 0;  // PCIe switch <-> host bridge, per direction
  double link_latency_s = 0;               // per hop
};

using NodeSpec = std::variant<NvSwitchNodeSpec, PcieBoxSpec>;

// N servers, each with one NIC per `gpus / nics_per_node` GPUs (one per GPU by default),
// on a rail-optimised two-level fat-tree: NIC r of every node plugs into a leaf switch of
// rail r (leaf_down_ports NICs per leaf), and every leaf has one uplink to each spine.
// Leaf uplink capacity in total is (NICs on that leaf) x nic_bandwidth / oversubscription,
// split evenly over the spines; oversubscription 1 is non-blocking. Same-rail traffic
// under one leaf never reaches a spine; cross-rail and cross-leaf traffic crosses one.
// GPUs do not relay, so intra-node traffic always takes the node fabric (NVLink/PCIe).
// `spines` = 1 models a spine layer with ideal load balance (adaptive routing); more spines
// model static ECMP, with its hash collisions.
struct RailFatTreeSpec {
  int nodes = 1;
  NodeSpec node = NvSwitchNodeSpec{};
  int nics_per_node = 8;             // must divide the node's GPU count
  double nic_bandwidth_Bps = 0;      // NIC <-> leaf, per direction
  double gpu_nic_bandwidth_Bps = 0;  // GPU <-> NIC (PCIe), per direction
  double gpu_nic_latency_s = 0;      // GPU <-> NIC hop: PCIe plus NIC processing
  double link_latency_s = 0;         // each NIC-leaf and leaf-spine hop: cable plus switch
  int leaf_down_ports = 64;          // NICs per leaf switch
  int spines = 1;
  double oversubscription = 1;  // >= 1
};

// N NPUs each with one duplex link to one switch (ASTRA-sim's "switch" topology).
struct FlatSwitchSpec {
  int npus = 2;
  double link_bandwidth_Bps = 0;  // per NPU, per direction
  double link_latency_s = 0;      // per hop; an NPU-to-NPU path has two
  int gpus_per_host = 1;          // only groups ranks into hosts (host_of); no fabric
};

// N NPUs in a bidirectional ring: NPU i linked to NPU i+1 (mod N); NPUs relay traffic.
struct RingSpec {
  int npus = 2;
  double link_bandwidth_Bps = 0;  // per neighbour link, per direction
  double link_latency_s = 0;      // per hop
  int gpus_per_host = 1;
};

Topology build_nvswitch_node(const NvSwitchNodeSpec& spec);
Topology build_pcie_box(const PcieBoxSpec& spec);
Topology build_rail_fat_tree(const RailFatTreeSpec& spec);
Topology build_flat_switch(const FlatSwitchSpec& spec);
Topology build_ring(const RingSpec& spec);

// Building blocks: add one server to `topo` as host `host`; returns its GPUs in rank order.
std::vector<VertexId> add_nvswitch_node(Topology& topo, const NvSwitchNodeSpec& spec, int host);
std::vector<VertexId> add_pcie_box(Topology& topo, const PcieBoxSpec& spec, int host);
std::vector<VertexId> add_server(Topology& topo, const NodeSpec& spec, int host);
int gpus_of(const NodeSpec& spec);

// Size limits every builder checks before allocating anything, so that an absurd spec is
// refused at once instead of ending in std::bad_alloc, and a rank always fits an int.
// 2^18 = 262,144 GPUs is above the largest clusters built so far (a few 10^5 GPUs at most);
// 2^24 directed links is about 10 GiB of topology (run_budget.cpp: ~600 bytes per link).
inline constexpr std::int64_t kMaxRanks = std::int64_t{1} << 18;
inline constexpr std::int64_t kMaxLinks = std::int64_t{1} << 24;

// Directed links build_rail_fat_tree(spec) makes (spec's counts >= 1), in 64 bits.
std::int64_t rail_fat_tree_links(const RailFatTreeSpec& spec);

// Each throws std::invalid_argument("<Spec>.<field>: <value> (expected ...)").
void validate(const NvSwitchNodeSpec& spec);
void validate(const PcieBoxSpec& spec);
void validate(const RailFatTreeSpec& spec);
void validate(const FlatSwitchSpec& spec);
void validate(const RingSpec& spec);

}  // namespace overlapsim::sim
