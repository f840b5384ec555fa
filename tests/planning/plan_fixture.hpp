#pragma once
// A model and cluster small enough to plan by hand, written to a temporary directory.
//
// Model: 2 layers, hidden 4096, vocabulary 32000 (about 0.53 G parameters: 0.40 G in the
// layers, 0.13 G in the tied embedding), global batch 4 of 512 tokens, plain data-parallel
// all-reduce. Mixed-precision Adam keeps 16 bytes per parameter without sharding (bf16
// weights and grads, fp32 master, m and v), about 8.5 GB on one GPU.
// Cluster: 1 node of 2 H200-class GPUs with 10 GB each, on NVSwitch.
//  - Unsharded (TP1 PP1, DP2) needs ~10.8 GiB > 9.3 GiB: rejected for memory, whatever the
//    micro-batch and recompute mode.
//  - TP2 and PP2 both fit (DP1). TP2 splits every GEMM over the two GPUs with no bubble,
//    paying a few small all-reduces on NVSwitch; PP2 splits the layers and pays the
//    pipeline bubble, (pp - 1) / microbatches = 1/4 to 1 of a stage's work. TP2 PP1 DP1
//    is the fastest, with no recompute (full recompute adds a forward pass).
#include <filesystem>
#include <fstream>
#include <string>

namespace overlapsim::testing {

inline std::string plan_model_yaml(const std::string& name = "tiny-plan") {
  return "name: \"" + name + R"("
kind: transformer
source: test fixture
transformer:
  layers: 2
  hidden: 4096
  ffn_hidden: 16384
  vocab: 32000
  mlp: gelu
  norm: layernorm
  position_embedding: learned
  bias: false
  tie_embeddings: true
  attention:
    heads: 32
    head_dim: 128
    causal: true
training:
  seq_len: 512
  global_batch: 4
  micro_batch: 1
  precision: bf16
  grad_precision: fp32
  recompute: none
  grad_sync: allreduce
  grad_bucket: 25MiB
parallelism:
  dp: auto
  tp: 1
  pp: 1
  cp: 1
)";
}

inline std::string plan_cluster_yaml(const std::string& memory = "10GB", bool price = true) {
  std::string y = R"(name: tiny-plan-cluster
description: 1 node x 2 GPUs, for planner tests
nodes: 1
gpus_per_node: 2
gpu:
  name: test GPU
  profile: )" + std::string(OVERLAPSIM_SOURCE_DIR) +
                  R"(/calibration/profiles/datasheet-h200.yaml
  memory_bytes: {value: )" +
                  memory +
                  R"(, source: "assumed: test capacity"}
intra_node:
  kind: nvswitch
  gpu_bandwidth_Bps: 450GBps
  latency_s: 0.3us
  source: "assumed: test fabric"
inter_node:
  kind: rail-fat-tree
  nics_per_node: 2
  nic_bandwidth_Bps: 400Gbps
  gpu_nic_bandwidth_Bps: 63GBps
  gpu_nic_latency_s: 1us
  link_latency_s: 0.15us
  leaf_radix: 32
  spines: 1
  oversubscription: 1
  source: "assumed: test fabric"
)";
  if (price) y += "price_per_gpu_hour_usd: {value: 2.5, source: \"assumed: test price\"}\n";
  return y;
}

inline std::string write_text(const std::filesystem::path& path, const std::string& text) {
  std::ofstream(path) << text;
  return path.string();
}

}  // namespace overlapsim::testing
