#include "planning/search_space.hpp"

#include <algorithm>

#include "config/error.hpp"

namespace overlapsim::planning {

namespace {

std::vector<int> divisors(int n, int at_most) {
  std::vector<int> out;
  for (int d = 1; d <= std::min(n, at_most); ++d)
    if (n % d == 0) out.push_back(d);
  return out;
}

std::vector<int> powers_of_two(int at_most) {
  std::vector<int> out;
  for (int v = 1; v <= at_most; v *= 2) out.push_back(v);
  return out;
}

}  // namespace

workloads::ModelSpec configured_model(const workloads::ModelSpec& base, const PlanConfig& c,
                                      int gpus_per_node) {
  workloads::ModelSpec m = base;
  auto& p = m.parallelism;
  p.tp = c.tp;
  p.pp = c.pp;
  p.cp = c.cp;
  p.ep = c.ep;
  // The search keeps expert TP = TP (its EP is carved out of DP x CP); DeepEP and HybridEP
  // move whole experts' tokens (expert TP 1).
  p.etp = base.moe.hierarchical_dispatch() ? 1 : 0;
  p.dp = 0;
  p.virtual_stages = c.virtual_stages;
  p.sequence_parallel = c.sequence_parallel;
  p.first_stage_layers = 0;
  p.last_stage_layers = 0;
  p.embedding_in_split = false;
  p.loss_in_split = false;
  m.training.micro_batch = c.micro_batch;
  m.training.recompute = c.recompute;
  m.training.recompute_layers = 0;  // the search's full recompute rebuilds every layer
  workloads::validate_model(m);
  return workloads::resolve_for_world(m, c.gpus, gpus_per_node);
}

workloads::ClusterSpec configured_cluster(const workloads::ClusterSpec& base, int nodes) {
  workloads::ClusterSpec c = base;
  c.nodes = nodes;
  return c;
}

std::vector<PlanConfig> enumerate_configs(const workloads::ModelSpec& model,
                                          const workloads::ClusterSpec& cluster, int cluster_index,
                                          int nodes, const SearchLimits& limits,
                                          std::int64_t& invalid) {
  using workloads::Recompute;
  std::vector<PlanConfig> out;
  const int gpus = nodes * cluster.gpus_per_node;
  auto accept = [&](PlanConfig c) {
    try {
      c.dp = configured_model(model, c, cluster.gpus_per_node).parallelism.dp;
      out.push_back(c);
    } catch (const config::ConfigError&) {
      ++invalid;
    }
  };
  PlanConfig c;
  c.cluster = cluster_index;
  c.nodes = nodes;
  c.gpus = gpus;
  if (model.kind == workloads::ModelKind::Dlrm) {
    // Embeddings sharded over all ranks, MLPs data parallel: one configuration.
    c.micro_batch = model.training.micro_batch;
    c.recompute = model.training.recompute;
    accept(c);
    return out;
  }
  const int layers = model.transformer.layers;
  const int max_cp =
      limits.max_cp > 0 ? limits.max_cp : (model.training.seq_len >= kLongContext ? 8 : 1);
  const bool moe = model.kind == workloads::ModelKind::Moe;
  for (int tp : divisors(cluster.gpus_per_node, cluster.gpus_per_node))
    for (int cp : powers_of_two(max_cp))
      for (int pp : divisors(layers, layers)) {
        if (gpus % (tp * cp * pp) != 0) continue;
        const int dp = gpus / (tp * cp * pp);
        for (int v : divisors(layers / pp, pp > 1 ? limits.max_virtual_stages : 1))
          // With expert TP 1 (DeepEP / HybridEP) EP may span TP ranks too (MoE parallel
          // folding), as the Qwen3 235B recipe's EP 32 over TP 2 x DP 16 does.
          for (int ep : moe ? divisors(model.moe.experts,
                                       dp * cp * (model.moe.hierarchical_dispatch() ? tp : 1))
                            : std::vector<int>{1})
            for (int mb : powers_of_two(limits.max_micro_batch))
              for (Recompute rc : {Recompute::None, Recompute::Selective, Recompute::Full})
                for (bool sp : {false, true}) {
                  if (sp && tp == 1) continue;
                  if (moe && tp > 1 && !sp) continue;  // Megatron requires SP for MoE with TP
                  c.tp = tp, c.cp = cp, c.pp = pp, c.virtual_stages = v, c.ep = ep;
                  c.micro_batch = mb, c.recompute = rc, c.sequence_parallel = sp;
                  accept(c);
                }
      }
  return out;
}

}  // namespace overlapsim::planning
