#include "workloads/model.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "config/error.hpp"
#include "tests/workloads/workloads_test_util.hpp"
#include "workloads/generator.hpp"

using namespace overlapsim;
using namespace overlapsim::workloads;
using workloads::testing::edit;
using workloads::testing::error_of;
using workloads::testing::kTinyMoe;

namespace {

const char* kTiny = R"(name: tiny
kind: transformer
transformer:
  layers: 4
  hidden: 256
  ffn_hidden: 1024
  vocab: 1000
  mlp: swiglu
  attention:
    heads: 8
    kv_heads: 4
training:
  seq_len: 128
  global_batch: 16
  micro_batch: 1
parallelism:
  dp: 2
  tp: 2
  sequence_parallel: true
  pp: 2
  cp: 2
)";

const char* kTinyDlrm = R"(name: tiny-dlrm
kind: dlrm
dlrm:
  dense_features: 13
  embedding_dim: 16
  tables:
    - {rows: 1000, hotness: 3}
    - {rows: 50, hotness: 1}
  bottom_mlp: [32, 16]
  top_mlp: [64, 1]
  dcn_layers: 2
  dcn_rank: 8
training:
  global_batch: 64
parallelism:
  dp: 8
)";

// 1-based line of the first line containing `needle`.
int line_of(const std::string& text, const std::string& needle) {
  auto at = text.find(needle);
  int line = 1;
  for (std::size_t i = 0; i < at && i < text.size(); ++i) line += text[i] == '\n';
  return line;
}

// The error names the file and line of `line_needle`, the key, and the expected form.
void expect_error(const std::string& msg, const std::string& text, const std::string& line_needle,
                  const std::string& key, const std::string& file = "m.yaml") {
  EXPECT_NE(msg.find(file + ":" + std::to_string(line_of(text, line_needle)) + ":"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find(key), std::string::npos) << msg;
  EXPECT_NE(msg.find("expected"), std::string::npos) << msg;
}

std::string load_error(const std::string& text) {
  return error_of([&] { load_model_string(text, "m.yaml"); });
}

}  // namespace

TEST(ModelYaml, ShippedModelsLoad) {
  for (const char* name :
       {"gpt3-175b", "llama3-70b", "llama3-405b", "mixtral-8x7b", "deepseek-v3", "dlrm-dcnv2"}) {
    std::string path = std::string(OVERLAPSIM_SOURCE_DIR) + "/workloads/models/" + name + ".yaml";
    ModelSpec spec;
    ASSERT_NO_THROW(spec = load_model(path)) << name;
    EXPECT_EQ(spec.name, name);
    // Every shipped model fits 128 nodes x 8 GPUs with TP inside a node.
    EXPECT_NO_THROW(resolve_for_world(spec, 1024, 8)) << name;
  }
}

TEST(ModelYaml, ShippedDimensionsMatchThePapers) {
  auto gpt3 = load_model(std::string(OVERLAPSIM_SOURCE_DIR) + "/workloads/models/gpt3-175b.yaml");
  EXPECT_EQ(gpt3.transformer.layers, 96);
  EXPECT_EQ(gpt3.transformer.hidden, 12288);
  EXPECT_EQ(gpt3.transformer.attention.heads, 96);
  EXPECT_EQ(gpt3.transformer.ffn_hidden, 49152);
  EXPECT_EQ(gpt3.training.seq_len, 2048);
  EXPECT_EQ(gpt3.transformer.vocab, 51200);
  auto l405 = load_model(std::string(OVERLAPSIM_SOURCE_DIR) + "/workloads/models/llama3-405b.yaml");
  EXPECT_EQ(l405.transformer.attention.kv_heads, 8);
  EXPECT_EQ(l405.transformer.vocab, 128256);
  auto r = resolve_for_world(l405, 16384, 8);
  EXPECT_EQ(r.parallelism.dp, 128);  // Dubey et al. 2024 table 4: TP8 CP1 PP16 DP128
  auto dlrm = load_model(std::string(OVERLAPSIM_SOURCE_DIR) + "/workloads/models/dlrm-dcnv2.yaml");
  EXPECT_EQ(dlrm.dlrm.tables.size(), 26u);
  int hot = 0;
  for (const auto& t : dlrm.dlrm.tables) hot += t.hotness;
  EXPECT_EQ(hot, 214);  // sum of the MLPerf multi-hot sizes
}

TEST(ModelYaml, DefaultsAreDocumented) {
  auto spec = load_model_string(kTiny, "m.yaml");
  EXPECT_EQ(spec.training.grad_bucket_bytes, 25ull << 20);
  EXPECT_EQ(spec.training.grad_precision, sim::Precision::FP32);
  EXPECT_EQ(spec.training.recompute, Recompute::None);
  EXPECT_EQ(spec.transformer.attention.causal, true);
  for (const char* section :
       {"", "transformer", "transformer.attention", "moe", "dlrm", "training", "parallelism"})
    EXPECT_FALSE(model_param_docs(section).empty()) << section;
}

TEST(ModelYaml, OverlapSectionIsNotAKey) {
  // Which design runs on which pair is the run's choice (--design), not the model file's.
  EXPECT_THROW(load_model_string(std::string(kTiny) + "overlap:\n  gemm_allreduce: [fused]\n",
                                 "m.yaml"),
               config::ConfigError);
}

// ---- one test per rule ----

TEST(ModelRules, UnknownKey) {
  std::string text = edit(kTiny, {{"  layers: 4", "  layerz: 4"}});
  expect_error(load_error(text), text, "layerz", "transformer.layerz");
}

TEST(ModelRules, MissingRequiredKey) {
  std::string text = edit(kTiny, {{"  vocab: 1000\n", ""}});
  std::string msg = load_error(text);
  EXPECT_NE(msg.find("m.yaml:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("transformer.vocab: missing"), std::string::npos) << msg;
}

TEST(ModelRules, Fp8ScalingOnlyWithFp8) {
  const std::string fp8 =
      edit(kTiny, {{"  micro_batch: 1", "  micro_batch: 1\n  precision: fp8\n  fp8_scaling: block128"}});
  EXPECT_EQ(load_model_string(fp8, "m.yaml").training.fp8_scaling, Fp8Scaling::Block128);
  const std::string current =
      edit(kTiny, {{"  micro_batch: 1", "  micro_batch: 1\n  precision: fp8\n  fp8_scaling: current"}});
  EXPECT_EQ(load_model_string(current, "m.yaml").training.fp8_scaling, Fp8Scaling::Current);
  const std::string bf16 =
      edit(kTiny, {{"  micro_batch: 1", "  micro_batch: 1\n  fp8_scaling: block128"}});
  expect_error(load_error(bf16), bf16, "fp8_scaling", "training.fp8_scaling");
  const std::string bad =
      edit(kTiny, {{"  micro_batch: 1", "  micro_batch: 1\n  precision: fp8\n  fp8_scaling: block64"}});
  expect_error(load_error(bad), bad, "fp8_scaling", "training.fp8_scaling");
  auto ds = load_model(std::string(OVERLAPSIM_SOURCE_DIR) + "/workloads/models/deepseek-v3.yaml");
  EXPECT_EQ(ds.training.fp8_scaling, Fp8Scaling::Block128);  // its report, sec. 3.3.1
}

TEST(ModelRules, UnknownKind) {
  std::string text = edit(kTiny, {{"kind: transformer", "kind: rnn"}});
  expect_error(load_error(text), text, "kind: rnn", "kind");
}

TEST(ModelRules, BadUnit) {
  std::string text =
      edit(kTiny, {{"  micro_batch: 1", "  micro_batch: 1\n  grad_bucket: 25 apples"}});
  expect_error(load_error(text), text, "grad_bucket", "training.grad_bucket");
}

TEST(ModelRules, NonPositiveSize) {
  std::string text = edit(kTiny, {{"  layers: 4", "  layers: 0"}});
  expect_error(load_error(text), text, "layers: 0", "transformer.layers");
}

TEST(ModelRules, HeadsMustDivideHidden) {
  std::string text =
      edit(kTiny, {{"    heads: 8", "    heads: 6"}, {"kv_heads: 4", "kv_heads: 6"}});
  expect_error(load_error(text), text, "heads: 6", "transformer.attention.heads");
}

TEST(ModelRules, KvHeadsMustDivideHeads) {
  std::string text = edit(kTiny, {{"kv_heads: 4", "kv_heads: 3"}});
  expect_error(load_error(text), text, "kv_heads: 3", "transformer.attention.kv_heads");
}

TEST(ModelRules, TpMustDivideHeads) {
  std::string text = edit(kTiny, {{"  tp: 2", "  tp: 16"}});
  std::string msg = load_error(text);
  expect_error(msg, text, "tp: 16", "parallelism.tp");
  EXPECT_NE(msg.find("attention heads = 8"), std::string::npos) << msg;
}

TEST(ModelRules, TpMustDivideKvHeadsForGqa) {
  std::string text = edit(kTiny, {{"  tp: 2", "  tp: 8"}});
  std::string msg = load_error(text);
  expect_error(msg, text, "tp: 8", "parallelism.tp");
  EXPECT_NE(msg.find("kv_heads = 4"), std::string::npos) << msg;
}

TEST(ModelRules, TpMustDivideFfn) {
  std::string text = edit(kTiny, {{"ffn_hidden: 1024", "ffn_hidden: 1023"}});
  std::string msg = load_error(text);
  expect_error(msg, text, "tp: 2", "parallelism.tp");
  EXPECT_NE(msg.find("ffn_hidden"), std::string::npos) << msg;
}

TEST(ModelRules, CpMustDivideSequence) {
  std::string text = edit(kTiny, {{"  cp: 2", "  cp: 3"}, {"  dp: 2", "  dp: auto"}});
  expect_error(load_error(text), text, "cp: 3", "parallelism.cp");
}

TEST(ModelRules, SequenceParallelNeedsTpToDivideSequence) {
  std::string text = edit(kTiny, {{"seq_len: 128", "seq_len: 129"}, {"  cp: 2", "  cp: 1"}});
  expect_error(load_error(text), text, "sequence_parallel", "parallelism.sequence_parallel");
}

TEST(ModelRules, LayersMustDivideIntoStages) {
  std::string text = edit(kTiny, {{"  pp: 2", "  pp: 3"}});
  std::string msg = load_error(text);
  expect_error(msg, text, "pp: 3", "parallelism.pp");
  EXPECT_NE(msg.find("layers = 4"), std::string::npos) << msg;
}

TEST(ModelRules, UnevenStagesMustAddUp) {
  std::string text = edit(kTiny, {{"  pp: 2", "  pp: 3\n  first_stage_layers: 3"}});
  expect_error(load_error(text), text, "first_stage_layers", "parallelism.first_stage_layers");
}

TEST(ModelRules, UnevenStagesSplitAsGiven) {
  auto spec = load_model_string(
      edit(kTiny, {{"  layers: 4", "  layers: 10"},
                   {"  pp: 2", "  pp: 4\n  first_stage_layers: 1\n  last_stage_layers: 1"}}),
      "m.yaml");
  EXPECT_EQ(stage_layers(spec, 0).end, 1);
  EXPECT_EQ(stage_layers(spec, 1).begin, 1);
  EXPECT_EQ(stage_layers(spec, 1).end, 5);
  EXPECT_EQ(stage_layers(spec, 2).end, 9);
  EXPECT_EQ(stage_layers(spec, 3).begin, 9);
  EXPECT_EQ(stage_layers(spec, 3).end, 10);
}

// Megatron's account-for-embedding/loss split: 6 layers + embedding + loss = 8 slots over
// pp 2 x 2 virtual chunks of 2; chunk (c, s) holds slots [2g, 2g + 2), g = c·pp + s, slot 0
// being the embedding: layers [0,1) [1,3) [3,5) [5,6).
TEST(ModelRules, EmbeddingAndLossCountInTheInterleavedSplit) {
  auto spec = load_model_string(
      edit(kTiny, {{"  layers: 4", "  layers: 6"},
                   {"  pp: 2", "  pp: 2\n  virtual_stages: 2\n"
                               "  account_for_embedding_in_pipeline_split: true\n"
                               "  account_for_loss_in_pipeline_split: true"}}),
      "m.yaml");
  const auto range = [&](int stage, int chunk) {
    const LayerRange r = stage_layers(spec, stage, chunk);
    return std::make_pair(r.begin, r.end);
  };
  EXPECT_EQ(range(0, 0), std::make_pair(0, 1));
  EXPECT_EQ(range(1, 0), std::make_pair(1, 3));
  EXPECT_EQ(range(0, 1), std::make_pair(3, 5));
  EXPECT_EQ(range(1, 1), std::make_pair(5, 6));
  // 4 layers + the embedding = 5 slots do not deal evenly over 2 chunks: refused.
  std::string text = edit(kTiny, {{"  pp: 2", "  pp: 2\n  account_for_embedding_in_pipeline_split: true"}});
  expect_error(load_error(text), text, "account_for_embedding_in_pipeline_split",
               "parallelism.account_for_embedding_in_pipeline_split");
  // Not with the other way of making the end stages lighter.
  text = edit(kTiny, {{"  layers: 4", "  layers: 6"},
                      {"  pp: 2", "  pp: 2\n  first_stage_layers: 2\n"
                                  "  account_for_loss_in_pipeline_split: true"}});
  expect_error(load_error(text), text, "account_for_loss_in_pipeline_split",
               "parallelism.account_for_loss_in_pipeline_split");
}

TEST(ModelRules, VirtualStagesNeedPipeline) {
  std::string text =
      edit(kTiny, {{"  pp: 2", "  pp: 1\n  virtual_stages: 2"}, {"  dp: 2", "  dp: 4"}});
  expect_error(load_error(text), text, "virtual_stages", "parallelism.virtual_stages");
}

TEST(ModelRules, InterleavingNeedsMicrobatchesDivisibleByStages) {
  std::string text = edit(kTiny, {{"  pp: 2", "  pp: 2\n  virtual_stages: 2"},
                                  {"global_batch: 16", "global_batch: 6"}});
  std::string msg = load_error(text);
  expect_error(msg, text, "virtual_stages", "parallelism.virtual_stages");
  EXPECT_NE(msg.find("microbatches = 3"), std::string::npos) << msg;
}

TEST(ModelRules, GlobalBatchMustDivideByMicroBatchTimesDp) {
  std::string text = edit(kTiny, {{"global_batch: 16", "global_batch: 15"}});
  std::string msg = load_error(text);
  expect_error(msg, text, "global_batch", "training.global_batch");
  EXPECT_NE(msg.find("micro_batch·dp"), std::string::npos) << msg;
}

TEST(ModelRules, ProductMustEqualGpuCount) {
  auto spec = load_model_string(kTiny, "m.yaml");
  std::string msg = error_of([&] { resolve_for_world(spec, 32); });
  expect_error(msg, kTiny, "  dp: 2", "parallelism.dp");
  EXPECT_NE(msg.find("32 GPUs"), std::string::npos) << msg;
  EXPECT_NO_THROW(resolve_for_world(spec, 16));
}

TEST(ModelRules, AutoDpNeedsDivisibleGpuCount) {
  std::string text = edit(kTiny, {{"  dp: 2", "  dp: auto"}});
  auto spec = load_model_string(text, "m.yaml");
  EXPECT_EQ(resolve_for_world(spec, 64).parallelism.dp, 8);
  std::string msg = error_of([&] { resolve_for_world(spec, 20); });
  EXPECT_NE(msg.find("m.yaml:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("parallelism: tp·pp·cp = 8"), std::string::npos) << msg;
  EXPECT_NE(msg.find("expected"), std::string::npos) << msg;
}

TEST(ModelRules, TpGroupMustFitInANode) {
  auto spec = load_model_string(kTiny, "m.yaml");
  std::string msg = error_of([&] { resolve_for_world(spec, 16, 3); });
  expect_error(msg, kTiny, "  tp: 2", "parallelism.tp");
  EXPECT_NE(msg.find("per node"), std::string::npos) << msg;
}

TEST(ModelRules, EpMustDivideExperts) {
  std::string text = edit(
      kTinyMoe,
      {{"  ep: 4", "  ep: 3"}, {"  dp: 4", "  dp: 6"}, {"global_batch: 16", "global_batch: 12"}});
  std::string msg = load_error(text);
  expect_error(msg, text, "ep: 3", "parallelism.ep");
  EXPECT_NE(msg.find("moe.experts"), std::string::npos) << msg;
}

TEST(ModelRules, EpTimesExpertTpMustDivideTheStageRanks) {
  std::string text = edit(kTinyMoe, {{"  ep: 4", "  ep: 8"}});
  std::string msg = load_error(text);
  expect_error(msg, text, "ep: 8", "parallelism.ep");
  EXPECT_NE(msg.find("tp·cp·dp = 4"), std::string::npos) << msg;
  // With expert TP 1 the EP group may span TP ranks: EP 8 over TP 2 x DP 4.
  const std::string folded = edit(kTinyMoe, {{"  tp: 1", "  tp: 2\n  sequence_parallel: true"},
                                             {"  ep: 4", "  ep: 8\n  etp: 1"}});
  EXPECT_EQ(load_model_string(folded, "folded.yaml").parallelism.expert_tp(), 1);
  // ... but not with the default expert TP = TP 2: 8 x 2 does not divide 8.
  text =
      edit(kTinyMoe, {{"  tp: 1", "  tp: 2\n  sequence_parallel: true"}, {"  ep: 4", "  ep: 8"}});
  msg = load_error(text);
  expect_error(msg, text, "ep: 8", "parallelism.ep");
  EXPECT_NE(msg.find("ep 8 x etp 2"), std::string::npos) << msg;
}

TEST(ModelRules, ExpertTpAtMostTpAndOnlyForMoe) {
  std::string text = edit(kTinyMoe, {{"  ep: 4", "  ep: 2\n  etp: 2"}});
  std::string msg = load_error(text);
  expect_error(msg, text, "etp: 2", "parallelism.etp");
  EXPECT_NE(msg.find("exceeds tp = 1"), std::string::npos) << msg;
  text = edit(kTinyMoe, {{"  ep: 4", "  ep: 4\n  etp: 0"}});
  expect_error(load_error(text), text, "etp: 0", "parallelism.etp");
  text = edit(kTiny, {{"  cp: 2", "  cp: 2\n  etp: 1"}});
  expect_error(load_error(text), text, "etp: 1", "parallelism.etp");
}

TEST(ModelRules, TokenDispatcherIsNamedAndHierarchicalOnlyWithWholeExperts) {
  const std::string deepep =
      edit(kTinyMoe, {{"  top_k: 2\n", "  top_k: 2\n  dispatcher: deepep\n"}});
  EXPECT_EQ(load_model_string(deepep, "m.yaml").moe.dispatcher, TokenDispatcher::DeepEp);
  EXPECT_EQ(load_model_string(kTinyMoe, "m.yaml").moe.dispatcher, TokenDispatcher::AllToAll);
  std::string text = edit(kTinyMoe, {{"  top_k: 2\n", "  top_k: 2\n  dispatcher: deep_ep\n"}});
  expect_error(load_error(text), text, "dispatcher: deep_ep", "moe.dispatcher");
  // Expert TP = TP 2 splits each expert over two ranks: not modelled for DeepEP/HybridEP.
  text = edit(deepep, {{"  tp: 1", "  tp: 2\n  sequence_parallel: true"}, {"  ep: 4", "  ep: 2"}});
  const std::string msg = load_error(text);
  expect_error(msg, text, "dispatcher: deepep", "moe.dispatcher");
  EXPECT_NE(msg.find("expert tensor parallelism 2"), std::string::npos) << msg;
  // EP 8 on nodes of 6 GPUs: the groups straddle nodes, neither inside one nor whole ones.
  const std::string ep8 =
      edit(deepep, {{"  dp: 4", "  dp: 8"}, {"  pp: 2", "  pp: 1"}, {"  ep: 4", "  ep: 8"}});
  const ModelSpec spec = load_model_string(ep8, "m.yaml");
  EXPECT_EQ(resolve_for_world(spec, 8, 8).parallelism.ep, 8);
  const std::string straddle = error_of([&] { resolve_for_world(spec, 8, 6); });
  expect_error(straddle, ep8, "dispatcher: deepep", "moe.dispatcher");
  EXPECT_NE(straddle.find("straddle nodes of 6 GPUs"), std::string::npos) << straddle;
}

TEST(ModelRules, SlidingWindowNeedsACausalMaskAndNoContextParallelism) {
  std::string text =
      edit(kTiny, {{"  cp: 2", "  cp: 1"}, {"    heads:", "    window: 64\n    heads:"}});
  EXPECT_EQ(load_model_string(text, "m.yaml").transformer.attention.window, 64);
  text = edit(kTiny, {{"    heads:", "    full_attention_every: 2\n    heads:"}});
  expect_error(load_error(text), text, "full_attention_every", "full_attention_every");
  text = edit(kTiny, {{"    heads:", "    window: 64\n    causal: false\n    heads:"}});
  expect_error(load_error(text), text, "window: 64", "window");
  text = edit(kTiny, {{"    heads:", "    window: 64\n    heads:"}});
  std::string msg = load_error(text);
  expect_error(msg, text, "window: 64", "transformer.attention.window");
  EXPECT_NE(msg.find("context parallelism"), std::string::npos) << msg;
}

TEST(ModelRules, QkNormIsABoolOfStandardAttention) {
  EXPECT_FALSE(load_model_string(kTiny, "m.yaml").transformer.attention.qk_norm);
  std::string text = edit(kTiny, {{"    heads:", "    qk_norm: true\n    heads:"}});
  EXPECT_TRUE(load_model_string(text, "m.yaml").transformer.attention.qk_norm);
  text = edit(kTiny, {{"    heads:", "    qk_norm: sometimes\n    heads:"}});
  expect_error(load_error(text), text, "qk_norm: sometimes", "qk_norm");
  // MLA norms its compressed latents instead (kind: mla covers them).
  text = edit(kTiny, {{"    heads:",
                       "    kind: mla\n    qk_norm: true\n    kv_lora_rank: 16\n"
                       "    qk_nope_head_dim: 8\n    qk_rope_head_dim: 8\n    v_head_dim: 8\n"
                       "    heads:"}});
  const std::string msg = load_error(text);
  expect_error(msg, text, "qk_norm: true", "qk_norm");
  EXPECT_NE(msg.find("kind: mla"), std::string::npos) << msg;
}

TEST(ModelRules, TopKAtMostExperts) {
  std::string text = edit(kTinyMoe, {{"top_k: 2", "top_k: 9"}});
  expect_error(load_error(text), text, "top_k", "moe.top_k");
}

TEST(ModelRules, DenseLayersLeaveAnMoeLayer) {
  std::string text = edit(kTinyMoe, {{"  top_k: 2", "  top_k: 2\n  dense_layers: 4"}});
  expect_error(load_error(text), text, "dense_layers", "moe.dense_layers");
}

TEST(ModelRules, MoeWithTpNeedsSequenceParallel) {
  std::string text = edit(kTinyMoe, {{"  tp: 1", "  tp: 2\n  sequence_parallel: false"},
                                     {"  dp: 4", "  dp: 2"},
                                     {"  ep: 4", "  ep: 2"}});
  expect_error(load_error(text), text, "sequence_parallel", "parallelism.sequence_parallel");
}

TEST(ModelRules, EpNeedsMoe) {
  std::string text = edit(kTiny, {{"  cp: 2", "  cp: 2\n  ep: 2"}});
  expect_error(load_error(text), text, "ep: 2", "parallelism.ep");
}

TEST(ModelRules, DlrmIsDataParallelOnly) {
  std::string text = edit(kTinyDlrm, {{"  dp: 8", "  dp: 4\n  tp: 2"}});
  expect_error(load_error(text), text, "tp: 2", "parallelism.tp");
}

TEST(ModelRules, DlrmTablesNeedRows) {
  std::string text = edit(kTinyDlrm, {{"{rows: 50, hotness: 1}", "{rowz: 50, hotness: 1}"}});
  expect_error(load_error(text), text, "rowz", "rowz");
}

TEST(ModelRules, MlaKeysNeedMla) {
  std::string text = edit(kTiny, {{"    kv_heads: 4", "    kv_heads: 4\n    kv_lora_rank: 64"}});
  expect_error(load_error(text), text, "kv_lora_rank", "transformer.attention.kv_lora_rank");
}

TEST(ModelRules, OverridesAreRevalidated) {
  auto spec = load_model_string(kTiny, "m.yaml");
  spec.parallelism.tp = 3;  // as a CLI override would
  std::string msg = error_of([&] { validate_model(spec); });
  expect_error(msg, kTiny, "  tp: 2", "parallelism.tp");
}

TEST(ModelRules, OverlapFlagsDefaultOnAndParamGatherNeedsTheDistributedOptimizer) {
  const ModelSpec base = load_model_string(kTiny, "m.yaml");
  EXPECT_TRUE(base.training.overlap_grad_reduce);
  EXPECT_TRUE(base.training.overlap_param_gather);
  const std::string off = edit(
      kTiny, {{"  micro_batch: 1", "  micro_batch: 1\n  grad_sync: distributed_optimizer\n"
                                   "  overlap_grad_reduce: false\n  overlap_param_gather: false"}});
  const ModelSpec m = load_model_string(off, "m.yaml");
  EXPECT_FALSE(m.training.overlap_grad_reduce);
  EXPECT_FALSE(m.training.overlap_param_gather);
  const std::string allreduce =
      edit(kTiny, {{"  micro_batch: 1", "  micro_batch: 1\n  overlap_param_gather: true"}});
  expect_error(load_error(allreduce), allreduce, "overlap_param_gather",
               "training.overlap_param_gather");
}

TEST(ModelRules, ClipGradKey) {
  // Megatron-LM's default --clip-grad 1.0.
  EXPECT_DOUBLE_EQ(load_model_string(kTiny, "m.yaml").training.clip_grad, 1.0);
  const std::string off =
      edit(kTiny, {{"  micro_batch: 1", "  micro_batch: 1\n  clip_grad: 0"}});
  EXPECT_DOUBLE_EQ(load_model_string(off, "m.yaml").training.clip_grad, 0.0);
  const std::string negative =
      edit(kTiny, {{"  micro_batch: 1", "  micro_batch: 1\n  clip_grad: -1"}});
  expect_error(load_error(negative), negative, "clip_grad", "training.clip_grad");
  // DLRM models run their own optimizer: the key is refused there.
  const std::string dlrm = edit(kTinyDlrm, {{"training:", "training:\n  clip_grad: 1.0"}});
  expect_error(load_error(dlrm), dlrm, "clip_grad", "training.clip_grad");
}

TEST(ModelRules, DlrmShardingKeys) {
  const ModelSpec base = load_model_string(kTinyDlrm, "m.yaml");
  EXPECT_EQ(base.dlrm.data_parallel_max_rows, 0);
  EXPECT_EQ(base.dlrm.sharding, TableSharding::Balanced);
  const std::string hybrid = edit(
      kTinyDlrm, {{"  dcn_rank: 8", "  dcn_rank: 8\n  data_parallel_max_rows: 50\n"
                                    "  sharding: table_wise"}});
  const ModelSpec m = load_model_string(hybrid, "m.yaml");
  EXPECT_EQ(m.dlrm.data_parallel_max_rows, 50);
  EXPECT_EQ(m.dlrm.sharding, TableSharding::TableWise);
  const std::string negative =
      edit(kTinyDlrm, {{"  dcn_rank: 8", "  dcn_rank: 8\n  data_parallel_max_rows: -1"}});
  expect_error(load_error(negative), negative, "data_parallel_max_rows",
               "dlrm.data_parallel_max_rows");
  const std::string bad = edit(kTinyDlrm, {{"  dcn_rank: 8", "  dcn_rank: 8\n  sharding: column"}});
  expect_error(load_error(bad), bad, "sharding: column", "dlrm.sharding");
}

TEST(ModelRules, DlrmEmbeddingOpsKeys) {
  const ModelSpec base = load_model_string(kTinyDlrm, "m.yaml");
  EXPECT_FALSE(base.dlrm.exchange_precision.has_value());
  EXPECT_EQ(base.dlrm.exchange_type(), base.dlrm.embedding_precision);
  EXPECT_EQ(base.dlrm.embedding_ops, EmbeddingOps::Fused);
  EXPECT_EQ(base.dlrm.index_power_law_alpha, 0);
  const std::string tf = edit(
      kTinyDlrm, {{"  dcn_rank: 8", "  dcn_rank: 8\n  sharding: memory_balanced\n"
                                    "  exchange_precision: fp16\n  embedding_ops: tensorflow\n"
                                    "  index_power_law_alpha: 1.45"}});
  const ModelSpec m = load_model_string(tf, "m.yaml");
  EXPECT_EQ(m.dlrm.sharding, TableSharding::MemoryBalanced);
  EXPECT_EQ(m.dlrm.exchange_type(), sim::Precision::FP16);
  EXPECT_EQ(m.dlrm.embedding_ops, EmbeddingOps::TensorFlow);
  EXPECT_DOUBLE_EQ(m.dlrm.index_power_law_alpha, 1.45);
  for (const auto& [line, key] : std::vector<std::pair<std::string, std::string>>{
           {"  exchange_precision: fp8", "dlrm.exchange_precision"},
           {"  embedding_ops: torch", "dlrm.embedding_ops"},
           {"  index_power_law_alpha: -1", "dlrm.index_power_law_alpha"},
           {"  index_power_law_alpha: steep", "dlrm.index_power_law_alpha"}}) {
    const std::string text = edit(kTinyDlrm, {{"  dcn_rank: 8", "  dcn_rank: 8\n" + line}});
    expect_error(load_error(text), text, line.substr(2, line.find(':') - 2), key);
  }
}
