#pragma once
// A step a person can time by hand, shared by the scenario tests: two ranks of one host, a
// GEMM then its all-reduce (paired), the all-reduce timed by a measured curve (10 us +
// bytes / 200 GB/s on two ranks, whose bus-bandwidth factor 2(n-1)/n is 1).
#include <cstdint>

#include "sim/overlap/pair_simulation.hpp"
#include "sim/profile/profile.hpp"
#include "sim/topology/builders.hpp"
#include "tests/sim/overlap/overlap_test_util.hpp"

namespace overlapsim::sim::testing {

inline constexpr std::uint64_t kBytes = 64ull << 20;
inline constexpr double kGemmS = 2.0 * 8192 * 8192 * 8192 / 1e15;  // unit profile: FLOPs / 1e15
inline const double kCommS = 10e-6 + static_cast<double>(kBytes) / 200e9;

inline Profile profile_with_curve() {
  Profile p = design_profile(false);
  CollectiveCurve c;
  c.op = CollectiveOp::AllReduce;
  c.ranks = 2;
  c.segments = {{0, 10e-6, 200e9}};
  c.source = {SourceKind::Measured, "test rows", 0.01};
  p.collectives.curves.push_back(c);
  return p;
}

// GEMM -> all-reduce on each of two ranks, paired (a producer pair).
inline StepGraph gemm_then_allreduce() {
  PairCase pc;
  pc.compute = gemm_op("gemm", 8192, 8192, 8192);
  pc.comm_bytes = kBytes;
  return pair_step(pc);
}

// Two GPUs of one NVSwitch host (400 GB/s, no link latency: the curve times the collective).
inline Topology scenario_node() { return build_nvswitch_node({2, 400e9, 0.0}); }

}  // namespace overlapsim::sim::testing
