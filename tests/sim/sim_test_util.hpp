#pragma once
// Fixtures shared by the sim tests: a compute profile with round numbers, a GEMM node and a
// small rail fat tree.
#include <cstdint>
#include <string>

#include "sim/graph/op_graph.hpp"
#include "sim/profile/compute_profile.hpp"
#include "sim/topology/builders.hpp"

namespace overlapsim::sim::testing {

// Every efficiency 1 and no launch cost: a GEMM of F FLOPs takes F / 1e15 s, moving B bytes
// takes B / memory_bandwidth_Bps.
inline ComputeProfile unit_compute_profile(double memory_bandwidth_Bps) {
  ComputeProfile p;
  p.peak_flops_per_s[Precision::BF16].value = 1e15;
  p.memory_bandwidth_Bps.value = memory_bandwidth_Bps;
  p.launch_overhead_s.value = 0;
  LogCurve one;
  one.points = {{1.0, 1.0}};
  p.gemm_efficiency[Precision::BF16] = one;
  p.attention_forward_efficiency = one;
  p.attention_backward_efficiency = one;
  p.memory_efficiency = one;
  p.embedding_efficiency = one;
  return p;
}

// An m x n x k BF16 GEMM (batch 1).
inline OpNode gemm_op(const std::string& name, std::int64_t m, std::int64_t n, std::int64_t k) {
  OpNode op;
  op.name = name;
  op.kind = OpKind::Gemm;
  op.gemm = {m, n, k, 1};
  return op;
}

// A memory-bound elementwise op moving `bytes`.
inline OpNode elementwise_op(const std::string& name, std::uint64_t bytes) {
  OpNode op;
  op.name = name;
  op.kind = OpKind::Elementwise;
  op.bytes = bytes;
  return op;
}

// A rail-optimised fat tree of `nodes` NVSwitch nodes of `gpus_per_node` GPUs, one NIC per
// GPU, with round link rates (NVLink 450, NIC 50, PCIe 64 GB/s per direction).
inline constexpr double kNvlinkBps = 450e9, kNicBps = 50e9, kPcieBps = 64e9;
inline RailFatTreeSpec rail_fat_tree_spec(int nodes, int gpus_per_node, int leaf_down_ports,
                                          int spines = 1, double oversubscription = 1) {
  RailFatTreeSpec spec;
  spec.nodes = nodes;
  spec.node = NvSwitchNodeSpec{gpus_per_node, kNvlinkBps, 0.5e-6};
  spec.nics_per_node = gpus_per_node;
  spec.nic_bandwidth_Bps = kNicBps;
  spec.gpu_nic_bandwidth_Bps = kPcieBps;
  spec.gpu_nic_latency_s = 1e-6;
  spec.link_latency_s = 0.2e-6;
  spec.leaf_down_ports = leaf_down_ports;
  spec.spines = spines;
  spec.oversubscription = oversubscription;
  return spec;
}

}  // namespace overlapsim::sim::testing
