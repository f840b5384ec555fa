#pragma once
// A profile with round numbers for the design tests: a GEMM of F FLOPs takes F / 1e15 s
// (no launch cost), 132 SMs, and every design parameter set (perfect or realistic).
#include <string>

#include "sim/profile/profile.hpp"
#include "sim/topology/builders.hpp"
#include "tests/sim/sim_test_util.hpp"

namespace overlapsim::sim::testing {

inline void set_param(Profile& p, const std::string& design, const std::string& key, double v) {
  p.designs.by_design[design][key] = {v, {SourceKind::Assumed, "test", -1}};
}

// `perfect`: no overheads at all (own GEMM as fast as the vendor's, no signalling, no
// interference, no NCCL slowdown on few CTAs, no call latency), 1 SM left to NCCL.
inline Profile design_profile(bool perfect) {
  Profile p;
  p.name = "test-profile";
  p.device.sms = 132;
  p.compute = unit_compute_profile(1e15);
  const double ovh = perfect ? 0 : 1;
  const double lat = perfect ? 0 : 10e-6;
  for (const char* d : {"decomposed", "tilewise"}) {
    set_param(p, d, "tile_m", 128);
    set_param(p, d, "tile_n", 256);
  }
  set_param(p, "decomposed", "chunks", 4);
  set_param(p, "decomposed", "comm_ctas", perfect ? 0 : 16);
  set_param(p, "decomposed", "interference_slowdown", 1 + 0.05 * ovh);
  set_param(p, "decomposed", "nccl_call_latency_s", lat);
  set_param(p, "tilewise", "comm_sms", perfect ? 1 : 16);
  set_param(p, "tilewise", "max_groups", 16);
  set_param(p, "tilewise", "own_gemm_time_ratio", 1 + 0.1 * ovh);
  set_param(p, "tilewise", "signal_overhead_fraction", 0.05 * ovh);
  set_param(p, "tilewise", "interference_slowdown", 1 + 0.05 * ovh);
  set_param(p, "tilewise", "wait_overhead_s", lat);
  set_param(p, "tilewise", "nccl_call_latency_s", lat);
  for (const char* d : {"tilewise", "shaped"}) {
    set_param(p, d, "comm_slowdown_allreduce", 1 + 0.2 * ovh);
    set_param(p, d, "comm_slowdown_reducescatter", 1 + 0.2 * ovh);
    set_param(p, d, "comm_slowdown_alltoall", 1 + 0.8 * ovh);
  }
  set_param(p, "fused", "memory_bound_overhead_fraction", 0.05 * ovh);
  set_param(p, "fused", "memory_bound_store_Bps", perfect ? 1e300 : 2e12);
  set_param(p, "fused", "gemm_store_Bps", perfect ? 1e300 : 5e11);
  set_param(p, "fused", "alltoall_finish_s", perfect ? 0 : 2e-6);
  set_param(p, "fused", "allreduce_finish_s", lat);
  set_param(p, "fused", "nvlink_store_Bps", 450e9);
  set_param(p, "shaped", "chunks", 4);
  set_param(p, "shaped", "comm_sms", perfect ? 1 : 16);
  set_param(p, "shaped", "interference_slowdown", 1 + 0.05 * ovh);
  set_param(p, "shaped", "comm_interference_slowdown", 1 + 0.1 * ovh);
  set_param(p, "shaped", "nccl_call_latency_s", lat);
  return p;
}

inline Topology two_gpu_node() {
  NvSwitchNodeSpec spec;
  spec.gpus = 2;
  spec.nvlink_bandwidth_Bps = 450e9;
  spec.nvlink_latency_s = 0.3e-6;
  return build_nvswitch_node(spec);
}

}  // namespace overlapsim::sim::testing
