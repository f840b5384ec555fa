#pragma once
// Device memory a training configuration needs, per pipeline stage, term by term: the
// question a planner asks before timing anything ("does it fit?"). Closed forms follow
// Megatron-LM's accounting (mixed-precision weights, fp32 main grads and Adam states,
// sharded by the distributed optimizer) and Korthikanti et al. 2022 for activations (by
// recompute mode, sequence and context parallelism, and the in-flight micro-batches of the
// pipeline schedule). Every term names where its formula or constant comes from.
#include <string>
#include <vector>

#include "workloads/cluster.hpp"
#include "workloads/model.hpp"

namespace overlapsim::workloads {

struct MemoryTerm {
  std::string name;    // "weights", "gradients", "optimizer", "activations", ...
  double bytes = 0;    // on the most loaded rank of the stage
  std::string source;  // the formula's citation, or "assumed: ..." / "measured: ..."
};

struct StageMemory {
  int stage = 0;
  std::vector<MemoryTerm> terms;
  double total_bytes() const;
};

struct MemoryEstimate {
  std::vector<StageMemory> stages;  // one per pipeline stage, stage 0 first
  double capacity_bytes = 0;        // the GPU's memory_bytes; 0: the cluster does not say

  // The stage with the largest total (the lowest index on ties).
  int peak_stage() const;
  double peak_bytes() const;
  // True when capacity is unknown (nothing to check against) or every stage fits.
  bool fits() const;
  // "stage 0 needs 171.3 GiB: activations 92.1, optimizer 48.0, ...; the GPU has 141.0 GiB"
  std::string explain() const;
};

// `model` must be resolved for the cluster (resolve_for_world). Never throws for a model
// that validate_model accepted.
MemoryEstimate estimate_memory(const ModelSpec& model, const ClusterSpec& cluster);

}  // namespace overlapsim::workloads
