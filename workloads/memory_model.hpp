#pragma once
// Device memory a training configuration needs, per pipeline stage, term by term: the
// question a planner asks before timing anything ("does it fit?"). Closed forms follow
// Megatron-LM's accounting (mixed-precision weights, fp32 main grads and Adam states,
// sharded by the distributed optimizer) and Korthikanti et al. 2022 for activations (by
// recompute mode, sequence and context parallelism, and the in-flight micro-batches of the
// pipeline schedule). Every term names where its formula or constant comes from.
// docs/memory.md lists each term, its formula, its source and the validation against
// measured peaks.
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
  // The sum of the terms the caching allocator hands out (what PyTorch's
  // torch.cuda.max_memory_allocated reports): every term but the CUDA context, the
  // library workspaces and allocator fragmentation.
  double allocated_bytes() const;
  // The term called `name`, 0 when absent.
  double term_bytes(const std::string& name) const;
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

// The pieces estimate_memory adds up, for tests and reports. All take a resolved model.

// Parameters held by one rank of pipeline stage `stage` (all its virtual chunks):
// `dense` are sharded by the distributed optimizer over DP·CP, `expert` (MoE routed
// experts) over the expert-data-parallel group DP·CP/EP.
struct StageParameters {
  double dense = 0;
  double expert = 0;
  double total() const { return dense + expert; }
};
StageParameters stage_parameters(const ModelSpec& model, int stage);

// Bytes per parameter of the weights, gradients and optimizer states on one rank, by
// Megatron-LM's distributed-optimizer table; `shards` is the size of the group the
// distributed optimizer shards over (1 without it).
struct BytesPerParameter {
  double weights = 0;
  double gradients = 0;
  double optimizer = 0;
};
BytesPerParameter bytes_per_parameter(const ModelSpec& model, int shards);

// Activation bytes one rank keeps for one transformer layer and one micro-batch under the
// model's recompute mode (full: the layer's input only, for the layers it rebuilds: see
// fully_recomputed; `position` is the layer's place in its model chunk, 0 = first).
double layer_activation_bytes(const ModelSpec& model, int layer, int position);
// The same layer with nothing recomputed (the working set while a layer is recomputed).
double layer_activation_bytes_no_recompute(const ModelSpec& model, int layer);

// Micro-batches whose activations stage `stage` holds at its peak, counted in whole-stage
// units: 1F1B p - stage (at most the micro-batch count); interleaved 1F1B Megatron's
// warm-up plus one, in chunk passes, divided by the chunk count.
double in_flight_microbatches(const ModelSpec& model, int stage);

// DLRM: embedding rows the most loaded rank holds under the table plan the generator uses
// (plan_dlrm_sharding in workloads/dlrm.hpp): its model-parallel rows plus every
// replicated (data-parallel) table.
double dlrm_table_rows_per_rank(const ModelSpec& model);

}  // namespace overlapsim::workloads
