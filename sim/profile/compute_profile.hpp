#pragma once
// The compute half of a device profile: peak rates, memory bandwidth, launch overhead and
// the efficiency curves (fraction of peak reached) by op class. Pure data: loaded from
// profile YAML by sim::load_profile, consumed by ComputeModel.
#include <array>
#include <map>
#include <optional>

#include "sim/graph/op_graph.hpp"
#include "sim/profile/attention_table.hpp"
#include "sim/profile/gemm_table.hpp"
#include "sim/profile/log_curve.hpp"
#include "sim/profile/provenance.hpp"

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
  // attention over FLOPs (forward and backward differ); memory-bound ops (elementwise
  // streaming kernels, the memory term of every op) over bytes moved; GEMVs over bytes, where
  // measured (a GEMV reduces as it streams and runs well below a copy of its bytes below a
  // few hundred MB), else the memory curve; embedding-bag gathers over bytes.
  std::map<Precision, LogCurve> gemm_efficiency;
  LogCurve attention_forward_efficiency;
  LogCurve attention_backward_efficiency;
  LogCurve memory_efficiency;
  LogCurve gemv_efficiency;  // optional: empty times GEMVs by memory_efficiency
  LogCurve embedding_efficiency;

  // Measured GEMM throughput tables; where present for a precision they replace
  // gemm_efficiency for it.
  std::map<Precision, GemmTable> gemm_tables;
  // The same for this project's own Hopper GEMM (kernels/gemm: the tile-wise design's
  // kernel, timed without signals), where measured; the tile-wise design times its GEMM
  // by these instead of the vendor table x designs.tilewise.own_gemm_time_ratio.
  std::map<Precision, GemmTable> own_gemm_tables;
  // Fused attention's efficiency over head dimension and sequence length, where measured;
  // it replaces the attention curves for ops that carry their shape.
  std::optional<AttentionTable> attention_table;

  // Clock headroom of a power-limited GPU: GEMMs run at (1 + idle_clock_boost * f) times
  // the back-to-back rate the tables and curves hold when the GPU runs no compute for a
  // fraction f of the time around them (a GEMM, then its collective, in turn: overlap-bench's
  // pair loops, a training step's exposed communication). On 2 x H200 the same GEMM ran
  // 2-15 % faster inside pair loops than back to back, the more so the larger the
  // collective's share (docs/calibration.md). Absent: no boost (f has no effect).
  std::optional<Sourced> idle_clock_boost;

  // Block-scaled FP8 GEMM time / per-tensor-scaled time (the fp8 table and curve hold the
  // latter), for ops with fp8_block_scaled. Absent: such ops are an error.
  std::optional<Sourced> fp8_block_scaling_time_factor;

  // Bytes a second of ops whose writes are atomic adds into scattered rows
  // (OpNode::atomic_add: PyTorch's scatter_add_, index_add_), over the op's bytes. Absent:
  // such ops are an error.
  std::optional<Sourced> scatter_add_bandwidth_Bps;
  std::optional<Sourced> index_add_bandwidth_Bps;

  // How much slower a vendor GEMM runs while NCCL moves data beside it on NCCL's default
  // CTAs (their SMs taken, HBM and L2 shared): the executor runs compute beside its rank's
  // communication at 1/this of its rate. Absent: the factor the decomposed design's
  // parameters give (sim::concurrent_comm_slowdown).
  std::optional<Sourced> concurrent_comm_slowdown;
  // The same for one GEMM kernel, by its time alone (x, seconds): a short kernel is delayed
  // by about one or two of its tiles' time (one CTA that shares its SM with a busy NCCL CTA
  // straggles), most of its time below ~60 us, a few percent of a long one. Where present,
  // the executor charges GEMM ops this at their per-kernel time (op time / batch) and other
  // compute ops concurrent_comm_slowdown. Empty: every op the factor.
  LogCurve concurrent_comm_gemm_slowdown;
  // The same for memory-bound (elementwise) kernels by their time alone: NCCL's copies share
  // HBM with them, and evict what they held in L2. Where present the executor charges
  // elementwise ops this at their time per kernel (op time / launches). Empty: the factor.
  LogCurve concurrent_comm_memory_slowdown;
  // The same for fused attention kernels (flash attention) by their time alone; where
  // present the executor charges attention ops this at their time per kernel.
  LogCurve concurrent_comm_attention_slowdown;
  // The other way round: how much slower an NCCL collective runs while memory-bound
  // (elementwise) kernels stream HBM beside it, by that kernel's time alone. Where present
  // the executor stretches a collective by the time its members ran such ops.
  LogCurve collective_beside_memory_slowdown;

  // 1 + idle_clock_boost * idle_fraction (1 without the key); idle_fraction in [0, 1].
  double clock_speedup(double idle_fraction) const;
};

// The own GEMM's tables as a compute profile of their own (gemm_tables replaced by them),
// for a ComputeModel of that kernel; nullopt when the profile has none.
std::optional<ComputeProfile> own_gemm_profile(const ComputeProfile& c);

// The curves of slowdown between kernels and NCCL beside each other, by a kernel's time
// alone, for the places that treat them alike (load, write, print, provenance): the key
// under compute, a label, what its slowdown is of (for errors), and the member.
struct KernelTimeCurveKey {
  const char* key;
  const char* label;
  const char* ratio;
  LogCurve ComputeProfile::*curve;
};
inline constexpr std::array<KernelTimeCurveKey, 4> kKernelTimeCurves = {{
    {"concurrent_comm_gemm_slowdown", "GEMM beside NCCL",
     "a kernel's time beside NCCL over its time alone",
     &ComputeProfile::concurrent_comm_gemm_slowdown},
    {"concurrent_comm_memory_slowdown", "memory-bound beside NCCL",
     "a kernel's time beside NCCL over its time alone",
     &ComputeProfile::concurrent_comm_memory_slowdown},
    {"concurrent_comm_attention_slowdown", "attention beside NCCL",
     "a kernel's time beside NCCL over its time alone",
     &ComputeProfile::concurrent_comm_attention_slowdown},
    {"collective_beside_memory_slowdown", "NCCL beside memory-bound",
     "a collective's time beside the kernels over its time alone",
     &ComputeProfile::collective_beside_memory_slowdown},
}};

// The profile's GEMM rates (tables, own tables and efficiency curves) multiplied by
// `factor`.
ComputeProfile with_gemm_rates_scaled(ComputeProfile c, double factor);

}  // namespace overlapsim::sim
