#pragma once
// Model YAML: what is trained (Transformer, MoE or DLRM dimensions), how (precision,
// batch, recompute, optimizer sharding) and how it is split over GPUs (dp, tp, pp, cp,
// ep). The schema is documented key by key in docs/model-format.md and in the ParamDoc
// tables of model.cpp.
//
// Loading is two steps so the CLI can override parallelism in between:
//   ModelSpec spec = load_model(path);          // syntax, units, enums, per-key ranges
//   spec.parallelism.tp = 4;                    // optional overrides
//   validate_model(spec);                       // cross-key rules (tp | heads, ...)
//   ModelSpec r = resolve_for_world(spec, 1024, 8);  // dp·tp·pp·cp == GPUs, TP in a node
// Every failure is a config::ConfigError whose message names the model file, the key
// (with line:column where the key was in the file) and the expected form.
#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "config/config_node.hpp"
#include "sim/graph/op_graph.hpp"

namespace overlapsim::workloads {

enum class ModelKind { Transformer, Moe, Dlrm };
enum class MlpKind { Gelu, Swiglu };  // swiglu: gate and up projections, 3 matrices
enum class NormKind { LayerNorm, RmsNorm };
enum class AttentionKind { Standard, Mla };  // standard covers MHA and GQA
enum class PositionEmbedding { Learned, Rope };
enum class Recompute { None, Selective, Full };
enum class GradSync { AllReduce, DistributedOptimizer };

const char* to_string(ModelKind k);
const char* to_string(Recompute r);
const char* to_string(GradSync g);

struct AttentionSpec {
  AttentionKind kind = AttentionKind::Standard;
  int heads = 0;
  int kv_heads = 0;    // GQA; equals heads for MHA
  int head_dim = 0;    // default hidden / heads
  bool causal = true;  // causal masking: kernels skip the masked half of QK^T and PV
  // The attention kernel: FlashAttention-style (fused, scores never in device memory), or
  // unfused as Megatron-LM ran before it: batched GEMMs around a scale-mask-softmax kernel
  // over the b x heads x s x s scores in device memory (Korthikanti et al. 2022, sec. 4.1).
  bool unfused = false;
  // Sliding-window attention (Mistral, Gemma 2, GPT-OSS): each query attends to the `window`
  // most recent keys, itself included (Megatron-LM --window-size (window - 1, 0)); 0: full.
  // full_attention_every N > 0: every N-th layer (1-based, Megatron-LM
  // --window-attn-skip-freq N) attends to the whole sequence; 0: every layer is windowed.
  int window = 0;
  int full_attention_every = 0;
  // QK-norm (Qwen3, OLMo 2, Gemma 3; Megatron-LM --qk-layernorm): an RMSNorm over each query
  // and key head after the QKV projection, before rope and the attention core.
  bool qk_norm = false;
  // Whether layer `layer` (0-based) runs the sliding window.
  bool windowed(int layer) const {
    return window > 0 && (full_attention_every == 0 || (layer + 1) % full_attention_every != 0);
  }
  // Query-key pairs of a windowed layer over a sequence of s tokens: s·w − w²/2, the causal
  // s²/2 once w reaches s.
  double window_pairs(double s) const {
    const double w = std::min<double>(window, s);
    return s * w - w * w / 2;
  }
  // Multi-head latent attention (DeepSeek-V2/V3). q_lora_rank 0: no query compression.
  int q_lora_rank = 0;
  int kv_lora_rank = 0;
  int qk_nope_head_dim = 0;
  int qk_rope_head_dim = 0;
  int v_head_dim = 0;
};

struct TransformerSpec {
  int layers = 0;
  int hidden = 0;
  int ffn_hidden = 0;  // dense MLP inner size (for MoE: the dense layers' size)
  int vocab = 0;
  MlpKind mlp = MlpKind::Gelu;
  NormKind norm = NormKind::LayerNorm;
  PositionEmbedding position = PositionEmbedding::Rope;
  bool bias = false;            // linear layers carry biases (GPT-2/3 style)
  bool tie_embeddings = false;  // output head shares the input embedding matrix
  // Dropout probabilities (Megatron-LM --attention-dropout, --hidden-dropout). Only whether
  // they are above 0 changes the cost: p = 0 launches no dropout kernel (PyTorch's dropout
  // returns its input), any p > 0 reads and writes the same bytes.
  double attention_dropout = 0;  // on the attention probabilities
  double hidden_dropout = 0;     // on each residual branch and on the embedding output
  AttentionSpec attention;
};

// Mixture of experts on top of TransformerSpec (kind: moe).
// How routed tokens travel to their experts (MoeSpec::dispatcher).
enum class TokenDispatcher {
  AllToAll,  // NCCL all-to-all over the expert-parallel group: one copy per (token, expert)
  // DeepEP's or HybridEP's hierarchical exchange (Megatron-Core's flex dispatcher): a token
  // crosses the network once per destination node, to the GPU of the same local index
  // there, which forwards its copies over NVLink to the GPUs that hold its experts.
  DeepEp,
  HybridEp,
};
const char* to_string(TokenDispatcher d);

struct MoeSpec {
  int experts = 0;         // routed experts per MoE layer
  int top_k = 0;           // routed experts per token
  int shared_experts = 0;  // always-active experts (DeepSeek), each of expert_ffn_hidden
  int expert_ffn_hidden = 0;
  int dense_layers = 0;  // the first `dense_layers` layers use a dense MLP of ffn_hidden
  TokenDispatcher dispatcher = TokenDispatcher::AllToAll;
  // The host waits for the tokens per expert in every MoE layer's forward (the router's
  // output copied to the host) before it issues the exchange.
  bool host_sync = true;
  // The token permutation by fused kernels (Transformer Engine's, Megatron-LM
  // --moe-permute-fusion), charged as one pass each way; false: Megatron-Core's unfused torch
  // path (index_select, then scatter_add_ to unpermute; index_add_ in the backward).
  bool permute_fusion = true;
  // The router's top-k and softmax by a fused kernel (Megatron-LM --moe-router-fusion);
  // false: Megatron-Core's TopKRouter in torch ops, with its measured kernels.
  bool router_fusion = true;
  // Megatron-Core's EP communication overlap (--overlap-moe-expert-parallel-comm,
  // Megatron-Bridge moe_a2a_overlap): each microbatch's forward runs beside the previous
  // one's backward, layer by layer, the token exchanges of one beside the other's compute.
  bool ep_overlap = false;
  // The experts' weight gradients run after the dispatch's backward exchange is issued, so
  // that it moves data beside them (Megatron-Core --delay-wgrad-compute with the EP overlap,
  // --overlap-dispatch-backward-with-experts-wgrad without). false, Megatron's default:
  // Transformer Engine's grouped linear computes them with the data gradients, and the
  // exchange's stream waits for them.
  bool delay_wgrad = false;
  bool hierarchical_dispatch() const { return dispatcher != TokenDispatcher::AllToAll; }
};

// How the model-parallel embedding tables are split over the ranks (DlrmSpec::sharding).
enum class TableSharding {
  Balanced,   // every rank 1/W of each table's lookups and pooled outputs (ideal split)
  TableWise,  // whole tables on ranks, placed greedily by lookup load (HugeCTR, TorchRec TW)
  RowWise,    // every table split by rows over all ranks; partial pools reduce-scattered
  // Whole tables, placed as Merlin Distributed Embeddings' "memory_balanced" strategy does:
  // sorted by size, largest first, rank i takes the i-th and the (2W-1-i)-th of every 2W.
  MemoryBalanced,
};
const char* to_string(TableSharding s);

// How the model-parallel tables' forward and backward run (DlrmSpec::embedding_ops).
enum class EmbeddingOps {
  // Fused kernels (TorchRec/FBGEMM, HugeCTR): the lookup pools straight into the all-to-all
  // buffer, and the sparse optimizer update is fused into the tables' backward over every
  // lookup.
  Fused,
  // TensorFlow ops (Merlin Distributed Embeddings under Keras): a gather per table, the
  // local outputs concatenated and cast into the all-to-all buffer, the received gradients
  // cast back and scaled, deduplicated (unique, unsorted segment sum) into IndexedSlices,
  // and the optimizer run as separate gather / update / scatter ops over the unique rows.
  TensorFlow,
};
const char* to_string(EmbeddingOps o);

struct EmbeddingTableSpec {
  std::int64_t rows = 0;
  int hotness = 1;  // lookups pooled per sample (multi-hot size)
};

// DLRM with a DCNv2 (low-rank cross network) or dot interaction (kind: dlrm).
struct DlrmSpec {
  int dense_features = 0;
  int embedding_dim = 0;
  std::vector<EmbeddingTableSpec> tables;
  std::vector<int> bottom_mlp;      // output sizes; input is dense_features
  std::vector<int> top_mlp;         // output sizes; input is the interaction output
  std::string interaction = "dcn";  // dcn | dot
  int dcn_layers = 0;
  int dcn_rank = 0;  // low-rank cross: W = U V^T with U, V of d x rank
  sim::Precision embedding_precision = sim::Precision::FP32;
  // Hybrid sharding: tables of at most this many rows are replicated on every rank and
  // trained data parallel (their gradients all-reduced); the others are model parallel,
  // split as `sharding` says. 0: every table model parallel.
  std::int64_t data_parallel_max_rows = 0;
  TableSharding sharding = TableSharding::Balanced;
  // adagrad: dense Adagrad and row-wise Adagrad fused into the tables' backward (MLPerf
  // reference); adam: dense Adam and lazy Adam on the touched rows (rows, m and v).
  std::string optimizer = "adagrad";
  // Element type of the all-to-all of the pooled rows and of their gradients; unset: the
  // tables' embedding_precision.
  std::optional<sim::Precision> exchange_precision;
  EmbeddingOps embedding_ops = EmbeddingOps::Fused;
  // Distribution of the lookups' row indices, used where the sparse update works on the
  // distinct rows of a step (embedding_ops: tensorflow): 0 uniform; > 0 a power law
  // P(row k) ~ (k + 1)^-alpha, as DeepLearningExamples' synthetic data generator draws.
  double index_power_law_alpha = 0;

  sim::Precision exchange_type() const { return exchange_precision.value_or(embedding_precision); }
};

struct Parallelism {
  int dp = 0;  // 0: derived from the GPU count (dp = gpus / (tp·pp·cp))
  int tp = 1;
  int pp = 1;
  int cp = 1;
  int ep = 1;  // MoE experts split over ep ranks
  // Expert tensor parallelism (Megatron-LM --expert-tensor-parallel-size); 0: equal to tp.
  // The experts' ep x etp ranks are folded over a stage's tp x cp x dp ranks (Megatron-Core
  // MoE parallel folding), so ep may span TP ranks when etp < tp.
  int etp = 0;
  int expert_tp() const { return etp > 0 ? etp : tp; }
  bool sequence_parallel = false;
  int virtual_stages = 1;  // interleaved 1F1B when > 1
  // Uneven pipelines (Megatron --decoder-first/last-pipeline-num-layers): 0 = even split.
  int first_stage_layers = 0;
  int last_stage_layers = 0;
  // Megatron-LM --account-for-embedding-in-pipeline-split / --account-for-loss-in-pipeline-
  // split: the embedding and the loss each count as one layer when the layers are dealt to
  // the pp x virtual_stages model chunks, so the first and the last chunk hold one layer
  // fewer; with interleaving too.
  bool embedding_in_split = false;
  bool loss_in_split = false;
};

// How fp8 GEMM inputs are scaled: one scale per tensor from the amax history (Transformer
// Engine's DelayedScaling), one scale per tensor from its own amax (Float8CurrentScaling,
// Megatron-LM --fp8-recipe tensorwise), or per 1 x 128 activation run and 128 x 128
// weight block (DeepSeek-V3).
enum class Fp8Scaling { Tensor, Current, Block128 };

struct TrainingSpec {
  int seq_len = 0;                                  // transformer only
  std::int64_t global_batch = 0;                    // sequences (transformer) or samples (dlrm)
  int micro_batch = 1;                              // dlrm: 0 = global_batch / dp (one microbatch)
  sim::Precision precision = sim::Precision::BF16;  // GEMM inputs (fp8: TE-style GEMMs)
  Fp8Scaling fp8_scaling = Fp8Scaling::Tensor;      // with precision fp8 only
  // The model weights are kept in fp8 (Megatron-LM --fp8-param-gather, NeMo fp8_params):
  // the distributed optimizer writes its updated shard in fp8 and all-gathers 1 byte per
  // element, and the first microbatch only transposes the gathered fp8 weight.
  bool fp8_params = false;
  // DP gradient reduction; Megatron-LM accumulates and reduces bf16 models' grads in fp32.
  sim::Precision grad_precision = sim::Precision::FP32;
  Recompute recompute = Recompute::None;
  // With full recompute, only the first this many layers of each model chunk (a stage's
  // layers, or each of its virtual chunks) are rebuilt; the rest keep their activations
  // (Megatron-LM --recompute-method block --recompute-num-layers N). 0: every layer.
  int recompute_layers = 0;
  GradSync grad_sync = GradSync::AllReduce;
  std::uint64_t grad_bucket_bytes = 25ull << 20;  // PyTorch DDP bucket_cap_mb = 25
  // Megatron-LM --overlap-grad-reduce: each bucket's reduction starts when its last
  // gradient is produced (false: all reductions after the backward pass).
  bool overlap_grad_reduce = true;
  // Megatron-LM --overlap-param-gather (distributed optimizer only): each layer's
  // parameter all-gather is issued one layer ahead of its first forward use instead of
  // after the optimizer.
  bool overlap_param_gather = true;
  // Collectives issued through Horovod, whose background thread starts a coordination
  // cycle at most every this long: each collective waits half a cycle on average after
  // its members are ready. 0: NCCL called directly (PyTorch, Megatron, HugeCTR).
  double horovod_cycle_time_s = 0;
  // The host that issues the kernels (docs/simulate.md, "The host"): its time per kernel
  // launched on the eager path, and the round trip of a device-to-host copy it waits for
  // (the all-to-all token dispatcher's counts). 0 and 0: the host always runs ahead.
  double host_launch_time_s = 0;
  double host_sync_time_s = 0;
  // The communication streams the framework creates with high priority (Megatron-LM
  // --high-priority-stream-groups; its EP overlap's --high-priority-a2a-comm-stream), per
  // sim::StreamKind: their NCCL kernels go ahead of a running memory-bound kernel's
  // remaining CTAs where default-priority ones queue behind them. None by default, as
  // PyTorch's ProcessGroupNCCL and Megatron-LM create them.
  std::array<bool, sim::kNumStreamKinds> high_priority_comm{};
  // Megatron-LM --clip-grad (default 1.0, megatron/training/arguments.py): the global
  // gradient norm is computed every step (a read of every fp32 main gradient) when > 0.
  // Transformer and MoE models only.
  double clip_grad = 1.0;
};

struct ModelSpec {
  std::string name;
  std::string source_file;  // the YAML this came from ("" when built in code)
  ModelKind kind = ModelKind::Transformer;
  TransformerSpec transformer;  // transformer and moe
  MoeSpec moe;                  // moe
  DlrmSpec dlrm;                // dlrm
  Parallelism parallelism;
  TrainingSpec training;
  // "parallelism.tp" -> "file:line:col", so later checks can point at the key.
  std::map<std::string, std::string> key_locations;
};

// Parses a model file (or text, for tests) and runs validate_model().
ModelSpec load_model(const std::string& path);
ModelSpec load_model_string(const std::string& text, const std::string& name);

// Cross-key rules that hold for any GPU count. Throws config::ConfigError.
void validate_model(const ModelSpec& spec);

// Fixes dp from the GPU count (when 0) and checks dp·tp·pp·cp == world_size and, when
// gpus_per_node > 0, that a TP group fits inside a node. Throws config::ConfigError.
ModelSpec resolve_for_world(const ModelSpec& spec, int world_size, int gpus_per_node = 0);

// Layers [begin, end) held by pipeline stage `stage` (virtual chunk `chunk`).
struct LayerRange {
  int begin = 0;
  int end = 0;
};
LayerRange stage_layers(const ModelSpec& spec, int stage, int chunk = 0);

// Whether the layer at `position` (0 = first) of its model chunk is rebuilt by full
// recomputation: recompute full, and within training.recompute_layers when that is set.
bool fully_recomputed(const ModelSpec& spec, int position);
// The share of the model's layers that full recomputation rebuilds (0 without it).
double fully_recomputed_share(const ModelSpec& spec);

// Documented keys per section, for check_keys() and for printing by the CLI.
const std::vector<config::ParamDoc>& model_param_docs(const std::string& section);

}  // namespace overlapsim::workloads
