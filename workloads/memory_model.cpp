#include "workloads/memory_model.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>

#include "workloads/dlrm.hpp"
#include "workloads/generator.hpp"
#include "config/units.hpp"

namespace overlapsim::workloads {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;

// Terms the caching allocator does not hand out (not in torch.cuda.max_memory_allocated).
constexpr const char* kContext = "CUDA context";
constexpr const char* kNccl = "NCCL buffers";
constexpr const char* kFragmentation = "fragmentation";

constexpr const char* kMegatronOptimizer =
    "Megatron-LM docs, distributed optimizer: bytes per parameter (bf16 param + fp32 grad: "
    "6 + 12/d; fp16 grad: 4 + 16/d; fp32: 8 + 8/d); Rajbhandari et al. 2020 (ZeRO) sec. 3";
constexpr const char* kKorthikanti =
    "Korthikanti et al. 2022, sec. 4 (per layer sbh(34/t + 5as/(ht)) with SP), adapted: "
    "dropout masks only where the model sets dropout, flash attention keeps Q, K, V, output "
    "and log-sum-exp, SwiGLU, GQA";

// ---- parameters ------------------------------------------------------------------------

struct LayerParameters {
  double dense = 0;   // TP-sharded matrices / t plus replicated norms, router
  double expert = 0;  // routed experts held by this rank
};

double norm_parameters(const ModelSpec& m, double width) {
  return m.transformer.norm == NormKind::LayerNorm ? 2 * width : width;  // LayerNorm: + bias
}

bool is_moe_layer(const ModelSpec& m, int layer) {
  return m.kind == ModelKind::Moe && layer >= m.moe.dense_layers;
}

// head_dim 0 in the spec means hidden / heads (docs/model-format.md).
double head_dim(const ModelSpec& m) {
  const auto& a = m.transformer.attention;
  return a.head_dim > 0 ? a.head_dim : static_cast<double>(m.transformer.hidden) / a.heads;
}

double mlp_matrices(const ModelSpec& m) { return m.transformer.mlp == MlpKind::Swiglu ? 3 : 2; }

// Per-rank parameters of one layer. TP splits the attention and MLP matrices (Megatron's
// column/row-parallel linears, Shoeybi et al. 2019); norms, biases of row-parallel layers,
// the router and MLA's down projections are replicated over TP. Routed experts: E/ep per
// rank, each split over expert TP (default TP; workloads/parallel_layout.hpp).
LayerParameters layer_parameters(const ModelSpec& m, int layer) {
  const auto& tr = m.transformer;
  const auto& a = tr.attention;
  const double h = tr.hidden;
  const double t = m.parallelism.tp;
  LayerParameters p;
  p.dense += 2 * norm_parameters(m, h);
  if (a.kind == AttentionKind::Mla) {
    // In doubles from the start: products of the file's int sizes can pass INT_MAX.
    const double heads = a.heads, q_rank = a.q_lora_rank, kv_rank = a.kv_lora_rank;
    const double nope = a.qk_nope_head_dim, rope = a.qk_rope_head_dim, v = a.v_head_dim;
    const double qk = nope + rope;
    if (a.q_lora_rank > 0) {
      p.dense += h * q_rank + norm_parameters(m, a.q_lora_rank);
      p.dense += q_rank * heads * qk / t;
    } else {
      p.dense += h * heads * qk / t;
    }
    p.dense += h * (kv_rank + rope) + norm_parameters(m, a.kv_lora_rank);
    p.dense += kv_rank * heads * (nope + v) / t;
    p.dense += heads * v * h / t;
  } else {
    const double q = static_cast<double>(a.heads) * head_dim(m);
    const double kv = static_cast<double>(a.kv_heads) * head_dim(m);
    p.dense += (h * (q + 2 * kv) + q * h) / t;
    if (tr.bias) p.dense += (q + 2 * kv) / t + h;
    // QK-norm: one norm over a head's width for the queries and one for the keys, replicated.
    if (a.qk_norm) p.dense += 2 * norm_parameters(m, head_dim(m));
  }
  if (is_moe_layer(m, layer)) {
    const double ef = m.moe.expert_ffn_hidden;
    const double shared = mlp_matrices(m) * h * ef / t;
    const double routed = mlp_matrices(m) * h * ef / m.parallelism.expert_tp();
    p.dense += h * m.moe.experts;                   // router
    p.dense += m.moe.shared_experts * shared;       // shared experts: dense, every rank
    p.expert += static_cast<double>(m.moe.experts) / m.parallelism.ep * routed;
  } else {
    p.dense += mlp_matrices(m) * h * tr.ffn_hidden / t;
    if (tr.bias) p.dense += tr.ffn_hidden / t + h;
  }
  return p;
}

// ---- activations -----------------------------------------------------------------------

// Bytes per stored activation element: bf16/fp16.
constexpr double kActivationBytes = 2;
// A dropout mask element: PyTorch's native_dropout keeps a bool mask.
constexpr double kDropoutMaskBytes = 1;

// Bytes per element of a normed GEMM input kept for the weight gradient: with fp8 GEMMs
// Transformer Engine keeps the input's fp8 cast (1 byte; DeepSeek-V3 report sec. 3.3.2
// caches these in fp8 too), else the 16-bit tensor.
double gemm_input_bytes(const ModelSpec& m) {
  return m.training.precision == sim::Precision::FP8 ? 1.0 : kActivationBytes;
}

struct ActivationParts {
  double kept = 0;       // stored with no recompute and with selective recompute
  double selective = 0;  // dropped by selective recompute (rebuilt in the backward pass)
};

// One layer, one micro-batch, one rank. T tokens per rank-sequence (s/cp · b); pieces
// replicated over TP (norm inputs, the GEMM inputs before an all-gather) are divided by t
// only with sequence parallelism (Korthikanti et al. 2022, sec. 4.2.2).
ActivationParts layer_parts(const ModelSpec& m, int layer) {
  const auto& tr = m.transformer;
  const auto& a = tr.attention;
  const auto& p = m.parallelism;
  const double e = kActivationBytes;
  const double s = m.training.seq_len;
  const double T = s / p.cp * m.training.micro_batch;
  const double h = tr.hidden;
  const double t = p.tp;
  const double rep = p.sequence_parallel ? 1.0 / t : 1.0;
  ActivationParts out;
  // Korthikanti's "LayerNorm: 4sbh": the inputs of the two norms (the residual stream).
  out.kept += 2 * e * T * h * rep;
  // Attention: the QKV GEMM input (norm output) 2sbh; Q and K (Korthikanti's 4sbh), V
  // (2sbh); the attention output, which is the output projection's input (2sbh) and what
  // flash attention keeps for its backward pass. GQA shrinks K and V; with fewer KV heads
  // than TP ranks each rank keeps one KV head.
  out.kept += gemm_input_bytes(m) * T * h * rep;
  if (a.kind == AttentionKind::Mla) {
    // MLA (DeepSeek-V2 sec. 2.1): the down projections run unsplit on every TP rank; their
    // outputs (compressed query and KV latents, decoupled rope key) are normed and up
    // projected: the norm inputs and the up projections' inputs are kept. The up
    // projections' outputs Q, K, V are rebuilt from the latents under selective recompute
    // (Megatron-LM recompute module mla_up_proj; DeepSeek-V3 report sec. 3.2.3).
    const double ql = a.q_lora_rank, kvl = a.kv_lora_rank;
    out.kept += e * T * (2 * ql + 2 * kvl + a.qk_rope_head_dim);
    const double qk = a.qk_nope_head_dim + a.qk_rope_head_dim;
    out.selective += e * T * a.heads * (2 * qk + a.v_head_dim) / t;  // Q, K, V
    out.kept += e * T * a.heads * a.v_head_dim / t;                  // attention output
  } else {
    const double q = static_cast<double>(a.heads) * head_dim(m);
    const double kv_heads_rank = std::max(1.0, static_cast<double>(a.kv_heads) / t);
    out.kept += e * T * (2 * q / t + 2 * kv_heads_rank * head_dim(m));
    // QK-norm keeps its inputs, the projected Q and K before the norm, for its backward.
    if (a.qk_norm) out.kept += e * T * (q / t + kv_heads_rank * head_dim(m));
  }
  const double heads_rank = static_cast<double>(a.heads) / t;
  if (a.unfused) {
    // Korthikanti's 5as²b: the softmax output 2as²b (the softmax backward's input), and
    // with attention dropout its mask as²b and output 2as²b (the P·V GEMM's input);
    // without dropout the softmax output is the P·V input. With CP a rank's queries (s/cp)
    // meet all s keys.
    const double scores = heads_rank * (s / p.cp) * s * m.training.micro_batch;
    out.selective += e * scores;
    if (tr.attention_dropout > 0) out.selective += (kDropoutMaskBytes + e) * scores;
  } else {
    // Flash attention applies dropout inside the kernel and regenerates the mask from the
    // RNG state in its backward pass: nothing more is kept.
    // Flash attention's log-sum-exp, fp32 per head and query (Dao et al. 2022, alg. 2).
    out.selective += 4 * T * heads_rank;
  }
  // MLP: norm input counted above; the first GEMM's input 2sbh; GeLU: the first GEMM's
  // output and the activation output (Korthikanti's 8sbh + 8sbh at f = 4h); SwiGLU: the
  // gate and up outputs and their product.
  out.kept += gemm_input_bytes(m) * T * h * rep;
  const double act = m.transformer.mlp == MlpKind::Swiglu ? 3 : 2;  // stored f-wide tensors
  if (is_moe_layer(m, layer)) {
    // Router logits (fp32) on the local tokens; each token goes to top_k experts: the
    // dispatched input (the first expert GEMM's input) and the expert output (weighted by
    // the router probability at combine) h-wide, the expert's f-wide tensors split over
    // expert TP. Selective recompute rebuilds the experts' activation output (Megatron-LM
    // recompute module moe_act; DeepSeek-V3 report sec. 3.3.2 recomputes the SwiGLU
    // output). Balanced routing assumed: every rank receives T·top_k·etp/tp token copies
    // (T·top_k with the default etp = tp), each f/etp wide, so the f-wide part is
    // T·top_k·f/tp whatever etp is.
    const double ef = m.moe.expert_ffn_hidden;
    const double experts = m.moe.top_k + m.moe.shared_experts;
    out.kept += 4 * T * m.moe.experts * rep;
    const double routed_share = static_cast<double>(p.expert_tp()) / t;
    out.kept += T * m.moe.top_k * routed_share * (gemm_input_bytes(m) * h + e * h);
    out.kept += e * T * experts * (act - 1) * ef / t;
    out.selective += e * T * experts * ef / t;
  } else {
    out.kept += e * T * act * tr.ffn_hidden / t;
  }
  // Hidden dropout: the masks of the two bias-dropout-adds (Korthikanti's sbh each, divided
  // by t with sequence parallelism).
  if (tr.hidden_dropout > 0) out.kept += 2 * kDropoutMaskBytes * T * h * rep;
  return out;
}

// The embedding dropout's mask per micro-batch on the first stage (Korthikanti et al. 2022
// sec. 4.2.3: sbh/t with sequence parallelism).
double embedding_dropout_bytes(const ModelSpec& m) {
  if (m.transformer.hidden_dropout <= 0) return 0;
  const auto& p = m.parallelism;
  const double T = static_cast<double>(m.training.seq_len) / p.cp * m.training.micro_batch;
  const double rep = p.sequence_parallel ? 1.0 / p.tp : 1.0;
  return kDropoutMaskBytes * T * m.transformer.hidden * rep;
}

// Activations of the last stage's output layer per micro-batch: Korthikanti et al. 2022
// sec. 4.2.3, 4sbh/t (final norm and output layer inputs) + 4sbv/t (fp32 logits kept by
// the vocabulary-parallel cross entropy).
double output_layer_bytes(const ModelSpec& m) {
  const auto& p = m.parallelism;
  const double T = static_cast<double>(m.training.seq_len) / p.cp * m.training.micro_batch;
  const double rep = p.sequence_parallel ? 1.0 / p.tp : 1.0;
  return 2 * kActivationBytes * T * m.transformer.hidden * rep +
         4.0 * T * m.transformer.vocab / p.tp;
}

// The backward pass's transient: the logits' gradient (bf16, 2sbv/t) while the fp32
// logits are still held, on the last stage.
double logits_gradient_bytes(const ModelSpec& m) {
  const auto& p = m.parallelism;
  const double T = static_cast<double>(m.training.seq_len) / p.cp * m.training.micro_batch;
  return kActivationBytes * T * m.transformer.vocab / p.tp;
}

std::vector<int> stage_layer_list(const ModelSpec& m, int stage) {
  std::vector<int> layers;
  const int chunks = m.parallelism.virtual_stages;
  for (int c = 0; c < chunks; ++c) {
    LayerRange r = stage_layers(m, stage, c);
    for (int l = r.begin; l < r.end; ++l) layers.push_back(l);
  }
  return layers;
}

int communicator_kinds(const ModelSpec& m) {
  const auto& p = m.parallelism;
  int n = 0;
  for (int size : {p.tp, p.dp * p.cp, p.pp, p.cp, p.ep}) n += size > 1 ? 1 : 0;
  // An expert-TP group other than the TP group is a communicator of its own.
  if (p.expert_tp() != p.tp && p.expert_tp() > 1) ++n;
  return n;
}

// ---- framework terms -------------------------------------------------------------------

// Constants, each with its source; docs/memory.md explains them.
// The CUDA context, cuBLAS/cuDNN handles and PyTorch's loaded kernels: device memory in
// use minus the caching allocator's reserved bytes after a training step, measured by
// calibration/memory/peak_memory_probe.py on H100 SXM (PyTorch 2.11, CUDA 13.0): 750.8 MiB
// in all 24 runs (calibration/data/h100x4-memory).
constexpr double kCudaContext_bytes = 750.8 * kMiB;
constexpr const char* kCudaContextSource =
    "measured: device memory used minus PyTorch's reserved bytes, 750.8 MiB on H100 SXM "
    "(calibration/data/h100x4-memory)";
// cuBLAS workspace: 32 MiB per handle and stream on Hopper (PyTorch CublasHandlePool
// default ":4096:8"; Transformer Engine's get_cublasLt_workspace_size 32 MiB on sm90),
// one for the compute stream and one for the overlapped communication stream.
constexpr double kCublasWorkspace_bytes = 2 * 32 * kMiB;
// NCCL: NCCL_BUFFSIZE 4 MiB per channel and peer for the Simple protocol plus LL/LL128
// buffers (NCCL environment-variable docs); with up to 32 channels and 2 ring peers
// about 0.5 GiB per communicator, one per parallel dimension larger than 1.
constexpr double kNcclPerCommunicator_bytes = 0.5 * config::kBytesPerGiB;
// Fragmentation of PyTorch's caching allocator: peak reserved over peak allocated, minus
// one; median of the 24 measured steps 3.0% (largest 10.4%).
constexpr double kFragmentationFraction = 0.030;
constexpr const char* kFragmentationSource =
    "measured: PyTorch caching allocator's peak reserved / peak allocated - 1, median 3.0% "
    "(max 10.4%) over 24 training steps on H100 SXM (calibration/data/h100x4-memory)";

void add(StageMemory& s, const std::string& name, double bytes, const std::string& source) {
  if (bytes > 0) s.terms.push_back({name, bytes, source});
}

void add_framework(StageMemory& s, const ModelSpec& m) {
  add(s, "cuBLAS workspace", kCublasWorkspace_bytes,
      "PyTorch CublasHandlePool (32 MiB on sm90) and Transformer Engine workspace, two "
      "streams");
  add(s, kFragmentation, kFragmentationFraction * s.allocated_bytes(), kFragmentationSource);
  add(s, kNccl, kNcclPerCommunicator_bytes * communicator_kinds(m),
      "assumed: NCCL_BUFFSIZE 4 MiB per channel and peer (NCCL docs), ~0.5 GiB per "
      "communicator, one per parallel dimension > 1");
  add(s, kContext, kCudaContext_bytes, kCudaContextSource);
}

StageMemory transformer_stage(const ModelSpec& m, int stage) {
  StageMemory s;
  s.stage = stage;
  const auto& p = m.parallelism;
  const StageParameters params = stage_parameters(m, stage);
  const int dense_shards =
      m.training.grad_sync == GradSync::DistributedOptimizer ? p.dp * p.cp : 1;
  const int expert_shards = m.training.grad_sync == GradSync::DistributedOptimizer
                                ? std::max(1, p.tp * p.dp * p.cp / (p.ep * p.expert_tp()))
                                : 1;
  const BytesPerParameter dense = bytes_per_parameter(m, dense_shards);
  const BytesPerParameter expert = bytes_per_parameter(m, expert_shards);
  add(s, "weights", params.dense * dense.weights + params.expert * expert.weights,
      kMegatronOptimizer);
  add(s, "gradients", params.dense * dense.gradients + params.expert * expert.gradients,
      kMegatronOptimizer);
  add(s, "optimizer", params.dense * dense.optimizer + params.expert * expert.optimizer,
      kMegatronOptimizer);

  double per_microbatch = 0;
  double widest_layer = 0;
  for (int c = 0; c < std::max(1, p.virtual_stages); ++c) {
    const LayerRange r = stage_layers(m, stage, c);
    for (int l = r.begin; l < r.end; ++l) {
      per_microbatch += layer_activation_bytes(m, l, l - r.begin);
      widest_layer = std::max(widest_layer, layer_activation_bytes_no_recompute(m, l));
    }
  }
  if (stage == 0) per_microbatch += embedding_dropout_bytes(m);
  const double in_flight = in_flight_microbatches(m, stage);
  add(s, "activations", in_flight * per_microbatch,
      fmt::format("{}; {} recompute; {:.3g} micro-batches in flight (Narayanan et al. 2021 "
                  "1F1B / interleaved warm-up)",
                  kKorthikanti,
                  m.training.recompute_layers > 0 && m.training.recompute == Recompute::Full
                      ? fmt::format("full (the first {} layers of each chunk)",
                                    m.training.recompute_layers)
                      : std::string(to_string(m.training.recompute)),
                  in_flight));
  // The backward pass's peak on top of the stored activations, the larger of two moments
  // (PyTorch frees a function's saved tensors once its backward has run):
  //   the loss on the last stage: the fp32 logits the cross entropy kept and the output
  //   layer's inputs (Korthikanti et al. 2022 sec. 4.2.3: 4sbh/t + 4sbv/t), plus the bf16
  //   gradient of the logits (2sbv/t);
  //   a layer's backward: the gradients of its activations, taken as large as the layer's
  //   activations (assumed), plus, with full recompute, the rebuilt activations themselves.
  const bool last = stage == p.pp - 1;
  const double loss_peak = last ? output_layer_bytes(m) + logits_gradient_bytes(m) : 0;
  const double layer_peak =
      widest_layer * (m.training.recompute == Recompute::Full ? 2.0 : 1.0);
  if (loss_peak >= layer_peak)
    add(s, "backward working set", loss_peak,
        "the loss on the last stage: Korthikanti et al. 2022 sec. 4.2.3, 4sbh/t + 4sbv/t "
        "(fp32 logits), and the logits' bf16 gradient 2sbv/t");
  else
    add(s, "backward working set", layer_peak,
        m.training.recompute == Recompute::Full
            ? "one layer rebuilt during its backward pass (full recompute, Korthikanti et al. "
              "2022 sec. 5) and its activation gradients (assumed as large)"
            : "assumed: the gradients of one layer's activations, as large as the layer's "
              "activations");
  add_framework(s, m);
  return s;
}

// ---- DLRM ------------------------------------------------------------------------------

double mlp_parameters(int input, const std::vector<int>& sizes) {
  double n = 0;
  double in = input;
  for (int out : sizes) {
    n += in * out + out;
    in = out;
  }
  return n;
}

// Model-parallel rows on the most loaded rank: the plan's even share, or for table_wise
// the rank whose whole tables have the most rows (not necessarily the busiest by lookups).
double model_parallel_rows_per_rank(const DlrmSpec& d, const DlrmShardPlan& plan) {
  if (d.sharding != TableSharding::TableWise) return plan.mp_table_rows;
  double most = 0;
  for (const auto& tables : plan.tables_of_rank) {
    double rows = 0;
    for (int i : tables) rows += static_cast<double>(d.tables[static_cast<std::size_t>(i)].rows);
    most = std::max(most, rows);
  }
  return most;
}

StageMemory dlrm_stage(const ModelSpec& m) {
  StageMemory s;
  const auto& d = m.dlrm;
  const double D = d.embedding_dim;
  const double emb = sim::bytes_per_element(d.embedding_precision);
  // The table placement the generator uses (plan_dlrm_sharding): model-parallel rows on
  // this rank, replicated (data-parallel) tables on every rank.
  const DlrmShardPlan plan = plan_dlrm_sharding(d, m.parallelism.dp);
  const double mp_rows = model_parallel_rows_per_rank(d, plan);
  const double dp_rows = static_cast<double>(plan.dp_table_rows);
  add(s, "embedding tables", (mp_rows + dp_rows) * D * emb,
      fmt::format("model-parallel tables split {} over all ranks (table_wise: the rank "
                  "holding the most rows), tables of <= {} rows replicated "
                  "(workloads/dlrm.hpp plan_dlrm_sharding); MLPerf DLRM-DCNv2: fp32 tables",
                  to_string(d.sharding), d.data_parallel_max_rows));
  add(s, "embedding optimizer", mp_rows * 4.0 + dp_rows * D * 4.0,
      "model-parallel tables: row-wise Adagrad, one fp32 accumulator per row (FBGEMM "
      "EXACT_ROWWISE_ADAGRAD, MLPerf Training DLRM-DCNv2 reference dlrm_main.py), the sparse "
      "update fused into the backward pass so no gradient is kept; replicated tables: "
      "Adagrad with the dense parameters, one fp32 accumulator per element");
  add(s, "embedding gradients", dp_rows * D * 4.0,
      "replicated tables scatter their gradients into a dense fp32 buffer that joins the "
      "dense all-reduce (workloads/dlrm.hpp)");
  const int bottom_out = d.bottom_mlp.empty() ? d.dense_features : d.bottom_mlp.back();
  const double tables = static_cast<double>(d.tables.size());
  const double inter_in = d.interaction == "dcn" ? bottom_out + tables * D
                                                 : bottom_out + (tables + 1) * tables / 2;
  double dense = mlp_parameters(d.dense_features, d.bottom_mlp);
  if (d.interaction == "dcn") dense += d.dcn_layers * (2 * inter_in * d.dcn_rank + inter_in);
  dense += mlp_parameters(static_cast<int>(inter_in), d.top_mlp);
  const char* dense_source =
      "dense MLPs replicated on every rank in fp32 with Adagrad (MLPerf DLRM-DCNv2 "
      "reference); one fp32 gradient and one Adagrad accumulator per parameter";
  add(s, "weights", dense * 4, dense_source);
  add(s, "gradients", dense * 4, dense_source);
  add(s, "optimizer", dense * 4, dense_source);
  // Activations of the local batch: bottom and top MLP outputs, the pooled embeddings of
  // this rank's samples and the all-to-all's send and receive buffers, the DCN layers'
  // low-rank product and outputs, the lookup indices (int64).
  const double Bl = static_cast<double>(m.training.global_batch) / m.parallelism.dp;
  const double e = m.training.precision == sim::Precision::FP32 ? 4 : 2;
  double hot = 0;
  for (const auto& t : d.tables) hot += t.hotness;
  double per_sample = 0;
  for (int out : d.bottom_mlp) per_sample += e * out;
  for (int out : d.top_mlp) per_sample += e * out;
  per_sample += 3 * emb * tables * D + e * inter_in;
  if (d.interaction == "dcn") per_sample += d.dcn_layers * e * (d.dcn_rank + 2 * inter_in);
  per_sample += 8 * hot;
  add(s, "activations", Bl * per_sample,
      "layer outputs of the local batch (global_batch / dp), pooled embeddings and the "
      "all-to-all buffers (Naumov et al. 2019 DLRM data flow)");
  add(s, "backward working set", Bl * e * inter_in * 2,
      "assumed: gradients of the interaction input and output");
  add_framework(s, m);
  return s;
}

std::string gib(double bytes) { return fmt::format("{:.1f}", bytes / config::kBytesPerGiB); }

}  // namespace

double StageMemory::total_bytes() const {
  double sum = 0;
  for (const auto& t : terms) sum += t.bytes;
  return sum;
}

double StageMemory::allocated_bytes() const {
  double sum = 0;
  for (const auto& t : terms)
    if (t.name != kContext && t.name != kNccl && t.name != kFragmentation) sum += t.bytes;
  return sum;
}

double StageMemory::term_bytes(const std::string& name) const {
  for (const auto& t : terms)
    if (t.name == name) return t.bytes;
  return 0;
}

int MemoryEstimate::peak_stage() const {
  int best = 0;
  for (std::size_t i = 1; i < stages.size(); ++i)
    if (stages[i].total_bytes() > stages[best].total_bytes()) best = static_cast<int>(i);
  return best;
}

double MemoryEstimate::peak_bytes() const {
  return stages.empty() ? 0 : stages[peak_stage()].total_bytes();
}

bool MemoryEstimate::fits() const { return capacity_bytes <= 0 || peak_bytes() <= capacity_bytes; }

std::string MemoryEstimate::explain() const {
  if (stages.empty()) return "no stages";
  const StageMemory& s = stages[peak_stage()];
  std::vector<MemoryTerm> terms = s.terms;
  std::stable_sort(terms.begin(), terms.end(),
                   [](const MemoryTerm& a, const MemoryTerm& b) { return a.bytes > b.bytes; });
  std::string parts;
  for (const auto& t : terms) {
    if (!parts.empty()) parts += ", ";
    parts += t.name + " " + gib(t.bytes);
  }
  std::string text = fmt::format("stage {} needs {} GiB: {}", s.stage, gib(s.total_bytes()), parts);
  if (capacity_bytes > 0) text += fmt::format("; the GPU has {} GiB", gib(capacity_bytes));
  return text;
}

StageParameters stage_parameters(const ModelSpec& m, int stage) {
  StageParameters out;
  if (m.kind == ModelKind::Dlrm) return out;
  const auto& tr = m.transformer;
  const auto& p = m.parallelism;
  for (int l : stage_layer_list(m, stage)) {
    const LayerParameters lp = layer_parameters(m, l);
    out.dense += lp.dense;
    out.expert += lp.expert;
  }
  const double h = tr.hidden;
  // Word embeddings on the first stage (vocabulary-parallel over TP), learned positions
  // replicated; the final norm and the output layer on the last stage. Tied embeddings keep
  // a copy on the last stage when pp > 1 (Megatron's embedding group synchronises the two).
  if (stage == 0) {
    out.dense += static_cast<double>(tr.vocab) * h / p.tp;
    if (tr.position == PositionEmbedding::Learned) out.dense += m.training.seq_len * h;
  }
  if (stage == p.pp - 1) {
    out.dense += norm_parameters(m, h);
    if (!tr.tie_embeddings || p.pp > 1) out.dense += static_cast<double>(tr.vocab) * h / p.tp;
  }
  return out;
}

BytesPerParameter bytes_per_parameter(const ModelSpec& m, int shards) {
  BytesPerParameter b;
  const double d = std::max(1, shards);
  const sim::Precision prec = m.training.precision;
  if (prec == sim::Precision::FP32) {
    b.weights = 4;  // fp32 param and grad, Adam m and v: 8 + 8/d
    b.gradients = 4;
    b.optimizer = 8 / d;
    return b;
  }
  b.weights = 2;  // bf16/fp16 model weights
  // fp8 GEMMs (Transformer Engine): the bf16 weights plus their cached fp8 casts, row-wise
  // and column-wise (transposed) on Hopper: 2 bytes more per parameter (assumed); with fp8
  // weights (training.fp8_params) the fp8 weight and its transpose only.
  if (prec == sim::Precision::FP8) b.weights = m.training.fp8_params ? 2 : 4;
  if (m.training.grad_precision == sim::Precision::FP32) {
    b.gradients = 4;       // fp32 main grads
    b.optimizer = 12 / d;  // fp32 master weights, Adam m and v
  } else {
    b.gradients = 2;
    b.optimizer = 16 / d;  // plus an fp32 copy of the gradient for the update
  }
  return b;
}

double layer_activation_bytes_no_recompute(const ModelSpec& m, int layer) {
  const ActivationParts a = layer_parts(m, layer);
  return a.kept + a.selective;
}

double layer_activation_bytes(const ModelSpec& m, int layer, int position) {
  if (m.training.recompute == Recompute::Full && !fully_recomputed(m, position))
    return layer_activation_bytes_no_recompute(m, layer);
  switch (m.training.recompute) {
    case Recompute::None:
      return layer_activation_bytes_no_recompute(m, layer);
    case Recompute::Selective:
      return layer_parts(m, layer).kept;
    case Recompute::Full: {
      // Only the layer's input (Korthikanti et al. 2022 sec. 5: 2sbh, /t with SP).
      const auto& p = m.parallelism;
      const double T = static_cast<double>(m.training.seq_len) / p.cp * m.training.micro_batch;
      const double rep = p.sequence_parallel ? 1.0 / p.tp : 1.0;
      return kActivationBytes * T * m.transformer.hidden * rep;
    }
  }
  return 0;
}

double in_flight_microbatches(const ModelSpec& m, int stage) {
  const auto& p = m.parallelism;
  const int mb = std::max(1, microbatches_per_step(m));
  // Megatron-Core's EP overlap runs a forward layer by layer beside a backward that frees a
  // layer's activations as it goes: after the i-th pair of a chunk of L layers the forward
  // holds i + 1 layers and the backward L - i, one layer more than the one pass.
  const bool combined = m.kind == ModelKind::Moe && m.moe.ep_overlap;
  const double chunk_layers =
      std::max(1.0, static_cast<double>(m.transformer.layers) / (p.pp * p.virtual_stages));
  if (combined && p.pp == 1 && mb > 1) return 1.0 + 1.0 / chunk_layers;
  if (p.virtual_stages <= 1) return std::min(p.pp - stage, mb);
  // Megatron-LM forward_backward_pipelining_with_interleaving: warm-up chunk passes
  // (pp - stage - 1)·2 + (v - 1)·pp, all of them when microbatches == pp; one more forward
  // is live at the first backward of the steady state.
  const int v = p.virtual_stages;
  const int total = mb * v;
  // With the EP overlap that forward runs in the warm-up, and the first merged step holds
  // one layer more while its backward frees the first.
  int warmup = (p.pp - stage - 1) * 2 + (v - 1) * p.pp + (combined ? 1 : 0);
  if (mb == p.pp) warmup = total;
  const double passes =
      std::min(warmup + (combined ? 1.0 / chunk_layers : 1.0), static_cast<double>(total));
  return passes / v;
}

double dlrm_table_rows_per_rank(const ModelSpec& m) {
  const DlrmShardPlan plan = plan_dlrm_sharding(m.dlrm, m.parallelism.dp);
  return model_parallel_rows_per_rank(m.dlrm, plan) + static_cast<double>(plan.dp_table_rows);
}

MemoryEstimate estimate_memory(const ModelSpec& model, const ClusterSpec& cluster) {
  MemoryEstimate est;
  if (cluster.gpu && cluster.gpu->memory_bytes)
    est.capacity_bytes = static_cast<double>(cluster.gpu->memory_bytes->value);
  if (model.kind == ModelKind::Dlrm) {
    est.stages.push_back(dlrm_stage(model));
    return est;
  }
  for (int s = 0; s < model.parallelism.pp; ++s) est.stages.push_back(transformer_stage(model, s));
  return est;
}

}  // namespace overlapsim::workloads
