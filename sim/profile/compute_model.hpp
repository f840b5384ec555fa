#pragma once
// Time of one compute op on one GPU, from a ComputeProfile (a roofline with measured
// efficiencies):
//   time_s = max(flops / (peak[precision] * eff_compute), bytes / (mem_bw * eff_mem(bytes)))
//            + launch_overhead_s
// eff_compute by kind: GEMM from the measured table or the efficiency curve over FLOPs;
// attention from its forward/backward curve over FLOPs; GEMV and elementwise ops at peak
// (they are memory-bound, the memory term decides); embedding-bag lookups have only the
// memory term with the random-access efficiency curve instead of the streaming one.
#include <atomic>
#include <string>
#include <vector>

#include "sim/profile/compute_profile.hpp"
#include "sim/graph/op_graph.hpp"

namespace overlapsim::sim {

struct OpCost {
  double time_s = 0;     // what the op occupies its stream for
  double compute_s = 0;  // the FLOP term
  double memory_s = 0;   // the memory term
  double launch_s = 0;
  bool memory_bound() const { return memory_s > compute_s; }
};

// The fields of an op that ComputeModel::cost() reads: ops equal in these cost the same,
// so a step's thousands of repeated layer ops are costed once per distinct key (the
// executor's OpTimeMemo). cost() must read nothing else of the op but its name (in errors).
struct OpCostKey {
  OpKind kind = OpKind::Elementwise;
  Phase phase = Phase::Forward;
  Precision precision = Precision::BF16;
  bool fp8_block_scaled = false;
  bool recompute = false;
  AtomicAdd atomic_add = AtomicAdd::None;
  int launches = 1;
  GemmShape gemm;
  AttentionShape attention;
  double flops = 0;
  std::uint64_t bytes = 0;

  static OpCostKey of(const OpNode& op);
  bool operator==(const OpCostKey& o) const;
  struct Hash {
    std::size_t operator()(const OpCostKey& k) const;
  };
};

class ComputeModel {
 public:
  // Keeps a reference: the profile must outlive the model.
  explicit ComputeModel(const ComputeProfile& profile);
  ComputeModel(const ComputeModel& other) : profile_(other.profile_), used_(other.used_.load()) {}
  ComputeModel& operator=(const ComputeModel&) = delete;

  // Throws std::invalid_argument for communication ops and for precisions or op classes
  // the profile has no numbers for (naming the op and what is missing).
  OpCost cost(const OpNode& op) const;
  double time_s(const OpNode& op) const { return cost(op).time_s; }

  // FLOPs and bytes the model charges (the op's own, or derived from its GEMM shape).
  static double op_flops(const OpNode& op);
  static double op_bytes(const OpNode& op);

  const ComputeProfile& profile() const { return profile_; }

  // A fused attention backward's FLOPs over the model's count of it (5 matrix products of
  // the forward's 2 over the model's 2x the forward).
  static constexpr double kAttentionBackwardKernelFlopsRatio = 2.5 / 2.0;

  // The profile entries cost() has consulted so far, named as Profile::sources() names
  // them ("compute.peak_flops_per_s.bf16", "compute.efficiency.gemm.bf16", ...), so
  // outputs can say which numbers a run used and where each came from.
  std::vector<std::string> used_entries() const;

 private:
  // One bit per consultable entry (cost() runs per op: a bitmask, not a set of names).
  enum Entry : unsigned {
    kPeak = 0,            // + precision index (4)
    kGemmEfficiency = 4,  // + precision index (4)
    kGemmTable = 8,       // + precision index (4)
    kMemoryBandwidth = 12,
    kLaunch,
    kAttentionForward,
    kAttentionBackward,
    kMemoryEfficiency,
    kEmbeddingEfficiency,
    kGemvEfficiency,
    kFp8BlockScaling,
    kAttentionTable,
    kScatterAdd,
    kIndexAdd,
  };
  // Checked before written, so threads sharing a model only read the mask once warm.
  void mark(unsigned entry) const {
    const unsigned bit = 1u << entry;
    if ((used_.load(std::memory_order_relaxed) & bit) == 0)
      used_.fetch_or(bit, std::memory_order_relaxed);
  }
  double peak(const OpNode& op, Precision p) const;
  const ComputeProfile& profile_;
  mutable std::atomic<unsigned> used_{0};
};

}  // namespace overlapsim::sim
