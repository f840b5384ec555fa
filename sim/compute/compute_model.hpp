#pragma once
// Time of one compute op on one GPU, from a ComputeProfile (a roofline with measured
// efficiencies):
//   time_s = max(flops / (peak[precision] * eff_compute), bytes / (mem_bw * eff_mem(bytes)))
//            + launch_overhead_s
// eff_compute by kind: GEMM from the measured table or the efficiency curve over FLOPs;
// attention from its forward/backward curve over FLOPs; GEMV and elementwise ops at peak
// (they are memory-bound, the memory term decides); embedding-bag lookups have only the
// memory term with the random-access efficiency curve instead of the streaming one.
#include "sim/compute/compute_profile.hpp"
#include "sim/graph/op_graph.hpp"

namespace overlapsim::sim {

struct OpCost {
  double time_s = 0;     // what the op occupies its stream for
  double compute_s = 0;  // the FLOP term
  double memory_s = 0;   // the memory term
  double launch_s = 0;
  bool memory_bound() const { return memory_s > compute_s; }
};

class ComputeModel {
 public:
  // Keeps a reference: the profile must outlive the model.
  explicit ComputeModel(const ComputeProfile& profile);

  // Throws std::invalid_argument for communication ops and for precisions or op classes
  // the profile has no numbers for (naming the op and what is missing).
  OpCost cost(const OpNode& op) const;
  double time_s(const OpNode& op) const { return cost(op).time_s; }

  // FLOPs and bytes the model charges (the op's own, or derived from its GEMM shape).
  static double op_flops(const OpNode& op);
  static double op_bytes(const OpNode& op);

  const ComputeProfile& profile() const { return profile_; }

 private:
  double peak(const OpNode& op, Precision p) const;
  const ComputeProfile& profile_;
};

}  // namespace overlapsim::sim
