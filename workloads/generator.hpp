#pragma once
// Entry point of the workload generators: one training step of a model as per-rank
// operation graphs (sim/graph/op_graph.hpp).
//
// Identical ranks are folded by default: every rank of a pipeline stage runs the same
// ops (TP, CP, DP and EP peers are symmetric under uniform routing), so one
// representative per stage is emitted -- the rank with tp = cp = dp = 0, whose pipeline
// neighbours are the other representatives -- with multiplicity tp·cp·dp. DLRM has one
// stage, so one rank stands for all. With fold = false every rank is emitted.
#include "sim/graph/op_graph.hpp"
#include "workloads/model.hpp"

namespace overlapsim::workloads {

struct GenerateOptions {
  bool fold = true;
  int gpus_per_node = 0;  // > 0: check that a TP group stays inside a node
};

// Resolves dp from world_size (resolve_for_world) and emits the step. Throws
// config::ConfigError for a model that does not fit world_size.
sim::StepGraph generate_step(const ModelSpec& spec, int world_size,
                             const GenerateOptions& options = {});

// Microbatches per DP rank in one step: global_batch / (micro_batch · dp).
int microbatches_per_step(const ModelSpec& resolved);
// The same without narrowing: global_batch / (micro_batch·dp) of a file may pass 2^31.
std::int64_t microbatch_count(const ModelSpec& resolved);

}  // namespace overlapsim::workloads
