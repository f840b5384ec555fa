#include "sim/profile/profile.hpp"

#include <fmt/format.h>

namespace overlapsim::sim {

std::vector<SourceEntry> Profile::sources() const {
  std::vector<SourceEntry> out;
  if (device.nccl_nvlink_bandwidth_Bps)
    out.push_back({"device.nccl_nvlink_bandwidth_Bps", device.nccl_nvlink_bandwidth_Bps->source});
  const ComputeProfile& c = compute;
  for (const auto& [p, v] : c.peak_flops_per_s)
    out.push_back({fmt::format("compute.peak_flops_per_s.{}", to_string(p)), v.source});
  out.push_back({"compute.memory_bandwidth_Bps", c.memory_bandwidth_Bps.source});
  out.push_back({"compute.memory_capacity_bytes", c.memory_capacity_bytes.source});
  out.push_back({"compute.launch_overhead_s", c.launch_overhead_s.source});
  for (const auto& [p, curve] : c.gemm_efficiency)
    out.push_back({fmt::format("compute.efficiency.gemm.{}", to_string(p)), curve.source});
  out.push_back({"compute.efficiency.attention_forward", c.attention_forward_efficiency.source});
  out.push_back({"compute.efficiency.attention_backward", c.attention_backward_efficiency.source});
  out.push_back({"compute.efficiency.memory", c.memory_efficiency.source});
  if (!c.gemv_efficiency.empty())
    out.push_back({"compute.efficiency.gemv", c.gemv_efficiency.source});
  out.push_back({"compute.efficiency.embedding", c.embedding_efficiency.source});
  for (const auto& [p, table] : c.gemm_tables)
    out.push_back({fmt::format("compute.gemm_tables.{}", to_string(p)), table.source});
  for (const auto& [p, table] : c.own_gemm_tables)
    out.push_back({fmt::format("compute.own_gemm_tables.{}", to_string(p)), table.source});
  if (c.idle_clock_boost) out.push_back({"compute.idle_clock_boost", c.idle_clock_boost->source});
  if (c.concurrent_comm_slowdown)
    out.push_back({"compute.concurrent_comm_slowdown", c.concurrent_comm_slowdown->source});
  for (const KernelTimeCurveKey& k : kKernelTimeCurves)
    if (!(c.*k.curve).empty())
      out.push_back({std::string("compute.") + k.key, (c.*k.curve).source});
  if (c.fp8_block_scaling_time_factor)
    out.push_back({"compute.fp8_block_scaling_time_factor", c.fp8_block_scaling_time_factor->source});
  if (c.scatter_add_bandwidth_Bps)
    out.push_back({"compute.scatter_add_bandwidth_Bps", c.scatter_add_bandwidth_Bps->source});
  if (c.index_add_bandwidth_Bps)
    out.push_back({"compute.index_add_bandwidth_Bps", c.index_add_bandwidth_Bps->source});
  if (c.attention_table) out.push_back({"compute.attention_table", c.attention_table->source});
  for (const auto& cc : collectives.curves) {
    out.push_back({fmt::format("collectives.{}.{}.{}", to_string(cc.op), to_string(cc.algo),
                               to_string(cc.scope)),
                   cc.source});
    if (cc.in_compute_loop_factor)
      out.push_back({fmt::format("collectives.{}.{}.{}.in_compute_loop_factor", to_string(cc.op),
                                 to_string(cc.algo), to_string(cc.scope)),
                     cc.in_compute_loop_factor->source});
  }
  for (const auto& [design, params] : designs.by_design)
    for (const auto& [key, v] : params)
      out.push_back({fmt::format("designs.{}.{}", design, key), v.source});
  return out;
}

std::string Profile::source_kinds() const {
  bool seen[4] = {false, false, false, false};
  for (const auto& e : sources()) seen[static_cast<int>(e.source.kind)] = true;
  std::string out;
  for (SourceKind k :
       {SourceKind::Measured, SourceKind::Datasheet, SourceKind::Paper, SourceKind::Assumed}) {
    if (!seen[static_cast<int>(k)]) continue;
    if (!out.empty()) out += '+';
    out += to_string(k);
  }
  return out;
}

}  // namespace overlapsim::sim
