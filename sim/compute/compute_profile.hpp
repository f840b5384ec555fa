#pragma once
// The compute half of a device profile: peak rates, memory bandwidth, launch overhead and
// the efficiency curves (fraction of peak reached) by op class. Pure data: loaded from
// profile YAML by calibration::load_profile, consumed by ComputeModel.
#include <map>

#include "sim/compute/gemm_table.hpp"
#include "sim/compute/log_curve.hpp"
#include "sim/compute/provenance.hpp"
#include "sim/graph/op_graph.hpp"

namespace overlapsim::sim {

struct ComputeProfile {
  // Dense (no sparsity) peak per precision: tensor-core rates for bf16/fp16/fp8, the
  // CUDA-core rate for fp32 (used by elementwise math).
  std::map<Precision, Sourced> peak_flops_per_s;
  Sourced memory_bandwidth_Bps;
  Sourced memory_capacity_bytes;
  // Fixed cost per op on the GPU timeline (the gap between back-to-back kernels).
  Sourced launch_overhead_s;

  // Efficiency curves, y = fraction of peak. GEMM over the op's FLOPs, per precision;
  // attention over FLOPs (forward and backward differ); memory-bound ops (elementwise,
  // GEMV, the memory term of every op) over bytes moved; embedding-bag gathers over bytes.
  std::map<Precision, LogCurve> gemm_efficiency;
  LogCurve attention_forward_efficiency;
  LogCurve attention_backward_efficiency;
  LogCurve memory_efficiency;
  LogCurve embedding_efficiency;

  // Measured GEMM throughput tables; where present for a precision they replace
  // gemm_efficiency for it.
  std::map<Precision, GemmTable> gemm_tables;

  // GEMM rate when the GPU alternates compute with communication (a GEMM, then a
  // collective, then the pair, as overlap-bench's pair loops and a training step do)
  // over the rate of back-to-back GEMMs, which is what the tables and curves hold: the
  // power-limited clock has headroom when the tensor cores idle part of the time.
  // value 0: not measured (1 is used).
  Sourced interleaved_gemm_speedup;

  double interleaved_speedup() const {
    return interleaved_gemm_speedup.value > 0 ? interleaved_gemm_speedup.value : 1.0;
  }
};

// The profile's GEMM rates (tables and efficiency curves) multiplied by `factor`.
ComputeProfile with_gemm_rates_scaled(ComputeProfile c, double factor);

}  // namespace overlapsim::sim
