#include "workloads/model.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <initializer_list>
#include <stdexcept>

#include "config/error.hpp"
#include "config/integers.hpp"
#include "workloads/parallel_layout.hpp"

namespace overlapsim::workloads {

using config::ConfigError;
using config::ConfigNode;
using config::ParamDoc;

const char* to_string(ModelKind k) {
  switch (k) {
    case ModelKind::Transformer:
      return "transformer";
    case ModelKind::Moe:
      return "moe";
    case ModelKind::Dlrm:
      return "dlrm";
  }
  return "?";
}

const char* to_string(TokenDispatcher d) {
  switch (d) {
    case TokenDispatcher::AllToAll:
      return "alltoall";
    case TokenDispatcher::DeepEp:
      return "deepep";
    case TokenDispatcher::HybridEp:
      return "hybridep";
  }
  return "?";
}

const char* to_string(Recompute r) {
  switch (r) {
    case Recompute::None:
      return "none";
    case Recompute::Selective:
      return "selective";
    case Recompute::Full:
      return "full";
  }
  return "?";
}

const char* to_string(GradSync g) {
  switch (g) {
    case GradSync::AllReduce:
      return "allreduce";
    case GradSync::DistributedOptimizer:
      return "distributed_optimizer";
  }
  return "?";
}

const char* to_string(TableSharding s) {
  switch (s) {
    case TableSharding::Balanced:
      return "balanced";
    case TableSharding::TableWise:
      return "table_wise";
    case TableSharding::RowWise:
      return "row_wise";
    case TableSharding::MemoryBalanced:
      return "memory_balanced";
  }
  return "?";
}

const char* to_string(EmbeddingOps o) {
  switch (o) {
    case EmbeddingOps::Fused:
      return "fused";
    case EmbeddingOps::TensorFlow:
      return "tensorflow";
  }
  return "?";
}

namespace {

const std::vector<ParamDoc> kTopDocs = {
    {"name", "model name shown in reports", "file name", ""},
    {"kind", "transformer | moe | dlrm", "", ""},
    {"source", "where the dimensions come from (paper, model card)", "", ""},
    {"transformer", "layer dimensions (kind transformer or moe)", "", ""},
    {"moe", "expert configuration (kind moe)", "", ""},
    {"dlrm", "tables, MLPs and interaction (kind dlrm)", "", ""},
    {"training", "batch, precision, recompute, optimizer", "", ""},
    {"parallelism", "dp, tp, pp, cp, ep and their options", "", ""},
};

const std::vector<ParamDoc> kTransformerDocs = {
    {"layers", "transformer layers", "", ""},
    {"hidden", "model (residual stream) width", "", "elements"},
    {"ffn_hidden", "dense MLP inner width", "", "elements"},
    {"vocab", "vocabulary size", "", "tokens"},
    {"mlp", "gelu (2 matrices) | swiglu (3 matrices)", "gelu", ""},
    {"norm", "layernorm | rmsnorm", "layernorm", ""},
    {"position_embedding", "learned (a seq_len x hidden table) | rope", "rope", ""},
    {"bias", "linear layers have biases", "false", ""},
    {"tie_embeddings", "output head shares the input embedding", "false", ""},
    {"attention_dropout",
     "dropout probability on the attention probabilities (Megatron-LM --attention-dropout); "
     "0: none",
     "0", "probability"},
    {"hidden_dropout",
     "dropout probability on each residual branch and the embedding output (Megatron-LM "
     "--hidden-dropout); 0: none",
     "0", "probability"},
    {"attention", "attention block", "", ""},
};

const std::vector<ParamDoc> kAttentionDocs = {
    {"kind", "standard (MHA/GQA) | mla (multi-head latent attention)", "standard", ""},
    {"heads", "query heads", "", ""},
    {"kv_heads", "key/value heads (GQA); default heads", "heads", ""},
    {"head_dim", "per-head width", "hidden / heads", "elements"},
    {"causal", "causal mask (kernels skip masked blocks: half the QK^T/PV work)", "true", ""},
    {"kernel",
     "flash (fused, FlashAttention-style) | unfused (batched GEMMs and a softmax kernel over the "
     "s x s scores in device memory, as Megatron-LM ran before FlashAttention)",
     "flash", ""},
    {"window",
     "sliding-window attention: each query attends to this many most recent keys, itself "
     "included (Megatron-LM --window-size (window - 1, 0); Hugging Face sliding_window); causal "
     "only; 0: the whole sequence",
     "0", "tokens"},
    {"full_attention_every",
     "with window: every N-th layer (1-based) attends to the whole sequence (Megatron-LM "
     "--window-attn-skip-freq N); 0: every layer is windowed",
     "0", ""},
    {"qk_norm",
     "standard attention: an RMSNorm over each query and key head after the QKV projection "
     "(Qwen3, OLMo 2, Gemma 3; Megatron-LM --qk-layernorm)",
     "false", ""},
    {"q_lora_rank", "mla: query compression rank (0: none)", "0", "elements"},
    {"kv_lora_rank", "mla: key/value latent rank", "", "elements"},
    {"qk_nope_head_dim", "mla: per-head query/key width without rope", "", "elements"},
    {"qk_rope_head_dim", "mla: per-head rope width (shared key)", "", "elements"},
    {"v_head_dim", "mla: per-head value width", "", "elements"},
};

const std::vector<ParamDoc> kMoeDocs = {
    {"experts", "routed experts per MoE layer", "", ""},
    {"top_k", "routed experts per token", "", ""},
    {"shared_experts", "always-active experts per MoE layer", "0", ""},
    {"expert_ffn_hidden", "inner width of one expert", "", "elements"},
    {"dense_layers", "first N layers use a dense MLP (ffn_hidden)", "0", ""},
    {"dispatcher",
     "alltoall (NCCL all-to-all over ep) | deepep | hybridep (one network copy per token and "
     "destination node, then NVLink)",
     "alltoall", ""},
    {"host_sync",
     "the dispatcher copies the tokens per expert to the host and waits for them in every MoE "
     "layer's forward (Megatron-LM's all-to-all dispatcher: _maybe_dtoh_and_synchronize; "
     "DeepEP's host list of received tokens; HybridEP without num_permuted_tokens); false "
     "where the recipe sizes the exchange ahead (token capacity, CUDA graphs). Costs time "
     "only with training.host_launch_time or host_sync_time",
     "true", ""},
    {"permute_fusion",
     "the token permutation runs as fused kernels (Megatron-LM --moe-permute-fusion, TE's "
     "permute kernels: one pass each way); false: Megatron-Core's unfused torch path, its "
     "measured kernels (scatter_add_ and index_add_ at the profile's atomic-add rates, the "
     "kernel counts of benchmarks/results/h200x2/megatron_moe_layer/)",
     "true", ""},
    {"router_fusion",
     "the router's top-k and softmax by a fused kernel (Megatron-LM --moe-router-fusion); "
     "false: Megatron-Core's TopKRouter in torch ops, the kernels it launches as measured "
     "(28 forward, 21 backward)",
     "true", ""},
    {"ep_overlap",
     "Megatron-Core's EP communication overlap (--overlap-moe-expert-parallel-comm, "
     "Megatron-Bridge moe_a2a_overlap): each microbatch's forward runs beside the previous "
     "one's backward, layer by layer, so that each one's token exchanges run while the other "
     "computes (its combined 1F1B schedule); with pp > 1 only in the interleaved schedule",
     "false", ""},
    {"delay_wgrad",
     "the experts' weight gradients run beside the dispatch's backward exchange, issued "
     "after it (Megatron-Core --delay-wgrad-compute with ep_overlap, "
     "--overlap-dispatch-backward-with-experts-wgrad without); false: computed with the "
     "data gradients, before the exchange starts (Megatron-Core's default)",
     "false", ""},
};

const std::vector<ParamDoc> kDlrmDocs = {
    {"dense_features", "dense input features", "", ""},
    {"embedding_dim", "width of every embedding row", "", "elements"},
    {"tables", "list of {rows, hotness}", "", ""},
    {"bottom_mlp", "bottom MLP output widths", "", "elements"},
    {"top_mlp", "top MLP output widths", "", "elements"},
    {"interaction", "dcn (low-rank cross network) | dot", "dcn", ""},
    {"dcn_layers", "cross layers (dcn)", "", ""},
    {"dcn_rank", "low-rank dimension of each cross layer (dcn)", "", "elements"},
    {"embedding_precision", "fp32 | bf16 | fp16 (tables and their all-to-all)", "fp32", ""},
    {"data_parallel_max_rows",
     "hybrid sharding: tables of at most this many rows are replicated and data parallel "
     "(gradients all-reduced); 0: every table model parallel",
     "0", "rows"},
    {"sharding",
     "model-parallel tables: balanced (each rank 1/W of every table's lookups) | table_wise "
     "(whole tables on ranks, greedy by lookups; the most loaded rank is simulated) | row_wise "
     "(tables split by rows; partial pools reduce-scattered, gradients all-gathered) | "
     "memory_balanced (whole tables, Merlin Distributed Embeddings' strategy: by size, rank i "
     "takes the i-th and (2W-1-i)-th of every 2W; the rank with the most lookups is simulated)",
     "balanced", ""},
    {"optimizer",
     "adagrad (dense Adagrad; row-wise Adagrad fused into the tables' backward) | adam (dense "
     "Adam; lazy Adam on the touched rows: row, m and v read and written)",
     "adagrad", ""},
    {"exchange_precision",
     "fp32 | bf16 | fp16: element type of the embedding all-to-all and its gradient",
     "embedding_precision", ""},
    {"embedding_ops",
     "fused (lookup pooled into the all-to-all buffer, sparse update fused into the backward "
     "over every lookup) | tensorflow (gather per table; concat and cast into the all-to-all "
     "buffer; gradients cast and scaled, deduplicated by unique + unsorted segment sum; the "
     "optimizer as gather/update/scatter ops over the distinct rows; with fp16 also the "
     "loss-scale unscale of the dense gradients as its own pass)",
     "fused", ""},
    {"index_power_law_alpha",
     "lookups' row-index distribution, for the distinct rows a step updates (embedding_ops "
     "tensorflow): 0 uniform, alpha > 0 power law P(k) ~ (k+1)^-alpha",
     "0", ""},
};

const std::vector<ParamDoc> kTrainingDocs = {
    {"seq_len", "sequence length (transformer, moe)", "", "tokens"},
    {"global_batch", "sequences (or samples) per step", "", ""},
    {"micro_batch", "sequences per microbatch per DP rank", "1", ""},
    {"precision", "bf16 | fp16 | fp8 | fp32 (GEMM inputs; with fp8 activations stay 16-bit)",
     "bf16", ""},
    {"fp8_scaling",
     "tensor | current | block128: fp8 GEMMs scaled per tensor from the amax history "
     "(Transformer Engine DelayedScaling), per tensor from its own amax (Float8CurrentScaling, "
     "Megatron-LM --fp8-recipe tensorwise: an amax pass before each cast), or per 1 x 128 "
     "activation run and 128 x 128 weight block (DeepSeek-V3); block128 needs the profile's "
     "compute.fp8_block_scaling_time_factor; only with precision: fp8",
     "tensor", ""},
    {"fp8_params",
     "the model weights kept in fp8 (Megatron-LM --fp8-param-gather, NeMo fp8_params): the "
     "distributed optimizer all-gathers 1 byte per element and the first microbatch only "
     "transposes the gathered weight; only with precision: fp8 and grad_sync: "
     "distributed_optimizer",
     "false", ""},
    {"grad_precision",
     "bf16 | fp32: precision of the DP gradient reduction (Megatron-LM accumulates and "
     "all-reduces bf16 models' gradients in fp32)",
     "fp32", ""},
    {"recompute", "none | selective | full activation recomputation", "none", ""},
    {"recompute_layers",
     "with recompute: full, rebuild only the first N layers of each model chunk (Megatron-LM "
     "--recompute-method block --recompute-num-layers N); the others keep their activations",
     "every layer", ""},
    {"grad_sync", "allreduce | distributed_optimizer (reduce-scatter + all-gather)", "allreduce",
     ""},
    {"grad_bucket", "DP gradient bucket size (PyTorch DDP bucket_cap_mb default)", "25MiB",
     "bytes"},
    {"overlap_grad_reduce",
     "each bucket's reduction starts when its last gradient is produced (Megatron-LM "
     "--overlap-grad-reduce); false: after the backward pass",
     "true", ""},
    {"horovod_cycle_time",
     "collectives go through Horovod, whose background thread starts a cycle at most every "
     "this long (HOROVOD_CYCLE_TIME; 1 ms by default since Horovod 0.21.0): each collective "
     "waits half a cycle on average before its transfer starts; 0: NCCL called directly",
     "0", "seconds"},
    {"host_launch_time",
     "the host's time to issue one kernel on the eager path (the framework's Python and the "
     "launch): the GPU cannot start an op before the host has issued it, the compute ops and "
     "the tensor-, context- and expert-parallel collectives in program order, each op's "
     "launches; 0: the host always runs ahead of the GPU",
     "0", "seconds"},
    {"host_sync_time",
     "after a device-to-host copy the host waits for (the MoE dispatcher's token counts, "
     "moe.host_sync), this long more before it issues the next op (the copy's round trip)",
     "0", "seconds"},
    {"high_priority_comm",
     "the communication streams created with high priority, a list of tp, cp, dp, pp, ep "
     "(Megatron-LM --high-priority-stream-groups; ep also for its EP overlap's "
     "--high-priority-a2a-comm-stream): their collectives and sends need not wait for a "
     "running memory-bound kernel's end; [] (PyTorch's and Megatron-LM's default): they do",
     "[]", ""},
    {"overlap_param_gather",
     "distributed_optimizer: each layer's parameter all-gather is issued one layer ahead of "
     "its first forward use (Megatron-LM --overlap-param-gather); false: after the optimizer",
     "true", ""},
    {"clip_grad",
     "transformer, moe: gradient-clipping threshold (Megatron-LM --clip-grad, default 1.0); "
     "> 0: the optimizer step reads every fp32 main gradient for the global norm; 0: no "
     "clipping",
     "1.0", ""},
};

const std::vector<ParamDoc> kParallelismDocs = {
    {"dp", "data-parallel size, or auto (GPUs / (tp·pp·cp))", "auto", ""},
    {"tp", "tensor-parallel size", "1", ""},
    {"sequence_parallel", "Megatron sequence parallelism with tp", "false", ""},
    {"pp", "pipeline stages (1F1B)", "1", ""},
    {"virtual_stages", "model chunks per stage (interleaved 1F1B)", "1", ""},
    {"first_stage_layers", "layers on the first stage (uneven pipeline)", "even split", ""},
    {"last_stage_layers", "layers on the last stage (uneven pipeline)", "even split", ""},
    {"account_for_embedding_in_pipeline_split",
     "the embedding counts as one layer when the layers are dealt to the model chunks "
     "(Megatron-LM --account-for-embedding-in-pipeline-split): the first chunk holds one "
     "layer fewer; also with virtual_stages",
     "false", ""},
    {"account_for_loss_in_pipeline_split",
     "the loss counts as one layer (Megatron-LM --account-for-loss-in-pipeline-split): the "
     "last chunk holds one layer fewer; also with virtual_stages",
     "false", ""},
    {"cp", "context-parallel size (sequence split, all-gather of K/V)", "1", ""},
    {"ep", "expert-parallel size (moe): ep x etp divides tp x cp x dp, the ranks of a stage", "1",
     ""},
    {"etp",
     "expert tensor-parallel size (moe; Megatron-LM --expert-tensor-parallel-size): the experts "
     "split over etp ranks, the ep x etp expert grid folded over a stage's tp x cp x dp ranks "
     "(Megatron-Core MoE parallel folding); etp < tp lets ep span TP ranks",
     "tp", ""},
};

std::string location_of(const ConfigNode& parent, const std::string& key) {
  const auto& y = parent.yaml();
  YAML::Mark mark = (y.IsMap() && y[key]) ? y[key].Mark() : y.Mark();
  if (mark.is_null()) return parent.file();
  return fmt::format("{}:{}:{}", parent.file(), mark.line + 1, mark.column + 1);
}

// Records where `section.key` sits so cross-key checks can name it.
void remember(ModelSpec& spec, const ConfigNode& parent, const std::string& section,
              const std::string& key) {
  spec.key_locations[section.empty() ? key : section + "." + key] = location_of(parent, key);
}

[[noreturn]] void fail_key(const ModelSpec& spec, const std::string& key,
                           const std::string& message) {
  auto it = spec.key_locations.find(key);
  std::string where = it != spec.key_locations.end()
                          ? it->second
                          : (spec.source_file.empty() ? std::string("(model)") : spec.source_file);
  throw ConfigError(fmt::format("{}: {}: {}", where, key, message));
}

int get_int_in(const ConfigNode& n, const std::string& key, int lo, int def_value, bool required) {
  if (!n.has(key)) {
    // has() is false for a null value too (`heads: ~`), which child() would accept.
    if (required) n.fail_key(key, "missing (required)");
    return def_value;
  }
  std::int64_t v = n.get_int(key);
  if (v < lo || v > 1'000'000'000)
    n.fail_key(key, fmt::format("{} is out of range (expected an integer >= {})", v, lo));
  return static_cast<int>(v);
}

sim::Precision parse_precision(const ConfigNode& n, const std::string& key,
                               const std::vector<std::string>& allowed, sim::Precision def) {
  if (!n.has(key)) return def;
  std::string v = n.get_enum(key, allowed);
  if (v == "fp32") return sim::Precision::FP32;
  if (v == "fp16") return sim::Precision::FP16;
  if (v == "fp8") return sim::Precision::FP8;
  return sim::Precision::BF16;
}

std::vector<int> get_int_list(const ConfigNode& parent, const std::string& key) {
  ConfigNode list = parent.child(key);
  if (!list.is_sequence() || list.size() == 0)
    parent.fail_key(key, "expected a non-empty list of integers such as [512, 256, 128]");
  std::vector<int> out;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const int v = list.at(i).as_int32();
    if (v < 1) list.at(i).fail(fmt::format("{} is not positive (expected an integer >= 1)", v));
    out.push_back(v);
  }
  return out;
}

// A list of communication streams by their parallelism's name (tp, cp, dp, pp, ep), as
// flags per sim::StreamKind; ep names both of the expert exchange's streams.
std::array<bool, sim::kNumStreamKinds> get_comm_streams(const ConfigNode& parent,
                                                        const std::string& key) {
  static const std::map<std::string, std::vector<sim::StreamKind>> kStreams = {
      {"tp", {sim::StreamKind::TensorComm}},
      {"cp", {sim::StreamKind::ContextComm}},
      {"dp", {sim::StreamKind::DataComm}},
      {"pp", {sim::StreamKind::PipelineComm}},
      {"ep", {sim::StreamKind::ExpertComm, sim::StreamKind::ExpertNodeComm}}};
  ConfigNode list = parent.child(key);
  if (!list.is_sequence())
    parent.fail_key(key, "expected a list of tp, cp, dp, pp, ep such as [ep]");
  std::array<bool, sim::kNumStreamKinds> out{};
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string name = list.at(i).as_string();
    const auto it = kStreams.find(name);
    if (it == kStreams.end())
      list.at(i).fail(
          fmt::format("'{}' is not a communication stream (expected tp, cp, dp, pp or ep)", name));
    for (const sim::StreamKind s : it->second) out[static_cast<std::size_t>(s)] = true;
  }
  return out;
}

// A dropout probability: 0 <= p < 1 (p = 1 would drop everything), default 0.
double get_probability(const ConfigNode& n, const std::string& key) {
  const double p = n.get_double(key, 0.0);
  if (!(p >= 0 && p < 1))
    n.fail_key(key, fmt::format("{} is out of range (expected a probability 0 <= p < 1)", p));
  return p;
}

void load_attention(ModelSpec& spec, const ConfigNode& n) {
  n.check_keys(kAttentionDocs);
  auto& a = spec.transformer.attention;
  for (const auto& d : kAttentionDocs) remember(spec, n, "transformer.attention", d.key);
  a.kind = n.get_enum("kind", {"standard", "mla"}, "standard") == "mla" ? AttentionKind::Mla
                                                                        : AttentionKind::Standard;
  a.heads = get_int_in(n, "heads", 1, 0, true);
  a.kv_heads = get_int_in(n, "kv_heads", 1, a.heads, false);
  a.head_dim = get_int_in(n, "head_dim", 1, 0, false);
  a.causal = n.get_bool("causal", true);
  a.unfused = n.get_enum("kernel", {"flash", "unfused"}, "flash") == "unfused";
  a.window = get_int_in(n, "window", 1, 0, false);
  a.full_attention_every = get_int_in(n, "full_attention_every", 1, 0, false);
  if (a.full_attention_every > 0 && a.window == 0)
    n.fail_key("full_attention_every", "set without window (expected a window > 0 with it)");
  if (a.window > 0 && !a.causal)
    n.fail_key("window", "set with causal: false (expected a causal mask with a sliding window)");
  a.qk_norm = n.get_bool("qk_norm", false);
  // MLA's own norms (over the compressed query and KV latents) are part of kind: mla.
  if (a.qk_norm && a.kind == AttentionKind::Mla)
    n.fail_key("qk_norm",
               "set with kind: mla (expected standard attention: MLA norms its latents)");
  if (a.kind == AttentionKind::Mla) {
    a.q_lora_rank = get_int_in(n, "q_lora_rank", 0, 0, false);
    a.kv_lora_rank = get_int_in(n, "kv_lora_rank", 1, 0, true);
    a.qk_nope_head_dim = get_int_in(n, "qk_nope_head_dim", 1, 0, true);
    a.qk_rope_head_dim = get_int_in(n, "qk_rope_head_dim", 1, 0, true);
    a.v_head_dim = get_int_in(n, "v_head_dim", 1, 0, true);
    a.kv_heads = a.heads;  // MLA expands the latent to per-head keys and values
  } else {
    for (const char* k :
         {"q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"})
      if (n.has(k)) n.fail_key(k, "only allowed with kind: mla (expected no such key)");
  }
}

void load_transformer(ModelSpec& spec, const ConfigNode& n) {
  n.check_keys(kTransformerDocs);
  for (const auto& d : kTransformerDocs) remember(spec, n, "transformer", d.key);
  auto& t = spec.transformer;
  t.layers = get_int_in(n, "layers", 1, 0, true);
  t.hidden = get_int_in(n, "hidden", 1, 0, true);
  t.ffn_hidden = get_int_in(n, "ffn_hidden", 1, 0, spec.kind == ModelKind::Transformer);
  t.vocab = get_int_in(n, "vocab", 1, 0, true);
  t.mlp =
      n.get_enum("mlp", {"gelu", "swiglu"}, "gelu") == "swiglu" ? MlpKind::Swiglu : MlpKind::Gelu;
  t.norm = n.get_enum("norm", {"layernorm", "rmsnorm"}, "layernorm") == "rmsnorm"
               ? NormKind::RmsNorm
               : NormKind::LayerNorm;
  t.position = n.get_enum("position_embedding", {"learned", "rope"}, "rope") == "learned"
                   ? PositionEmbedding::Learned
                   : PositionEmbedding::Rope;
  t.bias = n.get_bool("bias", false);
  t.tie_embeddings = n.get_bool("tie_embeddings", false);
  t.attention_dropout = get_probability(n, "attention_dropout");
  t.hidden_dropout = get_probability(n, "hidden_dropout");
  load_attention(spec, n.child("attention"));
}

void load_moe(ModelSpec& spec, const ConfigNode& n) {
  n.check_keys(kMoeDocs);
  for (const auto& d : kMoeDocs) remember(spec, n, "moe", d.key);
  auto& m = spec.moe;
  m.experts = get_int_in(n, "experts", 1, 0, true);
  m.top_k = get_int_in(n, "top_k", 1, 0, true);
  m.shared_experts = get_int_in(n, "shared_experts", 0, 0, false);
  m.expert_ffn_hidden = get_int_in(n, "expert_ffn_hidden", 1, 0, true);
  m.dense_layers = get_int_in(n, "dense_layers", 0, 0, false);
  const std::string d = n.get_enum("dispatcher", {"alltoall", "deepep", "hybridep"}, "alltoall");
  m.dispatcher = d == "deepep"     ? TokenDispatcher::DeepEp
                 : d == "hybridep" ? TokenDispatcher::HybridEp
                                   : TokenDispatcher::AllToAll;
  m.host_sync = n.get_bool("host_sync", true);
  m.permute_fusion = n.get_bool("permute_fusion", true);
  m.router_fusion = n.get_bool("router_fusion", true);
  m.ep_overlap = n.get_bool("ep_overlap", false);
  m.delay_wgrad = n.get_bool("delay_wgrad", false);
}

void load_dlrm(ModelSpec& spec, const ConfigNode& n) {
  n.check_keys(kDlrmDocs);
  for (const auto& d : kDlrmDocs) remember(spec, n, "dlrm", d.key);
  auto& d = spec.dlrm;
  d.dense_features = get_int_in(n, "dense_features", 1, 0, true);
  d.embedding_dim = get_int_in(n, "embedding_dim", 1, 0, true);
  ConfigNode tables = n.child("tables");
  if (!tables.is_sequence() || tables.size() == 0)
    n.fail_key("tables", "expected a non-empty list of {rows: N, hotness: K}");
  for (std::size_t i = 0; i < tables.size(); ++i) {
    ConfigNode t = tables.at(i);
    if (!t.is_map()) t.fail("expected a map such as {rows: 40000000, hotness: 3}");
    t.check_keys(std::vector<std::string>{"rows", "hotness"});
    EmbeddingTableSpec table;
    table.rows = t.get_positive_int("rows");
    table.hotness = get_int_in(t, "hotness", 1, 1, false);
    d.tables.push_back(table);
  }
  d.bottom_mlp = get_int_list(n, "bottom_mlp");
  d.top_mlp = get_int_list(n, "top_mlp");
  d.interaction = n.get_enum("interaction", {"dcn", "dot"}, "dcn");
  if (d.interaction == "dcn") {
    d.dcn_layers = get_int_in(n, "dcn_layers", 1, 0, true);
    d.dcn_rank = get_int_in(n, "dcn_rank", 1, 0, true);
  }
  d.embedding_precision =
      parse_precision(n, "embedding_precision", {"fp32", "bf16", "fp16"}, sim::Precision::FP32);
  if (n.has("data_parallel_max_rows")) {
    const std::int64_t v = n.get_int("data_parallel_max_rows");
    if (v < 0)
      n.fail_key("data_parallel_max_rows",
                 fmt::format("{} is negative (expected a row count >= 0; 0: no data-parallel "
                             "tables)",
                             v));
    d.data_parallel_max_rows = v;
  }
  const std::string sharding = n.get_enum(
      "sharding", {"balanced", "table_wise", "row_wise", "memory_balanced"}, "balanced");
  d.optimizer = n.get_enum("optimizer", {"adagrad", "adam"}, "adagrad");
  d.sharding = sharding == "table_wise"        ? TableSharding::TableWise
               : sharding == "row_wise"        ? TableSharding::RowWise
               : sharding == "memory_balanced" ? TableSharding::MemoryBalanced
                                               : TableSharding::Balanced;
  if (n.has("exchange_precision"))
    d.exchange_precision = parse_precision(n, "exchange_precision", {"fp32", "bf16", "fp16"},
                                           d.embedding_precision);
  d.embedding_ops = n.get_enum("embedding_ops", {"fused", "tensorflow"}, "fused") == "tensorflow"
                        ? EmbeddingOps::TensorFlow
                        : EmbeddingOps::Fused;
  if (n.has("index_power_law_alpha")) {
    const double a = n.get_double("index_power_law_alpha");
    if (!(a >= 0 && a <= 100))
      n.fail_key("index_power_law_alpha",
                 fmt::format("{} is out of range (expected an exponent 0 <= alpha <= 100; 0: "
                             "uniform indices)",
                             a));
    d.index_power_law_alpha = a;
  }
}

void load_training(ModelSpec& spec, const ConfigNode& n) {
  n.check_keys(kTrainingDocs);
  for (const auto& d : kTrainingDocs) remember(spec, n, "training", d.key);
  auto& t = spec.training;
  t.seq_len = get_int_in(n, "seq_len", 1, 0, spec.kind != ModelKind::Dlrm);
  t.global_batch = n.get_positive_int("global_batch");
  // DLRM trains one batch per step: micro_batch defaults to global_batch / dp (0 here).
  t.micro_batch = get_int_in(n, "micro_batch", 1, spec.kind == ModelKind::Dlrm ? 0 : 1, false);
  t.precision =
      parse_precision(n, "precision", {"bf16", "fp16", "fp8", "fp32"}, sim::Precision::BF16);
  t.grad_precision = parse_precision(n, "grad_precision", {"bf16", "fp32"}, sim::Precision::FP32);
  if (n.has("fp8_scaling")) {
    if (t.precision != sim::Precision::FP8)
      n.child("fp8_scaling").fail("only with precision: fp8 (expected no fp8_scaling here)");
    const std::string scaling = n.get_enum("fp8_scaling", {"tensor", "current", "block128"});
    t.fp8_scaling = scaling == "block128"  ? Fp8Scaling::Block128
                    : scaling == "current" ? Fp8Scaling::Current
                                           : Fp8Scaling::Tensor;
  }
  if (n.has("fp8_params") && t.precision != sim::Precision::FP8)
    n.child("fp8_params").fail("only with precision: fp8 (expected no fp8_params here)");
  t.fp8_params = n.get_bool("fp8_params", false);
  std::string rc = n.get_enum("recompute", {"none", "selective", "full"}, "none");
  t.recompute = rc == "full"        ? Recompute::Full
                : rc == "selective" ? Recompute::Selective
                                    : Recompute::None;
  if (n.has("recompute_layers")) {
    if (t.recompute != Recompute::Full)
      n.child("recompute_layers").fail(
          "only with recompute: full (expected no recompute_layers here)");
    t.recompute_layers = get_int_in(n, "recompute_layers", 1, 0, true);
  }
  t.grad_sync = n.get_enum("grad_sync", {"allreduce", "distributed_optimizer"}, "allreduce") ==
                        "distributed_optimizer"
                    ? GradSync::DistributedOptimizer
                    : GradSync::AllReduce;
  if (t.fp8_params && t.grad_sync != GradSync::DistributedOptimizer)
    n.child("fp8_params")
        .fail(
            "only with grad_sync: distributed_optimizer (expected no fp8_params here: the "
            "fp8 weights are written by the distributed optimizer's update)");
  t.overlap_grad_reduce = n.get_bool("overlap_grad_reduce", true);
  if (n.has("overlap_param_gather") && t.grad_sync != GradSync::DistributedOptimizer)
    n.child("overlap_param_gather")
        .fail("only with grad_sync: distributed_optimizer (expected no overlap_param_gather "
              "here: all-reduce leaves the parameters in place)");
  t.overlap_param_gather = n.get_bool("overlap_param_gather", true);
  t.horovod_cycle_time_s = n.get_duration_s("horovod_cycle_time", 0.0);
  if (!(t.horovod_cycle_time_s >= 0))
    n.fail_key("horovod_cycle_time", "negative (expected a duration >= 0 such as \"1ms\")");
  t.host_launch_time_s = n.get_duration_s("host_launch_time", 0.0);
  if (!(t.host_launch_time_s >= 0))
    n.fail_key("host_launch_time", "negative (expected a duration >= 0 such as \"8us\")");
  t.host_sync_time_s = n.get_duration_s("host_sync_time", 0.0);
  if (!(t.host_sync_time_s >= 0))
    n.fail_key("host_sync_time", "negative (expected a duration >= 0 such as \"20us\")");
  if (n.has("high_priority_comm")) t.high_priority_comm = get_comm_streams(n, "high_priority_comm");
  if (n.has("clip_grad") && spec.kind == ModelKind::Dlrm)
    n.child("clip_grad").fail("only for transformer and moe (expected no clip_grad here)");
  t.clip_grad = n.get_double("clip_grad", 1.0);
  if (!(t.clip_grad >= 0))
    n.fail_key("clip_grad", fmt::format("{} is negative (expected a threshold >= 0)", t.clip_grad));
  t.grad_bucket_bytes = n.get_bytes("grad_bucket", 25ull << 20);
  if (t.grad_bucket_bytes == 0)
    n.fail_key("grad_bucket", "0 is not allowed (expected a size > 0 such as \"25MiB\")");
}

void load_parallelism(ModelSpec& spec, const ConfigNode& n) {
  n.check_keys(kParallelismDocs);
  for (const auto& d : kParallelismDocs) remember(spec, n, "parallelism", d.key);
  auto& p = spec.parallelism;
  if (n.has("dp") && n.get_string("dp") != "auto") p.dp = get_int_in(n, "dp", 1, 0, true);
  p.tp = get_int_in(n, "tp", 1, 1, false);
  p.pp = get_int_in(n, "pp", 1, 1, false);
  p.cp = get_int_in(n, "cp", 1, 1, false);
  p.ep = get_int_in(n, "ep", 1, 1, false);
  p.etp = get_int_in(n, "etp", 1, 0, false);
  p.sequence_parallel = n.get_bool("sequence_parallel", false);
  p.virtual_stages = get_int_in(n, "virtual_stages", 1, 1, false);
  p.first_stage_layers = get_int_in(n, "first_stage_layers", 1, 0, false);
  p.last_stage_layers = get_int_in(n, "last_stage_layers", 1, 0, false);
  p.embedding_in_split = n.get_bool("account_for_embedding_in_pipeline_split", false);
  p.loss_in_split = n.get_bool("account_for_loss_in_pipeline_split", false);
}

ModelSpec load_from(const ConfigNode& root) {
  if (!root.is_map()) root.fail("expected a map with kind, training and parallelism");
  root.check_keys(kTopDocs);
  ModelSpec spec;
  spec.source_file = root.file();
  for (const auto& d : kTopDocs) remember(spec, root, "", d.key);
  std::string stem = root.file();
  if (auto slash = stem.find_last_of('/'); slash != std::string::npos)
    stem = stem.substr(slash + 1);
  if (auto dot = stem.rfind(".yaml"); dot != std::string::npos) stem = stem.substr(0, dot);
  spec.name = root.get_string("name", stem);
  std::string kind = root.get_enum("kind", {"transformer", "moe", "dlrm"});
  spec.kind = kind == "moe"    ? ModelKind::Moe
              : kind == "dlrm" ? ModelKind::Dlrm
                               : ModelKind::Transformer;
  if (spec.kind == ModelKind::Dlrm) {
    for (const char* k : {"transformer", "moe"})
      if (root.has(k)) root.fail_key(k, "not allowed with kind: dlrm (expected a dlrm: section)");
    load_dlrm(spec, root.child("dlrm"));
  } else {
    if (root.has("dlrm")) root.fail_key("dlrm", "only allowed with kind: dlrm");
    load_transformer(spec, root.child("transformer"));
    if (spec.kind == ModelKind::Moe)
      load_moe(spec, root.child("moe"));
    else if (root.has("moe"))
      root.fail_key("moe", "only allowed with kind: moe (expected no moe: section)");
  }
  load_training(spec, root.child("training"));
  if (auto p = root.optional_child("parallelism")) load_parallelism(spec, *p);
  validate_model(spec);
  return spec;
}

void check_divides(const ModelSpec& spec, const std::string& key, long long divisor,
                   const std::string& what, long long value) {
  if (divisor > 0 && value % divisor != 0)
    fail_key(spec, key,
             fmt::format("{} does not divide {} = {} (expected a divisor of {})", divisor, what,
                         value, value));
}

// value must be a multiple of `what` = multiple (the key names value).
void check_multiple(const ModelSpec& spec, const std::string& key, long long value,
                    const std::string& what, long long multiple) {
  if (multiple > 0 && value % multiple != 0)
    fail_key(spec, key,
             fmt::format("{} is not a multiple of {} = {} (expected a multiple of {})", value, what,
                         multiple, multiple));
}

// a·b·... of parallel sizes, each at most 10^9 (get_int_in); the key names the product
// when it passes what an int64 holds.
long long checked_product(const ModelSpec& spec, const std::string& key, const std::string& what,
                          std::initializer_list<long long> factors) {
  long long out = 1;
  for (long long f : factors) {
    const auto next = config::checked_mul(out, f);
    if (!next)
      fail_key(spec, key, fmt::format("{} is too large (expected a product below 2^63)", what));
    out = *next;
  }
  return out;
}

int layers_per_middle_stage(const ModelSpec& spec) {
  const auto& p = spec.parallelism;
  int middle = spec.transformer.layers - p.first_stage_layers - p.last_stage_layers;
  int stages = p.pp - (p.first_stage_layers > 0 ? 1 : 0) - (p.last_stage_layers > 0 ? 1 : 0);
  return stages > 0 ? middle / stages : 0;
}

}  // namespace

ModelSpec load_model(const std::string& path) { return load_from(ConfigNode::load_file(path)); }

ModelSpec load_model_string(const std::string& text, const std::string& name) {
  return load_from(ConfigNode::load_string(text, name));
}

void validate_model(const ModelSpec& spec) {
  const auto& p = spec.parallelism;
  const auto& tr = spec.training;
  for (auto [key, v] : {std::pair{"parallelism.tp", p.tp},
                        {"parallelism.pp", p.pp},
                        {"parallelism.cp", p.cp},
                        {"parallelism.ep", p.ep},
                        {"parallelism.virtual_stages", p.virtual_stages}})
    if (v < 1) fail_key(spec, key, fmt::format("{} is not positive (expected an integer >= 1)", v));
  if (p.dp < 0) fail_key(spec, "parallelism.dp", "negative (expected an integer >= 1 or auto)");

  if (spec.kind == ModelKind::Dlrm) {
    // Embeddings are sharded over all ranks, MLPs are data parallel: no tp/pp/cp/ep.
    for (auto [key, v] : {std::pair{"parallelism.tp", p.tp},
                          {"parallelism.pp", p.pp},
                          {"parallelism.cp", p.cp},
                          {"parallelism.ep", p.ep}})
      if (v != 1)
        fail_key(spec, key,
                 fmt::format("{} is not supported for dlrm (expected 1: embeddings are sharded "
                             "over all ranks and MLPs are data parallel)",
                             v));
    if (spec.dlrm.interaction == "dcn" && (spec.dlrm.dcn_layers < 1 || spec.dlrm.dcn_rank < 1))
      fail_key(spec, "dlrm.interaction", "dcn needs dcn_layers >= 1 and dcn_rank >= 1");
    if (spec.dlrm.tables.empty()) fail_key(spec, "dlrm.tables", "empty (expected at least one)");
    if (p.dp > 0)
      check_multiple(spec, "training.global_batch", tr.global_batch,
                     tr.micro_batch > 0 ? "micro_batch·dp" : "dp",
                     1LL * p.dp * std::max(tr.micro_batch, 1));
    return;
  }

  const auto& t = spec.transformer;
  const auto& a = t.attention;
  if (a.kind == AttentionKind::Standard && a.head_dim == 0 && t.hidden % a.heads != 0)
    fail_key(spec, "transformer.attention.heads",
             fmt::format("{} heads do not divide hidden = {} (expected a divisor of hidden, or "
                         "set head_dim)",
                         a.heads, t.hidden));
  if (a.heads % a.kv_heads != 0)
    fail_key(spec, "transformer.attention.kv_heads",
             fmt::format("{} does not divide heads = {} (expected a divisor of heads)", a.kv_heads,
                         a.heads));
  if (a.window > 0 && p.cp > 1)
    fail_key(spec, "transformer.attention.window",
             "a sliding window with context parallelism is not modelled (expected cp 1 with a "
             "window)");
  if (a.unfused && (a.kind == AttentionKind::Mla || p.cp > 1))
    fail_key(spec, "transformer.attention.kernel",
             "unfused is modelled for standard attention without context parallelism (expected "
             "flash with kind: mla or cp > 1)");
  if (a.heads % p.tp != 0)
    fail_key(spec, "parallelism.tp",
             fmt::format("{} does not divide attention heads = {} (expected a divisor of {})", p.tp,
                         a.heads, a.heads));
  if (a.kv_heads % p.tp != 0)
    fail_key(spec, "parallelism.tp",
             fmt::format("{} does not divide kv_heads = {} (expected a divisor of the GQA key/"
                         "value heads {})",
                         p.tp, a.kv_heads, a.kv_heads));
  if (t.ffn_hidden > 0)
    check_divides(spec, "parallelism.tp", p.tp, "transformer.ffn_hidden", t.ffn_hidden);
  if (p.sequence_parallel)
    check_divides(spec, "parallelism.sequence_parallel", p.tp, "seq_len (tp must divide it)",
                  tr.seq_len);
  check_divides(spec, "parallelism.cp", p.cp, "training.seq_len", tr.seq_len);

  if (spec.kind == ModelKind::Moe) {
    const auto& m = spec.moe;
    if (m.top_k > m.experts)
      fail_key(
          spec, "moe.top_k",
          fmt::format("{} exceeds experts = {} (expected top_k <= experts)", m.top_k, m.experts));
    check_divides(spec, "parallelism.ep", p.ep, "moe.experts", m.experts);
    if (p.etp > p.tp)
      fail_key(spec, "parallelism.etp",
               fmt::format("{} exceeds tp = {} (expected etp <= tp)", p.etp, p.tp));
    check_divides(spec, p.etp > 0 ? "parallelism.etp" : "parallelism.tp", p.expert_tp(),
                  "moe.expert_ffn_hidden", m.expert_ffn_hidden);
    if (m.dense_layers >= t.layers)
      fail_key(spec, "moe.dense_layers",
               fmt::format("{} leaves no MoE layer (expected fewer than layers = {})",
                           m.dense_layers, t.layers));
    if (m.dense_layers > 0 && t.ffn_hidden == 0)
      fail_key(spec, "transformer.ffn_hidden", "missing (required when moe.dense_layers > 0)");
    if (m.hierarchical_dispatch() && p.expert_tp() != 1)
      fail_key(spec, "moe.dispatcher",
               fmt::format("{} with expert tensor parallelism {} (expected parallelism.etp: 1; "
                           "the hierarchical exchange is modelled for whole experts per rank)",
                           to_string(m.dispatcher), p.expert_tp()));
    // Megatron-Core's own rules (TransformerConfig.__post_init__).
    if (m.ep_overlap && p.pp > 1 && p.virtual_stages <= 1)
      fail_key(spec, "moe.ep_overlap",
               fmt::format("true with pp = {} and no virtual stages (expected "
                           "parallelism.virtual_stages > 1: Megatron-Core's EP overlap runs "
                           "in the interleaved schedule when pp > 1)",
                           p.pp));
    if (m.ep_overlap && p.ep <= 1)
      fail_key(spec, "moe.ep_overlap",
               "true with ep 1 (expected parallelism.ep > 1: there is no token exchange to "
               "overlap)");
    if (m.ep_overlap && spec.training.recompute == Recompute::Full)
      fail_key(spec, "moe.ep_overlap",
               "true with training.recompute full (expected selective or none: Megatron-Core's "
               "EP overlap does not run with full recomputation)");
    if (p.tp > 1 && !p.sequence_parallel)
      fail_key(spec, "parallelism.sequence_parallel",
               "false with tp > 1 in an MoE model (expected true: Megatron requires sequence "
               "parallelism for MoE with tensor parallelism)");
    const long long stage_ranks = 1LL * p.tp * p.cp * p.dp;
    if (p.dp > 0 && stage_ranks % (1LL * p.ep * p.expert_tp()) != 0)
      fail_key(spec, "parallelism.ep",
               fmt::format("ep {} x etp {} = {} does not divide tp·cp·dp = {} (expected ep·etp "
                           "to divide the ranks of a pipeline stage)",
                           p.ep, p.expert_tp(), 1LL * p.ep * p.expert_tp(), stage_ranks));
  } else if (p.ep != 1) {
    fail_key(spec, "parallelism.ep", fmt::format("{} needs kind: moe (expected 1)", p.ep));
  } else if (p.etp != 0) {
    fail_key(spec, "parallelism.etp", fmt::format("{} needs kind: moe (expected no etp)", p.etp));
  }

  // Pipeline split.
  if (p.virtual_stages > 1 && p.pp == 1)
    fail_key(spec, "parallelism.virtual_stages", "needs pp > 1 (expected 1 when pp is 1)");
  const int counted = (p.embedding_in_split ? 1 : 0) + (p.loss_in_split ? 1 : 0);
  if (counted > 0 && (p.first_stage_layers > 0 || p.last_stage_layers > 0))
    fail_key(spec,
             p.embedding_in_split ? "parallelism.account_for_embedding_in_pipeline_split"
                                  : "parallelism.account_for_loss_in_pipeline_split",
             "cannot be combined with first_stage_layers/last_stage_layers (expected one way "
             "to split the pipeline)");
  if (counted > 0) {
    const long long slices = 1LL * p.pp * p.virtual_stages;
    const long long slots = 1LL * t.layers + counted;
    if (p.pp < 2 || slots % slices != 0 || slots / slices < 2)
      fail_key(spec,
               p.embedding_in_split ? "parallelism.account_for_embedding_in_pipeline_split"
                                    : "parallelism.account_for_loss_in_pipeline_split",
               fmt::format("layers = {} plus {} counted = {} over pp·virtual_stages = {} chunks "
                           "(expected pp > 1 and a multiple of the chunks with at least 2 each)",
                           t.layers, counted, slots, slices));
  } else if (p.first_stage_layers > 0 || p.last_stage_layers > 0) {
    if (p.virtual_stages > 1)
      fail_key(spec, "parallelism.first_stage_layers",
               "uneven stages cannot be combined with virtual_stages > 1 (expected an even "
               "split)");
    int fixed = (p.first_stage_layers > 0) + (p.last_stage_layers > 0);
    int rest = t.layers - p.first_stage_layers - p.last_stage_layers;
    int stages = p.pp - fixed;
    if (p.pp < 2 || rest < 0 || (stages == 0 && rest != 0) || (stages > 0 && rest % stages != 0) ||
        (stages > 0 && rest / stages < 1))
      fail_key(spec,
               p.first_stage_layers > 0 ? "parallelism.first_stage_layers"
                                        : "parallelism.last_stage_layers",
               fmt::format("layers = {} minus first/last stage layers leaves {} for {} other "
                           "stages (expected a positive multiple of {})",
                           t.layers, rest, stages, std::max(stages, 1)));
  } else if (const long long slices = 1LL * p.pp * p.virtual_stages; t.layers % slices != 0) {
    // Both factors are at most 10^9, so the product fits a long long (an int would wrap
    // to 0 at 65536·65536 and the modulo would trap).
    fail_key(spec, "parallelism.pp",
             fmt::format("pp·virtual_stages = {} does not divide layers = {} (expected a "
                         "divisor, or set first_stage_layers/last_stage_layers)",
                         slices, t.layers));
  }
  if (p.dp > 0) {
    check_multiple(spec, "training.global_batch", tr.global_batch, "micro_batch·dp",
                   1LL * p.dp * tr.micro_batch);
    long long microbatches = tr.global_batch / (1LL * p.dp * tr.micro_batch);
    if (p.virtual_stages > 1 && microbatches % p.pp != 0)
      fail_key(spec, "parallelism.virtual_stages",
               fmt::format("interleaving needs microbatches = {} to be a multiple of pp = {} "
                           "(expected global_batch / (micro_batch·dp) divisible by pp)",
                           microbatches, p.pp));
  }
}

ModelSpec resolve_for_world(const ModelSpec& spec, int world_size, int gpus_per_node) {
  ModelSpec r = spec;
  auto& p = r.parallelism;
  const long long model_parallel =
      checked_product(spec, "parallelism", "tp·pp·cp", {p.tp, p.pp, p.cp});
  if (world_size < 1)
    throw ConfigError(
        fmt::format("{}: GPU count {} is not positive", spec.source_file, world_size));
  if (p.dp == 0) {
    if (world_size % model_parallel != 0)
      fail_key(spec, "parallelism",
               fmt::format("tp·pp·cp = {} does not divide the {} GPUs (expected tp·pp·cp to "
                           "divide the GPU count so dp can be derived)",
                           model_parallel, world_size));
    p.dp = static_cast<int>(world_size / model_parallel);
  } else if (const long long all =
                 checked_product(spec, "parallelism.dp", "dp·tp·pp·cp", {model_parallel, p.dp});
             all != world_size) {
    fail_key(spec, "parallelism.dp",
             fmt::format("dp·tp·pp·cp = {}·{}·{}·{} = {} but the cluster has {} GPUs (expected "
                         "the product to equal the GPU count, or dp: auto)",
                         p.dp, p.tp, p.pp, p.cp, all, world_size));
  }
  if (gpus_per_node > 0 && gpus_per_node % p.tp != 0)
    fail_key(spec, "parallelism.tp",
             fmt::format("{} does not divide the {} GPUs per node (expected a TP group inside "
                         "one node)",
                         p.tp, gpus_per_node));
  validate_model(r);
  if (r.kind == ModelKind::Moe && r.moe.hierarchical_dispatch() && gpus_per_node > 0) {
    try {
      ParallelLayout(p.tp, p.cp, p.dp, p.pp, p.ep, p.expert_tp()).ep_ranks_per_node(gpus_per_node);
    } catch (const std::invalid_argument& e) {
      fail_key(spec, "moe.dispatcher",
               fmt::format("{} needs each EP group inside a node or on whole nodes: {}",
                           to_string(r.moe.dispatcher), e.what()));
    }
  }
  return r;
}

LayerRange stage_layers(const ModelSpec& spec, int stage, int chunk) {
  const auto& p = spec.parallelism;
  const int layers = spec.transformer.layers;
  if (p.first_stage_layers > 0 || p.last_stage_layers > 0) {
    int per = layers_per_middle_stage(spec);
    int first = p.first_stage_layers > 0 ? p.first_stage_layers : per;
    if (stage == 0) return {0, first};
    if (stage == p.pp - 1)
      return {layers - (p.last_stage_layers > 0 ? p.last_stage_layers : per), layers};
    int begin = first + (stage - 1) * per;
    return {begin, begin + per};
  }
  // Megatron interleaving: chunk c of stage s holds the (c·pp + s)-th slice of the layers,
  // with the embedding (slot 0) and the loss (the last slot) counted as layers where the
  // model says so; those slots hold no Transformer layer.
  const long long slices = 1LL * p.pp * p.virtual_stages;
  const int e = p.embedding_in_split ? 1 : 0;
  const long long per = slices > 0 ? (1LL * layers + e + (p.loss_in_split ? 1 : 0)) / slices : 0;
  const long long g = 1LL * chunk * p.pp + stage;
  const long long begin = std::max(0LL, g * per - e);
  const long long end = std::min(1LL * layers, (g + 1) * per - e);
  return {static_cast<int>(begin), static_cast<int>(end)};
}

bool fully_recomputed(const ModelSpec& spec, int position) {
  const TrainingSpec& t = spec.training;
  return t.recompute == Recompute::Full && (t.recompute_layers <= 0 || position < t.recompute_layers);
}

double fully_recomputed_share(const ModelSpec& spec) {
  const TrainingSpec& t = spec.training;
  const int layers = spec.transformer.layers;
  if (t.recompute != Recompute::Full || layers <= 0) return 0;
  if (t.recompute_layers <= 0) return 1;
  const auto& p = spec.parallelism;
  long long rebuilt = 0;
  for (int s = 0; s < std::max(1, p.pp); ++s)
    for (int c = 0; c < std::max(1, p.virtual_stages); ++c) {
      const LayerRange r = stage_layers(spec, s, c);
      rebuilt += std::min(std::max(0, r.end - r.begin), t.recompute_layers);
    }
  return std::min(1.0, static_cast<double>(rebuilt) / layers);
}

const std::vector<ParamDoc>& model_param_docs(const std::string& section) {
  static const std::vector<ParamDoc> kEmpty;
  if (section.empty()) return kTopDocs;
  if (section == "transformer") return kTransformerDocs;
  if (section == "transformer.attention") return kAttentionDocs;
  if (section == "moe") return kMoeDocs;
  if (section == "dlrm") return kDlrmDocs;
  if (section == "training") return kTrainingDocs;
  if (section == "parallelism") return kParallelismDocs;
  return kEmpty;
}

}  // namespace overlapsim::workloads
