#include "planning/prescreen.hpp"

#include <algorithm>

namespace overlapsim::planning {

namespace {

using workloads::ModelKind;
using workloads::ModelSpec;

// Forward FLOPs per token of one layer's weight GEMMs and attention core, and the layer's
// weights (elements, all experts). MLA's projections are left out: a lower bound may omit
// work.
struct LayerCost {
  double flops_per_token = 0;
  double weights = 0;
};

LayerCost layer_cost(const ModelSpec& m, int layer, bool moe_layer) {
  const auto& t = m.transformer;
  const auto& a = t.attention;
  const double h = t.hidden;
  LayerCost c;
  if (a.kind == workloads::AttentionKind::Standard) {
    const double hd = a.head_dim > 0 ? a.head_dim : h / a.heads;
    const double proj = h * a.heads * hd * 2 + h * a.kv_heads * hd * 2;  // q, o; k, v
    c.weights += proj;
    c.flops_per_token += 2 * proj;
    // QK^T and PV: 2 x 2 x s x heads x hd per token, half of it under a causal mask; a
    // sliding window of w < s keys: (s·w − w²/2) / s keys per query on average.
    const double s = m.training.seq_len;
    const double core = 4.0 * s * a.heads * hd;
    if (a.windowed(layer) && a.window < s)
      c.flops_per_token += 4.0 * a.heads * hd * a.window_pairs(s) / s;
    else
      c.flops_per_token += a.causal ? core / 2 : core;
  }
  const double mats = t.mlp == workloads::MlpKind::Swiglu ? 3 : 2;
  if (moe_layer) {
    const auto& e = m.moe;
    c.weights += mats * h * e.expert_ffn_hidden * (e.experts + e.shared_experts) + h * e.experts;
    c.flops_per_token +=
        2 * (mats * h * e.expert_ffn_hidden * (e.top_k + e.shared_experts) + h * e.experts);
  } else {
    c.weights += mats * h * t.ffn_hidden;
    c.flops_per_token += 2 * mats * h * t.ffn_hidden;
  }
  return c;
}

}  // namespace

Prescreen prescreen(const ModelSpec& m, const workloads::ClusterSpec& cluster,
                    double peak_flops_per_s) {
  Prescreen out;
  if (m.kind == ModelKind::Dlrm) return out;  // one configuration: nothing to order
  const auto& p = m.parallelism;
  const auto& tr = m.training;
  const auto& t = m.transformer;
  const double gpus = 1.0 * p.dp * p.tp * p.pp * p.cp;
  const double tokens = 1.0 * tr.global_batch * tr.seq_len;

  double layer_flops = 0, weights = 1.0 * t.vocab * t.hidden;
  for (int l = 0; l < t.layers; ++l) {
    const bool moe_layer = m.kind == ModelKind::Moe && l >= m.moe.dense_layers;
    const LayerCost c = layer_cost(m, l, moe_layer);
    layer_flops += c.flops_per_token;
    weights += c.weights;
  }
  const double head_flops = 2.0 * t.hidden * t.vocab;
  // Forward, then backward at twice the forward; full recompute runs the rebuilt layers'
  // forward again (selective recompute re-runs only the attention core: left out of the
  // bound).
  const double rebuilt = workloads::fully_recomputed_share(m);
  const double passes = 3 + rebuilt;
  const double step_flops = tokens * (layer_flops * passes + head_flops * 3);
  const double microbatches = 1.0 * tr.global_batch / (1.0 * p.dp * tr.micro_batch);
  const double bubble = 1 + (p.pp - 1) / (microbatches * p.virtual_stages);
  out.lower_bound_s = step_flops / (gpus * peak_flops_per_s) * bubble;

  // Ordering heuristic: unhidden communication at the links' rates.
  const double elem_bytes = 2;  // bf16 activations
  double comm_s = 0;
  if (p.tp > 1 && cluster.intra_node.gpu_bandwidth_Bps > 0) {
    const double msg = elem_bytes * tr.micro_batch * tr.seq_len / p.cp * t.hidden;
    const double per_layer = 4 + 2 * rebuilt;
    const double ar_s = 2.0 * (p.tp - 1) / p.tp * msg / cluster.intra_node.gpu_bandwidth_Bps;
    comm_s += microbatches * (1.0 * t.layers / p.pp) * per_layer * ar_s;
  }
  const double nic_Bps = cluster.inter_node.nic_bandwidth_Bps;
  if (p.dp * p.cp > 1 && nic_Bps > 0) {
    const double grad_bytes = 4.0 * weights / (p.tp * p.pp);  // fp32 gradients
    const double n = 1.0 * p.dp * p.cp;
    comm_s += 2 * (n - 1) / n * grad_bytes / nic_Bps;
  }
  out.estimate_s = out.lower_bound_s + comm_s;
  return out;
}

}  // namespace overlapsim::planning
