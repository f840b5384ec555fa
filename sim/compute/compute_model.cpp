#include "sim/compute/compute_model.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace overlapsim::sim {

ComputeModel::ComputeModel(const ComputeProfile& profile) : profile_(profile) {}

double ComputeModel::op_flops(const OpNode& op) {
  if (op.flops > 0) return op.flops;
  if (op.kind == OpKind::Gemm || op.kind == OpKind::Gemv) {
    const GemmShape& g = op.gemm;
    return 2.0 * static_cast<double>(g.m) * static_cast<double>(g.n) * static_cast<double>(g.k) *
           static_cast<double>(g.batch);
  }
  return 0;
}

double ComputeModel::op_bytes(const OpNode& op) {
  if (op.bytes > 0) return static_cast<double>(op.bytes);
  if (op.kind == OpKind::Gemm || op.kind == OpKind::Gemv) {
    const GemmShape& g = op.gemm;
    const double elems = static_cast<double>(g.m) * static_cast<double>(g.k) +
                         static_cast<double>(g.k) * static_cast<double>(g.n) +
                         static_cast<double>(g.m) * static_cast<double>(g.n);
    return elems * static_cast<double>(g.batch) * bytes_per_element(op.precision);
  }
  return 0;
}

double ComputeModel::peak(const OpNode& op, Precision p) const {
  auto it = profile_.peak_flops_per_s.find(p);
  if (it == profile_.peak_flops_per_s.end())
    throw std::invalid_argument(
        fmt::format("op '{}': the profile has no {} peak rate", op.name, to_string(p)));
  return it->second.value;
}

OpCost ComputeModel::cost(const OpNode& op) const {
  if (op.kind == OpKind::Collective || op.kind == OpKind::SendRecv)
    throw std::invalid_argument(
        fmt::format("op '{}': a communication op has no compute cost", op.name));
  const double flops = op_flops(op);
  const double bytes = op_bytes(op);
  OpCost c;
  c.launch_s = profile_.launch_overhead_s.value;
  if (bytes > 0) {
    const LogCurve& mem_eff = op.kind == OpKind::EmbeddingLookup ? profile_.embedding_efficiency
                                                                 : profile_.memory_efficiency;
    c.memory_s = bytes / (profile_.memory_bandwidth_Bps.value * mem_eff.at(bytes));
  }
  if (flops > 0) {
    switch (op.kind) {
      case OpKind::Gemm: {
        auto table = profile_.gemm_tables.find(op.precision);
        if (table != profile_.gemm_tables.end()) {
          const GemmShape& g = op.gemm;
          c.compute_s = flops / table->second.rate_flops_per_s(static_cast<double>(g.m),
                                                               static_cast<double>(g.n),
                                                               static_cast<double>(g.k));
          break;
        }
        auto curve = profile_.gemm_efficiency.find(op.precision);
        if (curve == profile_.gemm_efficiency.end())
          throw std::invalid_argument(fmt::format("op '{}': the profile has no {} GEMM efficiency",
                                                  op.name, to_string(op.precision)));
        c.compute_s = flops / (peak(op, op.precision) * curve->second.at(flops));
        break;
      }
      case OpKind::Attention: {
        const LogCurve& eff = op.phase == Phase::Backward ? profile_.attention_backward_efficiency
                                                          : profile_.attention_forward_efficiency;
        c.compute_s = flops / (peak(op, op.precision) * eff.at(flops));
        break;
      }
      case OpKind::Gemv:
        c.compute_s = flops / peak(op, op.precision);
        break;
      case OpKind::Elementwise: {
        // Elementwise math runs on CUDA cores at the fp32 rate when the profile has it.
        const bool has_fp32 = profile_.peak_flops_per_s.count(Precision::FP32) > 0;
        c.compute_s = flops / peak(op, has_fp32 ? Precision::FP32 : op.precision);
        break;
      }
      case OpKind::EmbeddingLookup:  // pooling adds are hidden under the gather
      case OpKind::Collective:
      case OpKind::SendRecv:
        break;
    }
  }
  c.time_s = std::max(c.compute_s, c.memory_s) + c.launch_s;
  return c;
}

}  // namespace overlapsim::sim
