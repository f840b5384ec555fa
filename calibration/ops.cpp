#include "calibration/ops.hpp"

#include <stdexcept>

#include "config/error.hpp"

namespace overlapsim::calibration {

std::optional<PairParts> pair_parts(const std::string& op) {
  const auto plus = op.find('+');
  if (plus == std::string::npos) return std::nullopt;
  const std::string a = op.substr(0, plus), b = op.substr(plus + 1);
  if (is_compute_op(a) && is_collective_op(b)) return PairParts{a, b, false};
  if (is_collective_op(a) && is_compute_op(b)) return PairParts{b, a, true};
  return std::nullopt;
}

sim::Precision precision_of(const std::string& dtype) {
  if (dtype == "bf16") return sim::Precision::BF16;
  if (dtype == "fp16") return sim::Precision::FP16;
  if (dtype == "fp8") return sim::Precision::FP8;
  if (dtype == "fp32") return sim::Precision::FP32;
  throw config::ConfigError("unknown dtype '" + dtype + "' (expected bf16, fp16, fp8 or fp32)");
}

std::optional<sim::CollectiveOp> collective_of(const std::string& op) {
  return sim::parse_collective_op(op);
}

sim::OpNode compute_op(const Measurement& m, const std::string& compute) {
  sim::OpNode op;
  op.name =
      m.op + " " + std::to_string(m.m) + "x" + std::to_string(m.n) + "x" + std::to_string(m.k);
  op.precision = precision_of(m.dtype);
  if (compute == "gemm" || compute == "gemv") {
    op.kind = compute == "gemm" ? sim::OpKind::Gemm : sim::OpKind::Gemv;
    op.gemm = {m.m, m.n, m.k, 1};
    return op;
  }
  if (compute == "embedding") {
    op.kind = sim::OpKind::EmbeddingLookup;
    const auto e = static_cast<std::uint64_t>(sim::bytes_per_element(op.precision));
    const auto bags = static_cast<std::uint64_t>(m.m), dim = static_cast<std::uint64_t>(m.n),
               pooling = static_cast<std::uint64_t>(m.k);
    op.bytes = bags * pooling * dim * e + bags * dim * e;
    return op;
  }
  throw config::ConfigError("no compute op for '" + compute +
                              "' (expected gemm, gemv or embedding)");
}

sim::OpNode elementwise_op(const Measurement& m) {
  sim::OpNode op;
  op.name = m.op + " " + m.design + " " + std::to_string(m.bytes);
  op.kind = sim::OpKind::Elementwise;
  op.precision = precision_of(m.dtype);
  op.bytes = m.bytes;
  return op;
}

}  // namespace overlapsim::calibration
