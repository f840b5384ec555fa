#include "sim/profile/compute_model.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <stdexcept>

namespace overlapsim::sim {

OpCostKey OpCostKey::of(const OpNode& op) {
  OpCostKey k;
  k.kind = op.kind;
  k.phase = op.phase;
  k.precision = op.precision;
  k.fp8_block_scaled = op.fp8_block_scaled;
  k.recompute = op.recompute;
  k.atomic_add = op.atomic_add;
  k.launches = op.launches;
  k.gemm = op.gemm;
  k.attention = op.attention;
  k.flops = op.flops;
  k.bytes = op.bytes;
  return k;
}

bool OpCostKey::operator==(const OpCostKey& o) const {
  // Doubles compared by value: -0.0 == 0.0 cost the same, and no key holds a NaN.
  return kind == o.kind && phase == o.phase && precision == o.precision &&
         fp8_block_scaled == o.fp8_block_scaled && recompute == o.recompute &&
         atomic_add == o.atomic_add && launches == o.launches && gemm.m == o.gemm.m &&
         gemm.n == o.gemm.n && gemm.k == o.gemm.k && gemm.batch == o.gemm.batch &&
         attention.head_dim == o.attention.head_dim && attention.seq_len == o.attention.seq_len &&
         attention.query_tiles == o.attention.query_tiles && flops == o.flops && bytes == o.bytes;
}

std::size_t OpCostKey::Hash::operator()(const OpCostKey& k) const {
  // FNV-1a over the fields' values (+ 0.0 folds -0.0 into 0.0, as operator== does).
  std::uint64_t h = 1469598103934665603ull;
  const auto mix = [&h](std::uint64_t v) {
    h ^= v;
    h *= 1099511628211ull;
  };
  const auto bits = [](double d) { return std::bit_cast<std::uint64_t>(d + 0.0); };
  mix(static_cast<std::uint64_t>(k.kind) | static_cast<std::uint64_t>(k.phase) << 8 |
      static_cast<std::uint64_t>(k.precision) << 16 |
      static_cast<std::uint64_t>(k.fp8_block_scaled) << 24 |
      static_cast<std::uint64_t>(k.recompute) << 25 |
      static_cast<std::uint64_t>(k.atomic_add) << 26 |
      static_cast<std::uint64_t>(static_cast<std::uint32_t>(k.launches)) << 32);
  mix(static_cast<std::uint64_t>(k.gemm.m));
  mix(static_cast<std::uint64_t>(k.gemm.n));
  mix(static_cast<std::uint64_t>(k.gemm.k));
  mix(static_cast<std::uint64_t>(k.gemm.batch));
  mix(bits(k.attention.head_dim));
  mix(bits(k.attention.seq_len));
  mix(bits(k.attention.query_tiles));
  mix(bits(k.flops));
  mix(k.bytes);
  return static_cast<std::size_t>(h);
}

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
  mark(kPeak + static_cast<unsigned>(p));
  return it->second.value;
}

OpCost ComputeModel::cost(const OpNode& op) const {
  if (op.kind == OpKind::Collective || op.kind == OpKind::SendRecv)
    throw std::invalid_argument(
        fmt::format("op '{}': a communication op has no compute cost", op.name));
  const double flops = op_flops(op);
  const double bytes = op_bytes(op);
  OpCost c;
  c.launch_s = profile_.launch_overhead_s.value * std::max(1, op.launches);
  mark(kLaunch);
  if (bytes > 0) {
    const bool gather = op.kind == OpKind::EmbeddingLookup;
    const bool gemv = op.kind == OpKind::Gemv && !profile_.gemv_efficiency.empty();
    const LogCurve& mem_eff = gather ? profile_.embedding_efficiency
                              : gemv ? profile_.gemv_efficiency
                                     : profile_.memory_efficiency;
    mark(kMemoryBandwidth);
    mark(gather ? kEmbeddingEfficiency : gemv ? kGemvEfficiency : kMemoryEfficiency);
    c.memory_s = bytes / (profile_.memory_bandwidth_Bps.value * mem_eff.at(bytes));
    if (op.atomic_add != AtomicAdd::None) {
      const bool scatter = op.atomic_add == AtomicAdd::Scatter;
      const std::optional<Sourced>& rate =
          scatter ? profile_.scatter_add_bandwidth_Bps : profile_.index_add_bandwidth_Bps;
      const char* key = scatter ? "scatter_add_bandwidth_Bps" : "index_add_bandwidth_Bps";
      if (!rate)
        throw std::invalid_argument(fmt::format(
            "op '{}': its writes are atomic adds, but the profile has no compute.{} (measure "
            "it: benchmarks/results/h200x2/megatron_moe_layer/)",
            op.name, key));
      mark(scatter ? kScatterAdd : kIndexAdd);
      c.memory_s = std::max(c.memory_s, bytes / rate->value);
    }
  }
  if (flops > 0) {
    switch (op.kind) {
      case OpKind::Gemm: {
        auto table = profile_.gemm_tables.find(op.precision);
        if (table != profile_.gemm_tables.end()) {
          mark(kGemmTable + static_cast<unsigned>(op.precision));
          const GemmShape& g = op.gemm;
          // The op's FLOPs at the table's rate for its shape (the wave model's rate is
          // 2mnk over its time, so a batch runs its members back to back).
          c.compute_s = flops / table->second.rate_flops_per_s(static_cast<double>(g.m),
                                                               static_cast<double>(g.n),
                                                               static_cast<double>(g.k));
          break;
        }
        auto curve = profile_.gemm_efficiency.find(op.precision);
        if (curve == profile_.gemm_efficiency.end())
          throw std::invalid_argument(fmt::format("op '{}': the profile has no {} GEMM efficiency",
                                                  op.name, to_string(op.precision)));
        mark(kGemmEfficiency + static_cast<unsigned>(op.precision));
        c.compute_s = flops / (peak(op, op.precision) * curve->second.at(flops));
        break;
      }
      case OpKind::Attention: {
        // A recomputed attention core runs the forward kernel, in the backward phase.
        const bool backward = op.phase == Phase::Backward && !op.recompute;
        // The op carries the model's FLOPs (the backward twice the forward, the MFU count);
        // the curves and the table are over the kernel's own: a fused backward recomputes
        // the score matrix, 5 matrix products to the forward's 2 (FlashAttention-2, Dao
        // 2023, counts it 2.5x the forward; calibration/profiles/fit_roofline.py and
        // fit_attention_table.py fit that way).
        const double kernel_flops = backward ? flops * kAttentionBackwardKernelFlopsRatio : flops;
        const auto& table = profile_.attention_table;
        if (table && op.attention.head_dim > 0 && op.attention.seq_len > 0) {
          mark(kAttentionTable);
          c.compute_s =
              kernel_flops / (peak(op, op.precision) *
                              table->efficiency(backward, op.attention.head_dim,
                                                op.attention.seq_len, op.attention.query_tiles));
          break;
        }
        mark(backward ? kAttentionBackward : kAttentionForward);
        const LogCurve& eff = backward ? profile_.attention_backward_efficiency
                                       : profile_.attention_forward_efficiency;
        c.compute_s = kernel_flops / (peak(op, op.precision) * eff.at(kernel_flops));
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
    if (op.kind == OpKind::Gemm && op.fp8_block_scaled && op.precision == Precision::FP8) {
      if (!profile_.fp8_block_scaling_time_factor)
        throw std::invalid_argument(fmt::format(
            "op '{}': block-scaled fp8, but the profile has no "
            "compute.fp8_block_scaling_time_factor (measure it: calibration/suites/"
            "gemm-fp8-block-1gpu.yaml)",
            op.name));
      mark(kFp8BlockScaling);
      c.compute_s *= profile_.fp8_block_scaling_time_factor->value;
    }
  }
  c.time_s = std::max(c.compute_s, c.memory_s) + c.launch_s;
  return c;
}

std::vector<std::string> ComputeModel::used_entries() const {
  std::vector<std::string> out;
  const Precision precisions[] = {Precision::FP32, Precision::BF16, Precision::FP16,
                                  Precision::FP8};
  for (Precision p : precisions)
    if (used_ & (1u << (kPeak + static_cast<unsigned>(p))))
      out.push_back(fmt::format("compute.peak_flops_per_s.{}", to_string(p)));
  if (used_ & (1u << kMemoryBandwidth)) out.push_back("compute.memory_bandwidth_Bps");
  if (used_ & (1u << kLaunch)) out.push_back("compute.launch_overhead_s");
  for (Precision p : precisions)
    if (used_ & (1u << (kGemmEfficiency + static_cast<unsigned>(p))))
      out.push_back(fmt::format("compute.efficiency.gemm.{}", to_string(p)));
  if (used_ & (1u << kAttentionForward)) out.push_back("compute.efficiency.attention_forward");
  if (used_ & (1u << kAttentionBackward)) out.push_back("compute.efficiency.attention_backward");
  if (used_ & (1u << kMemoryEfficiency)) out.push_back("compute.efficiency.memory");
  if (used_ & (1u << kEmbeddingEfficiency)) out.push_back("compute.efficiency.embedding");
  if (used_ & (1u << kGemvEfficiency)) out.push_back("compute.efficiency.gemv");
  if (used_ & (1u << kFp8BlockScaling)) out.push_back("compute.fp8_block_scaling_time_factor");
  if (used_ & (1u << kAttentionTable)) out.push_back("compute.attention_table");
  if (used_ & (1u << kScatterAdd)) out.push_back("compute.scatter_add_bandwidth_Bps");
  if (used_ & (1u << kIndexAdd)) out.push_back("compute.index_add_bandwidth_Bps");
  for (Precision p : precisions)
    if (used_ & (1u << (kGemmTable + static_cast<unsigned>(p))))
      out.push_back(fmt::format("compute.gemm_tables.{}", to_string(p)));
  return out;
}

}  // namespace overlapsim::sim
