#include "workloads/memory_model.hpp"

#include <gtest/gtest.h>

#include <iostream>
#include <string>

#include "workloads/cluster.hpp"
#include "workloads/model.hpp"

namespace overlapsim::workloads {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
const std::string kRoot = std::string(OVERLAPSIM_SOURCE_DIR) + "/";

// A tiny GPT: 4 layers, h 64, f 256, 4 heads of 16, vocab 1000, learned positions,
// LayerNorm, GeLU, unfused attention: every term can be worked out by hand.
std::string tiny_gpt(const std::string& training_extra, const std::string& parallelism,
                     const std::string& kernel = "unfused") {
  return R"(name: tiny-gpt
kind: transformer
transformer:
  layers: 4
  hidden: 64
  ffn_hidden: 256
  vocab: 1000
  mlp: gelu
  norm: layernorm
  position_embedding: learned
  attention:
    heads: 4
    head_dim: 16
    kernel: )" + kernel + R"(
training:
  seq_len: 128
  global_batch: 32
  micro_batch: 2
)" + training_extra +
         "parallelism:\n" + parallelism;
}

ClusterSpec cluster_of(int nodes, int gpus, const std::string& memory = "") {
  std::string yaml = "name: c\nnodes: " + std::to_string(nodes) +
                     "\ngpus_per_node: " + std::to_string(gpus) +
                     "\ngpu:\n  name: g\n  peak_bf16_flops: 1e15\n";
  if (!memory.empty()) yaml += "  memory_bytes: " + memory + "\n";
  yaml += "  source: test\nintra_node:\n  kind: nvswitch\n  gpu_bandwidth_Bps: 450GBps\n"
          "  latency_s: 1us\n  source: test\n";
  if (nodes > 1)
    yaml += "inter_node:\n  kind: switch\n  nic_bandwidth_Bps: 50GBps\n  link_latency_s: 1us\n"
            "  source: test\n";
  return parse_cluster(config::ConfigNode::load_string(yaml, "c.yaml"));
}

ModelSpec resolved(const std::string& yaml, int world, int gpus_per_node = 8) {
  return resolve_for_world(load_model_string(yaml, "m.yaml"), world, gpus_per_node);
}

TEST(MemoryModel, TinyGptParameterCountByHand) {
  const ModelSpec m = resolved(tiny_gpt("", "  tp: 1\n  pp: 1\n"), 1);
  // Per layer: 2 LayerNorms 2·2·64, QKV 64·192, out 64·64, MLP 2·64·256.
  const double layer = 2 * 2 * 64 + 64 * 192 + 64 * 64 + 2 * 64 * 256;
  // Embedding 1000·64, positions 128·64, final LayerNorm 2·64, output layer 1000·64.
  const double expected = 4 * layer + 1000 * 64 + 128 * 64 + 2 * 64 + 1000 * 64;
  EXPECT_DOUBLE_EQ(stage_parameters(m, 0).total(), expected);
  EXPECT_DOUBLE_EQ(stage_parameters(m, 0).expert, 0);
}

// MLA's per-head matrices grow linearly with the heads, also where heads x kv_lora_rank
// passes INT_MAX (65536 x 65536 = 2^32): the terms are summed in doubles.
TEST(MemoryModel, MlaHeadTermsStayLinearPastIntRange) {
  auto mla = [](int heads) {
    return "name: tiny-mla\nkind: transformer\ntransformer:\n  layers: 2\n  hidden: 64\n"
           "  ffn_hidden: 256\n  vocab: 1000\n  mlp: swiglu\n  norm: rmsnorm\n"
           "  position_embedding: rope\n  attention:\n    kind: mla\n    heads: " +
           std::to_string(heads) +
           "\n    kv_lora_rank: 65536\n    qk_nope_head_dim: 16\n    qk_rope_head_dim: 16\n"
           "    v_head_dim: 16\ntraining:\n  seq_len: 128\n  global_batch: 8\n"
           "  micro_batch: 1\nparallelism:\n  tp: 1\n  pp: 1\n";
  };
  const double one = stage_parameters(resolved(mla(1), 1), 0).total();
  const double many = stage_parameters(resolved(mla(65536), 1), 0).total();
  // Per head and layer: q 64·32, kv up 65536·(16 + 16), out 16·64.
  const double per_head = 64.0 * 32 + 65536.0 * 32 + 16.0 * 64;
  EXPECT_DOUBLE_EQ(many - one, 65535.0 * 2 * per_head);
}

TEST(MemoryModel, TpShardsMatricesButNotNorms) {
  const ModelSpec m = resolved(tiny_gpt("", "  tp: 2\n  pp: 2\n"), 4);
  const double layer = 2 * 2 * 64 + (64 * 192 + 64 * 64 + 2 * 64 * 256) / 2.0;
  EXPECT_DOUBLE_EQ(stage_parameters(m, 0).total(), 2 * layer + 1000 * 64 / 2.0 + 128 * 64);
  EXPECT_DOUBLE_EQ(stage_parameters(m, 1).total(), 2 * layer + 2 * 64 + 1000 * 64 / 2.0);
}

TEST(MemoryModel, UnevenStagesHoldTheirLayers) {
  const ModelSpec m = resolved(
      R"(name: u
kind: transformer
transformer: {layers: 10, hidden: 64, ffn_hidden: 256, vocab: 100, attention: {heads: 4}}
training: {seq_len: 16, global_batch: 8}
parallelism: {pp: 4, first_stage_layers: 1, last_stage_layers: 3}
)",
      4);
  // Middle stages: (10 - 1 - 3) / 2 = 3 layers each.
  const double layer = 2 * 2 * 64 + 4.0 * 64 * 64 + 2 * 64 * 256;
  EXPECT_DOUBLE_EQ(stage_parameters(m, 0).total(), 1 * layer + 100 * 64);
  EXPECT_DOUBLE_EQ(stage_parameters(m, 1).total(), 3 * layer);
  EXPECT_DOUBLE_EQ(stage_parameters(m, 3).total(), 3 * layer + 2 * 64 + 100 * 64);
}

TEST(MemoryModel, BytesPerParameterFollowMegatronTable) {
  // Megatron-LM distributed optimizer doc: bf16 param, fp32 grads: 18 (6 + 12/d);
  // bf16 grads: 20 (4 + 16/d); fp32 params: 16 (8 + 8/d).
  ModelSpec m = resolved(tiny_gpt("", "  tp: 1\n"), 8);
  BytesPerParameter b = bytes_per_parameter(m, 1);
  EXPECT_DOUBLE_EQ(b.weights + b.gradients + b.optimizer, 18);
  b = bytes_per_parameter(m, 8);
  EXPECT_DOUBLE_EQ(b.weights + b.gradients + b.optimizer, 6 + 12.0 / 8);
  m.training.grad_precision = sim::Precision::BF16;
  b = bytes_per_parameter(m, 4);
  EXPECT_DOUBLE_EQ(b.weights + b.gradients + b.optimizer, 4 + 16.0 / 4);
  m.training.precision = sim::Precision::FP32;
  m.training.grad_precision = sim::Precision::FP32;
  b = bytes_per_parameter(m, 2);
  EXPECT_DOUBLE_EQ(b.weights + b.gradients + b.optimizer, 8 + 8.0 / 2);
}

TEST(MemoryModel, Fp8WeightsKeepOnlyTheFp8CopyAndItsTranspose) {
  // fp8 GEMMs: bf16 weights plus their cached fp8 cast and transpose, 2 + 2; with fp8
  // weights (training.fp8_params) the fp8 weight and its transpose, 1 + 1.
  ModelSpec m = resolved(tiny_gpt("", "  tp: 1\n"), 8);
  m.training.precision = sim::Precision::FP8;
  m.training.grad_precision = sim::Precision::BF16;
  EXPECT_DOUBLE_EQ(bytes_per_parameter(m, 4).weights, 4);
  m.training.fp8_params = true;
  const BytesPerParameter b = bytes_per_parameter(m, 4);
  EXPECT_DOUBLE_EQ(b.weights, 2);
  EXPECT_DOUBLE_EQ(b.weights + b.gradients + b.optimizer, 2 + 2 + 16.0 / 4);
}

TEST(MemoryModel, DistributedOptimizerShardsOverDpTimesCp) {
  const std::string dist = "  grad_sync: distributed_optimizer\n";
  const ModelSpec plain = resolved(tiny_gpt("", "  cp: 2\n", "flash"), 8);
  const ModelSpec sharded = resolved(tiny_gpt(dist, "  cp: 2\n", "flash"), 8);
  const double params = stage_parameters(plain, 0).total();
  const auto a = estimate_memory(plain, cluster_of(1, 8)).stages[0];
  const auto b = estimate_memory(sharded, cluster_of(1, 8)).stages[0];
  EXPECT_DOUBLE_EQ(a.term_bytes("optimizer"), 12 * params);
  EXPECT_DOUBLE_EQ(b.term_bytes("optimizer"), 12 * params / 8);  // dp 4 · cp 2
  EXPECT_DOUBLE_EQ(b.term_bytes("gradients"), 4 * params);       // main grads stay whole
  EXPECT_DOUBLE_EQ(b.term_bytes("weights"), 2 * params);
}

// Korthikanti et al. 2022 per layer without dropout: of 34sbh + 5as²b, the two dropout
// masks (2sbh) and the attention dropout mask and output (3as²b) go: 32sbh + 2as²b; with
// SP everything is divided by t. Selective drops the s² term; full keeps 2sbh/t.
TEST(MemoryModel, KorthikantiActivationsPerLayerWithSp) {
  const double s = 128, b = 2, h = 64, a = 4, t = 2;
  const std::string par = "  tp: 2\n  sequence_parallel: true\n";
  const ModelSpec none = resolved(tiny_gpt("  recompute: none\n", par), 2);
  EXPECT_DOUBLE_EQ(layer_activation_bytes(none, 0, 0), s * b * h * 32 / t + 2 * a * s * s * b / t);
  const ModelSpec sel = resolved(tiny_gpt("  recompute: selective\n", par), 2);
  EXPECT_DOUBLE_EQ(layer_activation_bytes(sel, 0, 0), s * b * h * 32 / t);
  const ModelSpec full = resolved(tiny_gpt("  recompute: full\n", par), 2);
  EXPECT_DOUBLE_EQ(layer_activation_bytes(full, 0, 0), 2 * s * b * h / t);
  // Without SP the norm inputs and the two GEMM inputs (8sbh) stay whole:
  // sbh(8 + 24/t) + 2as²b/t.
  const ModelSpec nosp = resolved(tiny_gpt("  recompute: none\n", "  tp: 2\n"), 2);
  EXPECT_DOUBLE_EQ(layer_activation_bytes(nosp, 0, 0),
                   s * b * h * (8 + 24 / t) + 2 * a * s * s * b / t);
}

// With Megatron-LM's default dropout (attention and hidden 0.1) the layer is Korthikanti's
// sbh(34/t + 5as/(ht)) with SP exactly: the two hidden-dropout masks (1 byte each) and the
// attention dropout's mask and output (as²b + 2as²b). Selective recompute drops all of
// 5as²b; without SP the masks stay whole with the norm and GEMM inputs (10sbh). The first
// stage also keeps the embedding dropout's mask, sbh/t per micro-batch in flight.
std::string with_dropout(std::string yaml) {
  const std::string at = "  position_embedding: learned\n";
  yaml.replace(yaml.find(at), at.size(), at + "  attention_dropout: 0.1\n  hidden_dropout: 0.1\n");
  return yaml;
}

TEST(MemoryModel, KorthikantiActivationsWithDropoutMatchThePaper) {
  const double s = 128, b = 2, h = 64, a = 4, t = 2;
  const std::string par = "  tp: 2\n  sequence_parallel: true\n";
  const ModelSpec none = resolved(with_dropout(tiny_gpt("  recompute: none\n", par)), 2);
  EXPECT_DOUBLE_EQ(layer_activation_bytes(none, 0, 0), s * b * h * (34 / t + 5 * a * s / (h * t)));
  const ModelSpec sel = resolved(with_dropout(tiny_gpt("  recompute: selective\n", par)), 2);
  EXPECT_DOUBLE_EQ(layer_activation_bytes(sel, 0, 0), s * b * h * 34 / t);
  const ModelSpec nosp = resolved(with_dropout(tiny_gpt("  recompute: none\n", "  tp: 2\n")), 2);
  EXPECT_DOUBLE_EQ(layer_activation_bytes(nosp, 0, 0),
                   s * b * h * (10 + 24 / t) + 5 * a * s * s * b / t);
  // Flash attention keeps no dropout state: only the hidden masks are added (2sbh/t).
  const ModelSpec flash =
      resolved(with_dropout(tiny_gpt("  recompute: none\n", par, "flash")), 2);
  const ModelSpec flash_plain = resolved(tiny_gpt("  recompute: none\n", par, "flash"), 2);
  EXPECT_DOUBLE_EQ(layer_activation_bytes(flash, 0, 0) - layer_activation_bytes(flash_plain, 0, 0),
                   2 * s * b * h / t);
  // pp 1: one micro-batch in flight; the embedding mask sbh/t on top of the four layers.
  const auto with = estimate_memory(sel, cluster_of(1, 2)).stages[0];
  const auto layers = 4 * layer_activation_bytes(sel, 0, 0);
  EXPECT_DOUBLE_EQ(with.term_bytes("activations"), layers + s * b * h / t);
}

TEST(MemoryModel, ContextParallelSplitsTheSequence) {
  const double s = 128, b = 2, h = 64, a = 4, cp = 2;
  const ModelSpec m = resolved(tiny_gpt("  recompute: none\n", "  cp: 2\n", "flash"), 2);
  // Tokens per rank s/cp; flash attention keeps an fp32 log-sum-exp per head and token
  // instead of the scores.
  EXPECT_DOUBLE_EQ(layer_activation_bytes(m, 0, 0), s / cp * b * (h * 32 + 4 * a));
}

TEST(MemoryModel, FlashSwigluGqaLayer) {
  // Llama-style: RMSNorm, SwiGLU (f), GQA (kv heads), flash attention. Per token (bytes):
  // norm inputs 4h, QKV input 2h, Q 2q, K and V 4kv, output 2q, lse 4·heads, MLP input 2h,
  // gate, up and product 6f.
  const std::string yaml = R"(name: llama-tiny
kind: transformer
transformer: {layers: 2, hidden: 128, ffn_hidden: 352, vocab: 100, mlp: swiglu, norm: rmsnorm,
  attention: {heads: 8, kv_heads: 2, head_dim: 16}}
training: {seq_len: 64, global_batch: 4, micro_batch: 1, recompute: none}
parallelism: {tp: 1}
)";
  const ModelSpec m = resolved(yaml, 1);
  const double T = 64, h = 128, q = 128, kv = 32, f = 352, heads = 8;
  EXPECT_DOUBLE_EQ(layer_activation_bytes(m, 0, 0),
                   T * (4 * h + 2 * h + 2 * q + 4 * kv + 2 * q + 4 * heads + 2 * h + 6 * f));
  const double layer_params = 2 * h + h * (q + 2 * kv) + q * h + 3 * h * f;
  EXPECT_DOUBLE_EQ(stage_parameters(m, 0).total(), 2 * layer_params + 100 * h + h + 100 * h);
}

// QK-norm (Qwen3): the norms keep their inputs, the projected Q (2q bytes a token) and K
// (2kv), and add one RMSNorm weight of a head's width each for queries and keys.
TEST(MemoryModel, QkNormKeepsItsInputsAndTwoHeadWidthWeights) {
  const std::string yaml = R"(name: qk-tiny
kind: transformer
transformer: {layers: 2, hidden: 128, ffn_hidden: 352, vocab: 100, mlp: swiglu, norm: rmsnorm,
  attention: {heads: 8, kv_heads: 2, head_dim: 16, qk_norm: true}}
training: {seq_len: 64, global_batch: 4, micro_batch: 1, recompute: none}
parallelism: {tp: 1}
)";
  const ModelSpec m = resolved(yaml, 1);
  const double T = 64, h = 128, q = 128, kv = 32, f = 352, heads = 8, hd = 16;
  EXPECT_DOUBLE_EQ(layer_activation_bytes(m, 0, 0),
                   T * (4 * h + 2 * h + 2 * q + 4 * kv + 2 * q + 4 * heads + 2 * h + 6 * f) +
                       T * (2 * q + 2 * kv));
  const double layer_params = 2 * h + h * (q + 2 * kv) + q * h + 3 * h * f + 2 * hd;
  EXPECT_DOUBLE_EQ(stage_parameters(m, 0).total(), 2 * layer_params + 100 * h + h + 100 * h);
}

TEST(MemoryModel, GqaKvHeadsSplitOverTp) {
  // 8 query heads of 16, 2 KV heads, TP 2 with SP: each rank keeps 4 query heads and one
  // KV head. Per token: the norm inputs and the two GEMM inputs 8h/t, Q and
  // the attention output 4q/t, K and V 4·16 (one head each), the log-sum-exp 4·8/t, GeLU's
  // two f-wide tensors 4f/t.
  const std::string yaml = R"(name: gqa-tp
kind: transformer
transformer: {layers: 4, hidden: 128, ffn_hidden: 256, vocab: 128, attention: {heads: 8, kv_heads: 2, head_dim: 16}}
training: {seq_len: 32, global_batch: 4, micro_batch: 1, recompute: none}
parallelism: {tp: 2, sequence_parallel: true}
)";
  const ModelSpec m = resolved(yaml, 2);
  const double T = 32, h = 128, t = 2, q = 128, f = 256;
  EXPECT_DOUBLE_EQ(layer_activation_bytes(m, 0, 0),
                   T * (8 * h / t + 4 * q / t + 4 * 16 + 4 * 8 / t + 4 * f / t));
}

// Block recompute keeps the rebuilt layers' inputs only: pp 2 over 4 layers, the first of
// each stage's two rebuilt, the second kept whole.
TEST(MemoryModel, BlockRecomputeKeepsTheOtherLayersWhole) {
  const ModelSpec m =
      resolved(tiny_gpt("  recompute: full\n  recompute_layers: 1\n", "  pp: 2\n"), 2);
  const double s = 128, b = 2, h = 64;
  EXPECT_DOUBLE_EQ(layer_activation_bytes(m, 0, 0), 2 * s * b * h);
  EXPECT_DOUBLE_EQ(layer_activation_bytes(m, 1, 1), layer_activation_bytes_no_recompute(m, 1));
  const auto est = estimate_memory(m, cluster_of(1, 2));
  // 1F1B: stage 0 holds 2 micro-batches, stage 1 one (no dropout: no embedding mask).
  ASSERT_EQ(m.transformer.hidden_dropout, 0);
  EXPECT_DOUBLE_EQ(est.stages[0].term_bytes("activations"),
                   2 * (2 * s * b * h + layer_activation_bytes_no_recompute(m, 1)));
  EXPECT_DOUBLE_EQ(est.stages[1].term_bytes("activations"),
                   2 * s * b * h + layer_activation_bytes_no_recompute(m, 3));
}

TEST(MemoryModel, RecomputeLayersOnlyWithFullRecompute) {
  try {
    load_model_string(tiny_gpt("  recompute: selective\n  recompute_layers: 2\n", "  pp: 1\n"),
                      "m.yaml");
    FAIL() << "recompute_layers with selective recompute was accepted";
  } catch (const config::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("recompute_layers"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("only with recompute: full"), std::string::npos);
  }
}

TEST(MemoryModel, StageActivationsAreInFlightTimesLayers) {
  // pp 4 over 4 layers, 16 micro-batches: stage i keeps 4 - i micro-batches of its layer.
  const ModelSpec m = resolved(tiny_gpt("  recompute: selective\n", "  pp: 4\n"), 4);
  const auto est = estimate_memory(m, cluster_of(1, 4));
  for (int i = 0; i < 4; ++i)
    EXPECT_DOUBLE_EQ(est.stages[i].term_bytes("activations"),
                     (4 - i) * layer_activation_bytes(m, i, 0));
  // The loss's working set only on the last stage: 4sbh + 4sbv + 2sbv (t = 1).
  const double T = 128 * 2, h = 64, v = 1000;
  EXPECT_DOUBLE_EQ(est.stages[3].term_bytes("backward working set"), 4 * T * h + 6 * T * v);
  EXPECT_LT(est.stages[0].term_bytes("backward working set"), 4 * T * h + 6 * T * v);
}

TEST(MemoryModel, OneFOneBInFlightMicrobatches) {
  // 32 sequences / (dp 1 · micro_batch 2) = 16 micro-batches; stage i holds pp - i.
  const ModelSpec m = resolved(tiny_gpt("", "  pp: 4\n"), 4);
  for (int i = 0; i < 4; ++i) EXPECT_DOUBLE_EQ(in_flight_microbatches(m, i), 4 - i);
  // Fewer micro-batches than stages: all of them.
  const ModelSpec few = resolved(tiny_gpt("", "  pp: 4\n  dp: 8\n"), 32);  // 2 micro-batches
  EXPECT_DOUBLE_EQ(in_flight_microbatches(few, 0), 2);
}

TEST(MemoryModel, InterleavedInFlightFollowsMegatronWarmup) {
  // p 2, v 2, m 16: stage 0 warm-up (2-0-1)·2 + (2-1)·2 = 4 chunk passes, +1 = 5, in
  // units of whole-stage micro-batches 5/2 = p(1 + (p-1)/(pv)) = 2.5 (Korthikanti sec. 4.2.3).
  const ModelSpec m = resolved(tiny_gpt("", "  pp: 2\n  virtual_stages: 2\n"), 2);
  EXPECT_DOUBLE_EQ(in_flight_microbatches(m, 0), 2.5);
  EXPECT_DOUBLE_EQ(in_flight_microbatches(m, 1), 1.5);  // (0 + 2 + 1) / 2
  // Activations of stage 0 = 2.5 micro-batches of its 2 layers.
  const auto est = estimate_memory(m, cluster_of(1, 2));
  EXPECT_DOUBLE_EQ(est.stages[0].term_bytes("activations"), 2.5 * 2 * layer_activation_bytes(m, 0, 0));
}

const char* kTinyMoe = R"(name: moe-tiny
kind: moe
transformer: {layers: 2, hidden: 64, ffn_hidden: 256, vocab: 100, mlp: swiglu, norm: rmsnorm,
  attention: {heads: 4}}
moe: {experts: 8, top_k: 2, shared_experts: 1, expert_ffn_hidden: 32, dense_layers: 1}
training: {seq_len: 16, global_batch: 8, grad_sync: distributed_optimizer}
parallelism: {ep: 4}
)";

TEST(MemoryModel, ExpertsSplitOverEp) {
  const ModelSpec m = resolved(kTinyMoe, 8);
  const double h = 64, ef = 32;
  const double attn = 2 * h + 4 * h * h;
  const double dense_layer = attn + 3 * h * 256;
  const double moe_dense = attn + h * 8 + 3 * h * ef;  // router, one shared expert
  const StageParameters p = stage_parameters(m, 0);
  EXPECT_DOUBLE_EQ(p.expert, 8 / 4 * 3 * h * ef);      // 2 of 8 experts per rank
  EXPECT_DOUBLE_EQ(p.dense, dense_layer + moe_dense + 100 * h + h + 100 * h);
  // The distributed optimizer shards experts over dp·cp/ep = 2, dense over dp = 8.
  const auto s = estimate_memory(m, cluster_of(1, 8)).stages[0];
  EXPECT_DOUBLE_EQ(s.term_bytes("optimizer"), 12 * p.dense / 8 + 12 * p.expert / 2);
}

TEST(MemoryModel, ExpertTpOfOneKeepsWholeExperts) {
  // TP 2 over 8 GPUs: expert TP 2 with EP 4 (default) against expert TP 1 with EP 8.
  const std::string tp2 =
      std::string(kTinyMoe).replace(std::string(kTinyMoe).find("parallelism: {ep: 4}"), 20,
                                    "parallelism: {tp: 2, sequence_parallel: true, ep: 2}");
  const ModelSpec split = resolved(tp2, 8);
  const std::string f = std::string(tp2).replace(tp2.find("ep: 2}"), 6, "ep: 8, etp: 1}");
  const ModelSpec folded = resolved(f, 8);
  const double h = 64, ef = 32;
  // Routed experts: 8 / 2 experts of 3·h·ef / 2 against 8 / 8 whole ones; the shared expert
  // stays split over TP in both.
  EXPECT_DOUBLE_EQ(stage_parameters(split, 0).expert, 8.0 / 2 * 3 * h * ef / 2);
  EXPECT_DOUBLE_EQ(stage_parameters(folded, 0).expert, 8.0 / 8 * 3 * h * ef);
  EXPECT_DOUBLE_EQ(stage_parameters(folded, 0).dense, stage_parameters(split, 0).dense);
  // The distributed optimizer shards experts over expert-DP: tp·dp / (ep·etp) = 8 / 4 = 2
  // and 8 / 8 = 1.
  const auto s = estimate_memory(split, cluster_of(1, 8)).stages[0];
  const auto g = estimate_memory(folded, cluster_of(1, 8)).stages[0];
  const double dense = stage_parameters(split, 0).dense;
  EXPECT_DOUBLE_EQ(s.term_bytes("optimizer"),
                   12 * dense / 4 + 12 * stage_parameters(split, 0).expert / 2);
  EXPECT_DOUBLE_EQ(g.term_bytes("optimizer"),
                   12 * dense / 4 + 12 * stage_parameters(folded, 0).expert / 1);
}

TEST(MemoryModel, DlrmTablesSplitOverRanks) {
  const ModelSpec m = resolved(R"(name: d
kind: dlrm
dlrm:
  dense_features: 13
  embedding_dim: 16
  tables: [{rows: 1000, hotness: 3}, {rows: 600, hotness: 1}]
  bottom_mlp: [32, 16]
  top_mlp: [64, 1]
  dcn_layers: 2
  dcn_rank: 8
training: {global_batch: 64}
parallelism: {dp: 8}
)",
                               8);
  EXPECT_DOUBLE_EQ(dlrm_table_rows_per_rank(m), 1600.0 / 8);
  const auto s = estimate_memory(m, cluster_of(1, 8)).stages[0];
  EXPECT_DOUBLE_EQ(s.term_bytes("embedding tables"), 200.0 * 16 * 4);
  EXPECT_DOUBLE_EQ(s.term_bytes("embedding optimizer"), 200.0 * 4);  // row-wise Adagrad
  // Dense: bottom 13·32+32 + 32·16+16; DCN input 16 + 2·16 = 48: 2·(2·48·8 + 48); top
  // 48·64+64 + 64+1. fp32 weights.
  const double dense = (13 * 32 + 32 + 32 * 16 + 16) + 2 * (2 * 48 * 8 + 48) + (48 * 64 + 64 + 64 + 1);
  EXPECT_DOUBLE_EQ(s.term_bytes("weights"), 4 * dense);
}

TEST(MemoryModel, DlrmHybridShardingReplicatesSmallTables) {
  // Tables of <= 600 rows replicated: the 600-row table on every rank (dense fp32
  // gradient and Adagrad state per element), the 1000-row table split over 8 ranks.
  const ModelSpec m = resolved(R"(name: d
kind: dlrm
dlrm:
  dense_features: 13
  embedding_dim: 16
  tables: [{rows: 1000, hotness: 3}, {rows: 600, hotness: 1}]
  bottom_mlp: [32, 16]
  top_mlp: [64, 1]
  dcn_layers: 2
  dcn_rank: 8
  data_parallel_max_rows: 600
training: {global_batch: 64}
parallelism: {dp: 8}
)",
                               8);
  EXPECT_DOUBLE_EQ(dlrm_table_rows_per_rank(m), 1000.0 / 8 + 600);
  const auto s = estimate_memory(m, cluster_of(1, 8)).stages[0];
  EXPECT_DOUBLE_EQ(s.term_bytes("embedding tables"), (125.0 + 600) * 16 * 4);
  EXPECT_DOUBLE_EQ(s.term_bytes("embedding optimizer"), 125.0 * 4 + 600.0 * 16 * 4);
  EXPECT_DOUBLE_EQ(s.term_bytes("embedding gradients"), 600.0 * 16 * 4);
}

TEST(MemoryModel, ExplainNamesTheStageTermsAndCapacity) {
  const ModelSpec m = resolved(tiny_gpt("", "  pp: 2\n"), 2);
  const auto est = estimate_memory(m, cluster_of(1, 2, "1MiB"));
  EXPECT_FALSE(est.fits());
  const std::string text = est.explain();
  EXPECT_EQ(text.rfind("stage " + std::to_string(est.peak_stage()) + " needs ", 0), 0u) << text;
  EXPECT_NE(text.find("optimizer"), std::string::npos) << text;
  EXPECT_NE(text.find("; the GPU has 0.0 GiB"), std::string::npos) << text;
  EXPECT_TRUE(estimate_memory(m, cluster_of(1, 2)).fits());  // capacity unknown
}

ModelSpec shipped(const std::string& name, const ClusterSpec& c) {
  return resolve_for_world(load_model(kRoot + "workloads/models/" + name + ".yaml"), c.num_gpus(),
                           c.gpus_per_node);
}

TEST(MemoryModel, Llama70bTp1Pp1DoesNotFitOnH200) {
  const ClusterSpec c = load_cluster(kRoot + "workloads/clusters/h200-128node-ndr.yaml");
  ModelSpec spec = load_model(kRoot + "workloads/models/llama3-70b.yaml");
  spec.parallelism.tp = 1;
  spec.parallelism.pp = 1;
  spec.parallelism.virtual_stages = 1;
  spec.parallelism.first_stage_layers = 0;
  spec.parallelism.last_stage_layers = 0;
  spec.parallelism.sequence_parallel = false;
  spec.parallelism.dp = 0;
  const ModelSpec m = resolve_for_world(spec, c.num_gpus(), c.gpus_per_node);
  const auto est = estimate_memory(m, c);
  EXPECT_FALSE(est.fits()) << est.explain();
  std::cout << "llama3-70b tp1 pp1: " << est.explain() << "\n";
  // ~70.6e9 params: 2 + 4 bytes of weights and main grads alone are ~420 GB.
  EXPECT_GT(est.peak_bytes(), 420e9) << est.explain();
}

TEST(MemoryModel, Gpt3Tp2Pp8DoesNotFitOn141GB) {
  const ClusterSpec c = load_cluster(kRoot + "workloads/clusters/h200-128node-ndr.yaml");
  // The issue's case: Narayanan et al. 2021's setup (table 1: plain data-parallel
  // all-reduce, full recompute, no sequence parallelism) at TP2 PP8.
  ModelSpec spec = load_model(kRoot + "workloads/models/gpt3-175b.yaml");
  spec.parallelism.tp = 2;
  spec.parallelism.pp = 8;
  spec.parallelism.virtual_stages = 1;
  spec.parallelism.first_stage_layers = 0;
  spec.parallelism.last_stage_layers = 0;
  spec.parallelism.sequence_parallel = false;
  spec.parallelism.dp = 0;
  spec.training.grad_sync = GradSync::AllReduce;
  spec.training.recompute = Recompute::Full;
  spec.training.micro_batch = 1;
  const ModelSpec m = resolve_for_world(spec, c.num_gpus(), c.gpus_per_node);
  const auto est = estimate_memory(m, c);
  EXPECT_FALSE(est.fits()) << est.explain();
  std::cout << "gpt3-175b tp2 pp8: " << est.explain() << "\n";
}

TEST(MemoryModel, ShippedModelsFitOnH200Cluster) {
  const ClusterSpec c = load_cluster(kRoot + "workloads/clusters/h200-128node-ndr.yaml");
  ASSERT_TRUE(c.gpu && c.gpu->memory_bytes);
  for (const char* name :
       {"gpt3-175b", "llama3-70b", "llama3-405b", "mixtral-8x7b", "deepseek-v3", "dlrm-dcnv2"}) {
    const ModelSpec m = shipped(name, c);
    const auto est = estimate_memory(m, c);
    EXPECT_TRUE(est.fits()) << name << ": " << est.explain();
    std::cout << name << ": " << est.explain() << "\n";
    EXPECT_GT(est.peak_bytes(), 1 * kGiB) << name;
  }
}

}  // namespace
}  // namespace overlapsim::workloads
