#pragma once
// The parallelism search space of one cluster at one node count: every combination of
// TP (divisors of the GPUs per node), CP, PP (divisors of the layers: even stages only),
// virtual stages, EP (MoE), micro-batch (powers of two), sequence parallelism (with TP > 1)
// and recompute mode that the model's own rules accept (validate_model, resolve_for_world);
// DP is what is left of the GPUs, and the model file's global batch stays fixed.
#include <cstdint>
#include <vector>

#include "planning/plan_result.hpp"
#include "workloads/cluster.hpp"
#include "workloads/model.hpp"

namespace overlapsim::planning {

struct SearchLimits {
  int max_virtual_stages = 4;
  int max_micro_batch = 8;
  // Largest context-parallel size; 0: 8 where seq_len >= kLongContext tokens, else 1 (CP
  // splits long sequences; shorter ones leave too little work per rank to split).
  int max_cp = 0;
};
inline constexpr int kLongContext = 8192;

// The configurations on `nodes` nodes of `cluster`, in a fixed order; `invalid` counts the
// combinations the model's rules refused.
std::vector<PlanConfig> enumerate_configs(const workloads::ModelSpec& model,
                                          const workloads::ClusterSpec& cluster, int cluster_index,
                                          int nodes, const SearchLimits& limits,
                                          std::int64_t& invalid);

// The model with the configuration's parallelism, micro-batch and recompute, resolved for
// its GPUs. Throws config::ConfigError where the model's rules refuse it.
workloads::ModelSpec configured_model(const workloads::ModelSpec& base, const PlanConfig& config,
                                      int gpus_per_node);

// The cluster file's node type at the configuration's node count.
workloads::ClusterSpec configured_cluster(const workloads::ClusterSpec& base, int nodes);

}  // namespace overlapsim::planning
