#pragma once
// Fixtures shared by the sim tests: a compute profile with round numbers and a GEMM node.
#include <cstdint>
#include <string>

#include "sim/profile/compute_profile.hpp"
#include "sim/graph/op_graph.hpp"

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

}  // namespace overlapsim::sim::testing
