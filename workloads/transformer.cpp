#include <fmt/compile.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "workloads/transformer_emitter.hpp"

namespace overlapsim::workloads {

using sim::CollectiveOp;
using sim::StreamKind;

namespace {
// PyTorch's dropout keeps a bool mask, one byte per element (native_dropout).
constexpr std::uint64_t kDropoutMaskBytes = 1;
}  // namespace

TransformerEmitter::TransformerEmitter(const ModelSpec& spec, const ParallelLayout& layout,
                                       int rank, const RankGroups& groups, RankBuilder& builder,
                                       GradientBuckets& grads)
    : spec_(spec),
      layout_(layout),
      coord_(layout.coord(rank)),
      groups_(groups),
      b_(builder),
      grads_(grads) {
  const auto& t = spec.transformer;
  const auto& p = spec.parallelism;
  tp_ = p.tp;
  sp_ = p.sequence_parallel && p.tp > 1;
  h_ = t.hidden;
  T_ = static_cast<std::int64_t>(spec.training.micro_batch) * spec.training.seq_len / p.cp;
  Tn_ = sp_ ? T_ / tp_ : T_;
  vocab_local_ = (t.vocab + tp_ - 1) / tp_;  // vocab-parallel embedding and head
  heads_local_ = t.attention.heads / tp_;
  kv_heads_local_ = t.attention.kv_heads / tp_;
  head_dim_ = t.attention.head_dim > 0 ? t.attention.head_dim : t.hidden / t.attention.heads;
  gated_ = t.mlp == MlpKind::Swiglu ? 2 : 1;
  gemm_precision_ = spec.training.precision;
  gemm_in_bytes_ = sim::bytes_per_element(gemm_precision_);
  act_bytes_ = gemm_precision_ == sim::Precision::FP32 ? 4 : 2;  // fp8 keeps 16-bit activations
  fp8_ = gemm_precision_ == sim::Precision::FP8;
  block_fp8_ = fp8_ && spec.training.fp8_scaling == Fp8Scaling::Block128;
  current_fp8_ = fp8_ && spec.training.fp8_scaling == Fp8Scaling::Current;
  attention_dropout_ = t.attention_dropout > 0;
  hidden_dropout_ = t.hidden_dropout > 0;
  fp8_gemms_of_chunk_.assign(static_cast<std::size_t>(p.virtual_stages), 0);
  overlap_param_gather_ = spec.training.grad_sync == GradSync::DistributedOptimizer &&
                          spec.training.overlap_param_gather;
  set_chunk(0);
}

void TransformerEmitter::set_chunk(int chunk) {
  const auto& p = spec_.parallelism;
  layers_ = stage_layers(spec_, coord_.pp, chunk);
  chunk_ = chunk;
  first_stage_ = coord_.pp == 0 && chunk == 0;
  last_stage_ = coord_.pp == p.pp - 1 && chunk == p.virtual_stages - 1;
}

std::uint64_t TransformerEmitter::pipeline_bytes() const {
  return static_cast<std::uint64_t>(Tn_ * h_ * act_bytes_);
}

std::uint64_t TransformerEmitter::hidden_dropout_mask_bytes() const {
  return hidden_dropout_ ? static_cast<std::uint64_t>(Tn_ * h_) * kDropoutMaskBytes : 0;
}

std::uint64_t TransformerEmitter::embedding_dropout_bytes() const {
  return static_cast<std::uint64_t>(Tn_ * h_) * (2 * act_bytes_ + kDropoutMaskBytes);
}

std::string TransformerEmitter::name(const Ctx& c, const char* what) const {
  const char* phase = c.recompute ? "rc" : sim::to_string(c.phase);
  // Compiled formats: every op of every layer and microbatch is named here.
  if (c.layer >= 0)
    return fmt::format(FMT_COMPILE("L{}.mb{}.{}.{}"), c.layer, c.microbatch, phase, what);
  return fmt::format(FMT_COMPILE("{}.mb{}.{}.{}"), c.block, c.microbatch, phase, what);
}

OpVertex TransformerEmitter::compute(sim::OpNode node, const Ctx& c,
                                     std::initializer_list<OpVertex> deps) {
  node.phase = c.phase;
  node.layer = c.layer;
  node.microbatch = c.microbatch;
  node.recompute = c.recompute;
  if (node.precision == sim::Precision::BF16 && spec_.training.precision == sim::Precision::FP16)
    node.precision = sim::Precision::FP16;
  node.fp8_block_scaled = node.kind == sim::OpKind::Gemm &&
                          node.precision == sim::Precision::FP8 &&
                          spec_.training.fp8_scaling == Fp8Scaling::Block128;
  // The host issues its launches (docs/simulate.md, "The host").
  node.launches = c.launches;
  node.host_s = spec_.training.host_launch_time_s * c.launches;
  return b_.add(std::move(node), deps);
}

OpVertex TransformerEmitter::gemm(const Ctx& c, const char* what, std::int64_t m, std::int64_t n,
                                  std::int64_t k, std::initializer_list<OpVertex> deps,
                                  std::int64_t batch) {
  const bool fp8 = fp8_ && !c.bf16_gemms;
  auto node =
      gemm_node(name(c, what), m, n, k, batch, fp8 ? gemm_in_bytes_ : act_bytes_, act_bytes_);
  node.precision = fp8 ? gemm_precision_ : (fp8_ ? sim::Precision::BF16 : gemm_precision_);
  if (fp8 && c.phase == sim::Phase::Forward && !c.recompute) fp8_gemms_ += batch;
  return compute(std::move(node), c, deps);
}

OpVertex TransformerEmitter::wgrad(const Ctx& c, const char* what, std::int64_t in,
                                   std::int64_t out, std::int64_t tokens, std::int64_t params,
                                   bool expert, std::initializer_list<OpVertex> deps,
                                   std::int64_t batch) {
  OpVertex v = gemm(c, what, in, out, tokens, deps, batch);
  register_grad(c, what, params, v, expert);
  return v;
}

OpVertex TransformerEmitter::elementwise(const Ctx& c, const char* what, std::uint64_t bytes,
                                         std::initializer_list<OpVertex> deps) {
  return compute(elementwise_node(name(c, what), bytes), c, deps);
}

OpVertex TransformerEmitter::activation(const Ctx& c, const std::string& what, std::int64_t rows,
                                        std::int64_t width) {
  return elementwise(c, what.c_str(),
                     static_cast<std::uint64_t>((gated_ + 1) * rows * width * act_bytes_));
}

OpVertex TransformerEmitter::unfused_attention(const Ctx& c, const char* what, bool backward) {
  // Megatron-LM before FlashAttention: baddbmm for the scores, the fused
  // scale-mask-softmax kernel over them, bmm with V. The masked half is computed all the
  // same, and the b x heads x s x s scores and probabilities live in device memory (the
  // 5as^2b term of Korthikanti et al. 2022, eq. 1). 16-bit GEMMs even under fp8.
  Ctx u = c;
  u.bf16_gemms = true;
  const std::int64_t s = spec_.training.seq_len;
  const std::int64_t batch = static_cast<std::int64_t>(spec_.training.micro_batch) * heads_local_;
  const auto scores = static_cast<std::uint64_t>(batch * s * s * act_bytes_);
  // Attention dropout (torch.nn.Dropout on the probabilities, its own kernel): forward
  // reads P and writes the dropped P and the mask; backward reads the gradient and the
  // mask and writes the gradient. Selective recompute re-runs it with the rest of the core.
  const std::uint64_t dropout =
      scores * 2 + static_cast<std::uint64_t>(batch * s * s) * kDropoutMaskBytes;
  const std::string w = what;
  if (!backward) {
    gemm(u, (w + ".scores").c_str(), s, s, head_dim_, {}, batch);
    elementwise(u, (w + ".softmax").c_str(), 2 * scores);  // read scores, write probabilities
    if (attention_dropout_) elementwise(u, (w + ".dropout").c_str(), dropout);
    return gemm(u, (w + ".context").c_str(), s, head_dim_, s, {}, batch);
  }
  gemm(u, (w + ".dprobs").c_str(), s, s, head_dim_, {}, batch);  // dO V^T
  gemm(u, (w + ".dv").c_str(), s, head_dim_, s, {}, batch);      // P^T dO
  if (attention_dropout_) elementwise(u, (w + ".dropout").c_str(), dropout);
  elementwise(u, (w + ".softmax").c_str(), 3 * scores);  // read P and dP, write dS
  gemm(u, (w + ".dq").c_str(), s, head_dim_, s, {}, batch);  // dS K
  return gemm(u, (w + ".dk").c_str(), s, head_dim_, s, {}, batch);  // dS^T Q
}

OpVertex TransformerEmitter::collective(const Ctx& c, const char* what, CollectiveOp op,
                                        std::uint64_t bytes, int group, StreamKind stream,
                                        std::initializer_list<OpVertex> deps) {
  if (group < 0) return kNoOp;
  auto node = collective_node(name(c, what), op, bytes, group, stream);
  node.phase = c.phase;
  node.layer = c.layer;
  node.microbatch = c.microbatch;
  node.recompute = c.recompute;
  node.host_s = spec_.training.host_launch_time_s;  // one NCCL launch
  return b_.add(std::move(node), deps);
}

void TransformerEmitter::register_grad(const Ctx& c, const char* what, std::int64_t params,
                                       OpVertex producer, bool expert) {
  if (!c.register_grads || c.recompute) return;
  grads_.add(
      c.layer >= 0 ? fmt::format("L{}.{}", c.layer, what) : fmt::format("{}.{}", c.block, what),
      params, producer, expert, gather_slot(c));
}

int TransformerEmitter::gather_slot(const Ctx& c) {
  if (c.layer >= 0) return c.layer;
  if (std::strcmp(c.block, "emb") == 0) return kEmbeddingGatherSlot;
  if (std::strcmp(c.block, "head") == 0) return kHeadGatherSlot;
  return kNoGatherSlot;
}

void TransformerEmitter::prefetch_chunk_params(int chunk, OpVertex anchor) {
  if (chunk_gather_anchor_.empty())
    chunk_gather_anchor_.assign(static_cast<std::size_t>(spec_.parallelism.virtual_stages), kNoOp);
  chunk_gather_anchor_.at(static_cast<std::size_t>(chunk)) = anchor;
}

void TransformerEmitter::gather_params(const Ctx& c, bool expert) {
  if (!overlap_param_gather_ || c.microbatch != 0 || c.recompute || c.phase != sim::Phase::Forward)
    return;
  const int slot = gather_slot(c);
  const OpVertex after = chunk_gather_anchor_.empty()
                             ? gather_anchor_
                             : chunk_gather_anchor_.at(static_cast<std::size_t>(chunk_));
  const OpVertex dense = grads_.param_gather(b_, slot, false, groups_.dp, after,
                                             name(c, "dp.param_allgather"), c.layer);
  b_.wait_before_next_compute(dense);
  if (expert) {
    const OpVertex ex = grads_.param_gather(b_, slot, true, groups_.edp, after,
                                            name(c, "edp.param_allgather"), c.layer);
    b_.wait_before_next_compute(ex);
  }
  // The block's first op is the next one added: the next block's gathers are issued when
  // it starts.
  gather_anchor_ = static_cast<OpVertex>(boost::num_vertices(b_.graph()));
}

std::int64_t TransformerEmitter::norm_params(std::int64_t width) const {
  return spec_.transformer.norm == NormKind::LayerNorm ? 2 * width : width;
}

bool TransformerEmitter::is_moe_layer(int layer) const {
  return spec_.kind == ModelKind::Moe && layer >= spec_.moe.dense_layers;
}

// ---- tensor-parallel plumbing ----

OpVertex TransformerEmitter::column_input(const Ctx& c, const char* what, Gathered gathered) {
  if (!sp_) return kNoOp;
  // Transformer Engine gathers fp8 inputs and gradients in fp8 (distributed.py
  // _all_gather_fp8); block scaling gathers the row-wise and the column-wise copy of
  // forward inputs and gradients (_start_all_gather_fp8_blockwise), so 2 bytes.
  int bytes = act_bytes_;
  if (fp8_ && gathered != Gathered::Activation)
    bytes = block_fp8_ && gathered != Gathered::Fp8WgradInput ? 2 : 1;
  return collective(c, what, CollectiveOp::AllGather, static_cast<std::uint64_t>(T_ * h_ * bytes),
                    groups_.tp, StreamKind::TensorComm, {b_.last(StreamKind::Compute)});
}

OpVertex TransformerEmitter::tp_reduce(const Ctx& c, const char* what, OpVertex producer) {
  OpVertex v = collective(c, what, sp_ ? CollectiveOp::ReduceScatter : CollectiveOp::AllReduce,
                          static_cast<std::uint64_t>(T_ * h_ * act_bytes_), groups_.tp,
                          StreamKind::TensorComm, {producer});
  b_.pair(producer, v);
  return v;
}

// ---- FP8 ----
//
// What Transformer Engine's fp8 training step launches besides the fp8 GEMMs, as
// Megatron-LM drives it (read in TE 2.20.0.dev0, transformer_engine/pytorch/module/{linear,
// layernorm_linear,base}.py; Megatron-LM core 0.20.0, extensions/transformer_engine.py), on
// Hopper, where an fp8 GEMM takes both operands K-major so dgrad and wgrad need
// transposed fp8 copies:
//  - each TE Linear quantises its bf16 input: a norm feeding a LayerNormLinear writes fp8
//    itself (and, without SP, an fp8 transpose follows it: common/normalization/layernorm/
//    ln_api.cpp); other inputs get one cast+transpose kernel; with sequence parallelism
//    the input is cast on the Tn local tokens, gathered in fp8, and gathered again in
//    backward and transposed for wgrad (module/linear.py, distributed.py _all_gather_fp8);
//  - output gradients: cast+transpose (fused with the bias gradient) of a column-parallel
//    layer's gradient; for a row-parallel layer under SP a cast, the fp8 all-gather and a
//    transpose (base.py grad_output_preprocess);
//  - weights: cast+transpose once per step, in the first microbatch; later microbatches
//    reuse the cached fp8 weight and its transpose (linear.py quantize_weight with
//    update_workspace = is_first_microbatch, which Megatron-LM sets for microbatch 0:
//    pipeline_parallel/schedules.py set_is_first_microbatch);
//  - delayed scaling (Megatron-LM's default recipe, amax history 1): amaxes come from the
//    cast kernels; after each microbatch's forward and backward of the layers, one
//    all-reduce (MAX) of all amaxes over the TP x DP x CP group and one fused scale-update
//    kernel (quantization.py reduce_and_update_fp8_tensors; Megatron-LM fp8_utils.py
//    get_fp8_context, parallel_state.get_amax_reduction_group). 3 amaxes per fp8 GEMM in
//    forward, 2 in backward (base.py init_fp8_meta_tensors);
//  - current scaling (fp8_scaling: current, TE Float8CurrentScaling, Megatron-LM
//    --fp8-recipe tensorwise): no amax history; each quantisation first computes the
//    tensor's amax in a kernel of its own (a read of the bf16 tensor), all-reduces it (MAX)
//    over the TP group where the fp8 tensor is gathered under SP (a column-parallel input,
//    a row-parallel output gradient: module/linear.py
//    _customize_quantizers_float8_current_scaling), derives the scale, then casts
//    (pytorch/csrc/quantizer.cpp Float8CurrentScalingQuantizer::quantize_impl). A norm cannot
//    write fp8 before its amax is known: it writes bf16 with the amax fused, then the cast;
//  - block scaling (fp8_scaling: block128, TE Float8BlockScaling): no amax history and no
//    reduction; norms stay bf16 and every quantisation is a separate kernel that writes
//    the row-wise and the column-wise (transposed) copy with fp32 scales per 1 x 128
//    (weights 128 x 128) block.
// Stays bf16: attention core (no fp8 attention), softmax, norms, activations, residuals,
// embedding, the output layer (Megatron-LM's ColumnParallelLinear, not a TE module), the
// MoE router and the optimizer.
//
// Bytes per element read + written (measured kernels: calibration/data/h100x1-fp8-ops):
// cast 2 + 1, cast+transpose 2 + 1 + 1, fp8 transpose 1 + 1; block scaling adds 4 bytes of
// scale per 128 elements per copy.

OpVertex TransformerEmitter::quantize(const Ctx& c, const char* what, Quant q, std::int64_t rows,
                                      std::int64_t cols, std::initializer_list<OpVertex> deps) {
  if (current_fp8_ && q != Quant::Transpose) {
    const OpVertex amax =
        current_amax(c, what, static_cast<std::uint64_t>(rows * cols), false, deps);
    return quantize_known_amax(c, what, q, rows, cols, {amax});
  }
  return quantize_known_amax(c, what, q, rows, cols, deps);
}

OpVertex TransformerEmitter::current_amax(const Ctx& c, const char* what, std::uint64_t elems,
                                          bool tp_reduce, std::initializer_list<OpVertex> deps) {
  const OpVertex amax = elementwise(c, (std::string(what) + ".amax").c_str(),
                                    elems * static_cast<std::uint64_t>(act_bytes_), deps);
  return tp_reduce ? amax_tp_allreduce(c, what, amax) : amax;
}

OpVertex TransformerEmitter::amax_tp_allreduce(const Ctx& c, const char* what, OpVertex amax) {
  const OpVertex v =
      collective(c, (std::string(what) + ".amax_allreduce").c_str(), CollectiveOp::AllReduce, 4,
                 groups_.tp, StreamKind::TensorComm, {amax});
  return v != kNoOp ? v : amax;
}

OpVertex TransformerEmitter::quantize_known_amax(const Ctx& c, const char* what, Quant q,
                                                 std::int64_t rows, std::int64_t cols,
                                                 std::initializer_list<OpVertex> deps) {
  if (!fp8_ || (block_fp8_ && q == Quant::Transpose)) return kNoOp;
  const std::uint64_t n = static_cast<std::uint64_t>(rows * cols);
  std::uint64_t bytes = 0;
  switch (q) {
    case Quant::Cast:
      bytes = 3 * n + (block_fp8_ ? n / 32 : 0);
      break;
    case Quant::CastTranspose:
      bytes = 4 * n + (block_fp8_ ? n / 16 : 0);
      break;
    case Quant::Transpose:
      bytes = 2 * n;
      break;
  }
  return elementwise(c, what, bytes, deps);
}

void TransformerEmitter::quantize_weight(const Ctx& c, const char* what, std::int64_t rows,
                                         std::int64_t cols, std::int64_t experts) {
  if (!fp8_ || c.bf16_gemms || c.recompute || c.phase != sim::Phase::Forward || c.microbatch != 0)
    return;
  const std::uint64_t n = static_cast<std::uint64_t>(experts * rows * cols);
  const std::uint64_t scales = block_fp8_ ? n / 4096 : 0;
  // fp8 weights (training.fp8_params): the optimizer wrote them in fp8 and scaled them
  // (its shard's cast is the update's own write), so the step only transposes the gathered
  // weight: read 1, write 1.
  if (spec_.training.fp8_params) {
    elementwise(c, what, 2 * n + scales);
    return;
  }
  // Current scaling reads the bf16 weight once more for its amax.
  elementwise(c, what, 4 * n + scales + (current_fp8_ ? 2 * n : 0));
}

void TransformerEmitter::amax_reduction(const Ctx& c, std::int64_t tensors) {
  if (!tensor_fp8() || current_fp8_ || tensors <= 0) return;
  const auto n = static_cast<std::uint64_t>(tensors);
  // torch.cat of the amaxes (read + write 4 bytes each), the all-reduce over the amax
  // group, issued as TP, CP, then DP all-reduces (MAX is associative, so the result is the
  // group's), then the update kernel: reads amax, history (length 1) and scale, writes
  // history, scale and its inverse.
  OpVertex last = elementwise(c, "amax_cat", 8 * n);
  for (const int group : {groups_.tp, groups_.cp, groups_.dp}) {
    const OpVertex v = collective(c, "amax_allreduce", CollectiveOp::AllReduce, 4 * n, group,
                                  StreamKind::TensorComm, {last});
    if (v != kNoOp) last = v;
  }
  elementwise(c, "scale_update", 24 * n, {last});
}

void TransformerEmitter::quantize_linear_input(const Ctx& c, const char* what, std::int64_t cols) {
  // Tensor scaling under SP: cast the local tokens, gather fp8, transpose in backward.
  // Current scaling all-reduces the amax over TP first: the gathered tensor has one scale.
  if (tensor_fp8() && sp_ && current_fp8_) {
    const OpVertex amax = current_amax(c, what, static_cast<std::uint64_t>(Tn_ * cols), true, {});
    quantize_known_amax(c, what, Quant::Cast, Tn_, cols, {amax});
  } else if (tensor_fp8() && sp_)
    quantize(c, what, Quant::Cast, Tn_, cols);
  else
    quantize(c, what, Quant::CastTranspose, sp_ ? Tn_ : T_, cols);
}

void TransformerEmitter::quantize_row_parallel_grad(const Ctx& c, const char* what,
                                                    std::int64_t cols) {
  quantize_linear_input(c, what, cols);
}

OpVertex TransformerEmitter::wgrad_input_transpose(const Ctx& c, const char* what,
                                                   OpVertex gathered) {
  // Tensor scaling gathers fp8 row-wise data only, so the gathered input is transposed
  // for wgrad (distributed.py _all_gather_fp8, linear.py backward).
  if (!tensor_fp8() || !sp_) return kNoOp;
  return quantize(c, what, Quant::Transpose, T_, h_, {gathered});
}

OpVertex TransformerEmitter::fp8_norm(const Ctx& c, const char* what, std::int64_t width) {
  const auto elems = static_cast<std::uint64_t>(Tn_ * width);
  if (!tensor_fp8()) {
    OpVertex v = elementwise(c, what, 2 * elems * static_cast<std::uint64_t>(act_bytes_));
    OpVertex q =
        quantize(c, (std::string(what) + ".quantize").c_str(), Quant::CastTranspose, Tn_, width);
    return q != kNoOp ? q : v;
  }
  if (current_fp8_) {
    // The scale needs the output's amax first: the norm writes bf16 with the amax fused,
    // then the cast (under SP after the amax's TP all-reduce, the input being gathered).
    OpVertex v = elementwise(c, what, 2 * elems * static_cast<std::uint64_t>(act_bytes_));
    if (sp_) v = amax_tp_allreduce(c, what, v);
    return quantize_known_amax(c, (std::string(what) + ".quantize").c_str(),
                               sp_ ? Quant::Cast : Quant::CastTranspose, Tn_, width, {v});
  }
  // The norm kernel writes its output in fp8; without SP its transpose follows.
  OpVertex v = elementwise(c, what, elems * static_cast<std::uint64_t>(act_bytes_ + 1));
  if (sp_) return v;
  return quantize(c, (std::string(what) + ".transpose").c_str(), Quant::Transpose, Tn_, width);
}

// ---- attention ----

double TransformerEmitter::attention_forward_flops(int layer) const {
  const auto& a = spec_.transformer.attention;
  const double b = spec_.training.micro_batch;
  const double s = spec_.training.seq_len;
  const double sq = s / spec_.parallelism.cp;
  double qk_dim = head_dim_, v_dim = head_dim_;
  if (a.kind == AttentionKind::Mla) {
    qk_dim = a.qk_nope_head_dim + a.qk_rope_head_dim;
    v_dim = a.v_head_dim;
  }
  // A sliding window of w keys (cp 1): s·w − w²/2 query-key pairs, the causal s²/2 when
  // w reaches s. The kernel skips the blocks outside the band, as it does the causal mask's.
  if (a.windowed(layer) && a.window < s)
    return 2.0 * b * heads_local_ * (qk_dim + v_dim) * a.window_pairs(s);
  double flops = 2.0 * b * sq * s * heads_local_ * (qk_dim + v_dim);  // QK^T and PV
  return a.causal ? flops / 2 : flops;
}

std::uint64_t TransformerEmitter::attention_io_bytes(bool backward) const {
  const auto& a = spec_.transformer.attention;
  const std::int64_t keys = T_ * spec_.parallelism.cp;  // K/V of the whole sequence
  std::int64_t q_dim = heads_local_ * head_dim_, o_dim = q_dim;
  std::int64_t k_dim = kv_heads_local_ * head_dim_, v_dim = k_dim;
  if (a.kind == AttentionKind::Mla) {
    q_dim = k_dim = heads_local_ * (a.qk_nope_head_dim + a.qk_rope_head_dim);
    o_dim = v_dim = heads_local_ * a.v_head_dim;
  }
  // Forward reads Q, K, V and writes O; backward also reads O and dO and writes dQ, dK, dV.
  std::int64_t elems = T_ * (q_dim + o_dim) + keys * (k_dim + v_dim);
  if (backward) elems = T_ * (2 * q_dim + 2 * o_dim) + 2 * keys * (k_dim + v_dim);
  return static_cast<std::uint64_t>(elems * act_bytes_);
}

std::uint64_t TransformerEmitter::cp_kv_bytes() const {
  const auto& a = spec_.transformer.attention;
  const std::int64_t keys = T_ * spec_.parallelism.cp;
  if (a.kind == AttentionKind::Mla)
    return static_cast<std::uint64_t>(keys * heads_local_ *
                                      (a.qk_nope_head_dim + a.qk_rope_head_dim + a.v_head_dim) *
                                      act_bytes_);
  return static_cast<std::uint64_t>(keys * 2 * kv_heads_local_ * head_dim_ * act_bytes_);
}

sim::OpNode TransformerEmitter::attention_node(const Ctx& c, const char* what,
                                              bool backward) const {
  sim::OpNode attn;
  attn.name = name(c, what);
  attn.kind = sim::OpKind::Attention;
  const double forward = attention_forward_flops(c.layer);
  attn.flops = backward ? 2 * forward : forward;
  attn.bytes = attention_io_bytes(backward);
  // The shape a fused kernel's efficiency depends on: the head dimension, and the causal
  // sequence whose query tiles sweep as many keys on average as these do: twice the mean
  // keys a query row meets, at 4d FLOPs a key (s for causal, about 2w for a window). MLA's
  // kernels (query/key 192 wide, values 128) were not measured: they keep the FLOP curves
  // (at head dimension 160, between the measured 128 and 192, cuDNN ran 11-32 % slower
  // than either interpolates to: benchmarks/results/h200x1/attention_probe).
  if (spec_.transformer.attention.kind != AttentionKind::Mla) {
    // Every ring block of context parallelism runs all the rank's queries.
    const double queries = static_cast<double>(spec_.training.seq_len) / spec_.parallelism.cp;
    const double batch_heads = static_cast<double>(spec_.training.micro_batch) * heads_local_;
    attn.attention.head_dim = static_cast<double>(head_dim_);
    attn.attention.seq_len =
        2 * forward / (batch_heads * queries * 4 * static_cast<double>(head_dim_));
    attn.attention.query_tiles = batch_heads * std::ceil(queries / 128);
  }
  return attn;
}

OpVertex TransformerEmitter::ring_hop(const Ctx& c, const char* what, int hop,
                                      std::uint64_t bytes, OpVertex after) {
  // One step of the CP ring (an NCCL group of a send to the next rank and a receive from
  // the previous one): both posted together, neither waiting for the other.
  const int cp = spec_.parallelism.cp;
  const int next = layout_.rank_of(coord_.tp, (coord_.cp + 1) % cp, coord_.dp, coord_.pp);
  const int prev = layout_.rank_of(coord_.tp, (coord_.cp + cp - 1) % cp, coord_.dp, coord_.pp);
  OpVertex recv = kNoOp;
  for (const bool send : {true, false}) {
    auto node = sendrecv_node(fmt::format("{}{}.{}", name(c, what), hop, send ? "send" : "recv"),
                              send, send ? next : prev, bytes, groups_.cp);
    node.stream = StreamKind::ContextComm;
    node.phase = c.phase;
    node.layer = c.layer;
    node.microbatch = c.microbatch;
    const OpVertex v = b_.add_unchained(std::move(node), {after});
    if (!send) recv = v;
  }
  return recv;
}

OpVertex TransformerEmitter::attention_core_forward(const Ctx& c, OpVertex kv_producer,
                                                    std::int64_t o_dim) {
  const int cp = spec_.parallelism.cp;
  if (spec_.transformer.attention.unfused) {
    unfused_attention(c, "attention", false);
  } else if (groups_.cp < 0 || cp == 1) {
    compute(attention_node(c, "attention", false), c);
  } else {
    // Ring attention (Megatron/Transformer Engine context parallelism, p2p): block i
    // attends the local queries to the K/V chunk that arrived at hop i; hop i + 1 moves
    // that chunk on while block i runs. cp blocks of 1/cp of the attention each.
    const std::uint64_t chunk = cp_kv_bytes() / static_cast<std::uint64_t>(cp);
    OpVertex arrived = kv_producer;
    for (int i = 0; i < cp; ++i) {
      const OpVertex next_hop = i + 1 < cp ? ring_hop(c, "cp_ring_kv", i + 1, chunk, arrived)
                                           : kNoOp;
      compute(attention_block(c, "attention", false, i), c, {arrived});
      arrived = next_hop;
    }
  }
  quantize_weight(c, "proj.weight_quantize", h_, o_dim);
  quantize(c, "proj.input_quantize", Quant::CastTranspose, T_, o_dim);
  OpVertex proj = gemm(c, "proj", T_, h_, o_dim);
  return tp_reduce(c, "tp_proj", proj);
}

sim::OpNode TransformerEmitter::attention_block(const Ctx& c, const char* what, bool backward,
                                               int block) const {
  const int cp = spec_.parallelism.cp;
  sim::OpNode node = attention_node(c, what, backward);
  node.name += fmt::format(".block{}", block);
  node.flops /= cp;
  node.bytes /= static_cast<std::uint64_t>(cp);
  node.attention.seq_len /= cp;  // a block sweeps one chunk of the keys
  return node;
}

OpVertex TransformerEmitter::attention_core_backward(const Ctx& c, std::int64_t o_dim,
                                                     std::int64_t proj_params) {
  quantize_row_parallel_grad(c, "proj.grad_quantize", h_);
  OpVertex ag_grad = column_input(c, "ag_proj_grad", Gathered::Fp8Grad);
  OpVertex proj_d = gemm(c, "proj.dgrad", T_, o_dim, h_, {ag_grad});
  b_.pair(ag_grad, proj_d);
  if (sp_) quantize(c, "proj.grad_transpose", Quant::Transpose, T_, h_, {ag_grad});
  wgrad(c, "proj.wgrad", o_dim, h_, T_, proj_params, false);
  if (spec_.training.recompute == Recompute::Selective) {
    // Selective recomputation (Korthikanti et al. 2022) re-runs the attention core. The
    // op keeps its backward name; only its context is marked as recomputation.
    const Ctx rc_ctx = c.recomputing();
    if (spec_.transformer.attention.unfused)
      unfused_attention(rc_ctx, "attention.recompute", false);
    else
      compute(attention_node(c, "attention.recompute", false), rc_ctx);
  }
  const int cp = spec_.parallelism.cp;
  if (spec_.transformer.attention.unfused) {
    unfused_attention(c, "attention.bwd", true);
    return kNoOp;
  }
  if (groups_.cp < 0 || cp == 1) {
    compute(attention_node(c, "attention.bwd", true), c);
    return kNoOp;
  }
  // The backward ring: hop i + 1 carries the next K/V chunk and the dK/dV accumulated for
  // the previous one while block i runs; after the last block the accumulated dK/dV go one
  // more hop, back to the rank that owns them, and the K/V gradient waits for it.
  const std::uint64_t chunk = cp_kv_bytes() / static_cast<std::uint64_t>(cp);
  OpVertex arrived = kNoOp;
  for (int i = 0; i < cp; ++i) {
    const OpVertex next_hop =
        i + 1 < cp ? ring_hop(c, "cp_ring_kv_dkv", i + 1, 2 * chunk, arrived) : kNoOp;
    const OpVertex block = compute(attention_block(c, "attention.bwd", true, i), c, {arrived});
    arrived = i + 1 < cp ? next_hop : ring_hop(c, "cp_ring_dkv", cp, chunk, block);
  }
  return arrived;
}

OpVertex TransformerEmitter::attention_forward(const Ctx& c) {
  if (spec_.transformer.attention.kind == AttentionKind::Mla) return mla_forward(c);
  const std::int64_t qkv_out = (heads_local_ + 2 * kv_heads_local_) * head_dim_;
  quantize_weight(c, "qkv.weight_quantize", qkv_out, h_);
  OpVertex ag = column_input(c, "ag_qkv", Gathered::Fp8Input);
  OpVertex qkv = gemm(c, "qkv", T_, qkv_out, h_, {ag});
  b_.pair(ag, qkv);
  if (spec_.transformer.attention.qk_norm) qkv = elementwise(c, "qk_norm", qk_bytes(2), {qkv});
  // Rotary embeddings (Megatron's apply_rotary_pos_emb on the query and on the key, after
  // the QK-norm where there is one): each rotates its heads in place, a read and a write.
  if (rope()) qkv = elementwise(c, "rope", qk_bytes(2), {qkv});
  return attention_core_forward(c, qkv, heads_local_ * head_dim_);
}

bool TransformerEmitter::rope() const {
  return spec_.transformer.position == PositionEmbedding::Rope;
}

std::uint64_t TransformerEmitter::qk_bytes(int passes) const {
  // The rank's query and key heads (bf16). QK-norm: the forward reads and writes them (2
  // passes), the backward reads their gradients and saved inputs and writes the input
  // gradients (3). Rotary embeddings: 2 each way (the backward rotates the gradients back).
  return static_cast<std::uint64_t>(passes * T_ * (heads_local_ + kv_heads_local_) * head_dim_ *
                                    act_bytes_);
}

std::uint64_t TransformerEmitter::mla_rope_bytes() const {
  const auto& a = spec_.transformer.attention;
  return static_cast<std::uint64_t>(2 * T_ * (heads_local_ + 1) * a.qk_rope_head_dim * act_bytes_);
}

OpVertex TransformerEmitter::mla_forward(const Ctx& c) {
  // Multi-head latent attention as trained (DeepSeek-V2/V3): queries and keys/values are
  // projected down to latent ranks, normalised and projected up to per-head width; the
  // attention core then runs on the expanded heads (no weight absorption in training).
  // Down projections are replicated across TP ranks, up projections column-parallel.
  const auto& a = spec_.transformer.attention;
  const std::int64_t qk_head = a.qk_nope_head_dim + a.qk_rope_head_dim;
  const std::int64_t kv_up_out = heads_local_ * (a.qk_nope_head_dim + a.v_head_dim);
  // fp8: the down projections share the norm's quantised (and gathered) output; the up
  // projections' inputs (the latent norms' outputs) get a cast+transpose each.
  if (a.q_lora_rank > 0) {
    quantize_weight(c, "q_down.weight_quantize", a.q_lora_rank, h_);
    quantize_weight(c, "q_up.weight_quantize", heads_local_ * qk_head, a.q_lora_rank);
  } else {
    quantize_weight(c, "q.weight_quantize", heads_local_ * qk_head, h_);
  }
  quantize_weight(c, "kv_down.weight_quantize", a.kv_lora_rank + a.qk_rope_head_dim, h_);
  quantize_weight(c, "kv_up.weight_quantize", kv_up_out, a.kv_lora_rank);
  OpVertex ag = column_input(c, "ag_qkv", Gathered::Fp8Input);
  OpVertex first;
  if (a.q_lora_rank > 0) {
    first = gemm(c, "q_down", T_, a.q_lora_rank, h_, {ag});
    elementwise(c, "q_norm", static_cast<std::uint64_t>(2 * T_ * a.q_lora_rank * act_bytes_));
    quantize(c, "q_up.input_quantize", Quant::CastTranspose, T_, a.q_lora_rank);
    gemm(c, "q_up", T_, heads_local_ * qk_head, a.q_lora_rank);
  } else {
    first = gemm(c, "q", T_, heads_local_ * qk_head, h_, {ag});
  }
  b_.pair(ag, first);
  gemm(c, "kv_down", T_, a.kv_lora_rank + a.qk_rope_head_dim, h_);
  elementwise(c, "kv_norm", static_cast<std::uint64_t>(2 * T_ * a.kv_lora_rank * act_bytes_));
  quantize(c, "kv_up.input_quantize", Quant::CastTranspose, T_, a.kv_lora_rank);
  OpVertex kv_up = gemm(c, "kv_up", T_, kv_up_out, a.kv_lora_rank);
  // Rotary embeddings on the decoupled positional parts only: the queries' and the one
  // key head shared by all (qk_rope_head_dim wide each).
  if (rope()) kv_up = elementwise(c, "rope", mla_rope_bytes(), {kv_up});
  return attention_core_forward(c, kv_up, heads_local_ * a.v_head_dim);
}

OpVertex TransformerEmitter::attention_backward(const Ctx& c) {
  if (spec_.transformer.attention.kind == AttentionKind::Mla) return mla_backward(c);
  const bool bias = spec_.transformer.bias;
  const std::int64_t q_dim = heads_local_ * head_dim_;
  const std::int64_t qkv_out = (heads_local_ + 2 * kv_heads_local_) * head_dim_;
  OpVertex dkv = attention_core_backward(c, q_dim, q_dim * h_ + (bias ? h_ : 0));
  if (rope()) dkv = elementwise(c, "rope.bwd", qk_bytes(2), {dkv});
  if (spec_.transformer.attention.qk_norm) {
    dkv = elementwise(c, "qk_norm.bwd", qk_bytes(3), {dkv});
    // One norm over a head's width each for queries and keys, shared by the heads.
    register_grad(c, "qk_norm", 2 * norm_params(head_dim_), dkv);
  }
  // fp8: the core's dQKV (bf16) is cast and transposed for the qkv dgrad and wgrad.
  quantize(c, "qkv.grad_quantize", Quant::CastTranspose, T_, qkv_out, {dkv});
  OpVertex ag_in = column_input(c, "ag_qkv_input", Gathered::Fp8WgradInput);
  OpVertex qkv_d = gemm(c, "qkv.dgrad", T_, h_, qkv_out, {dkv});
  OpVertex reduce = tp_reduce(c, "tp_qkv_dgrad", qkv_d);
  OpVertex in_t = wgrad_input_transpose(c, "qkv.input_transpose", ag_in);
  OpVertex qkv_w =
      wgrad(c, "qkv.wgrad", h_, qkv_out, T_, h_ * qkv_out + (bias ? qkv_out : 0), false, {ag_in});
  if (in_t == kNoOp) b_.pair(ag_in, qkv_w);
  return reduce;
}

OpVertex TransformerEmitter::mla_backward(const Ctx& c) {
  const auto& a = spec_.transformer.attention;
  const std::int64_t qk_head = a.qk_nope_head_dim + a.qk_rope_head_dim;
  const std::int64_t o_dim = heads_local_ * a.v_head_dim;
  const std::int64_t kv_up_out = heads_local_ * (a.qk_nope_head_dim + a.v_head_dim);
  const std::int64_t kv_down_out = a.kv_lora_rank + a.qk_rope_head_dim;
  if (spec_.training.recompute == Recompute::Selective) {
    // Selective recompute keeps the latents, not Q, K and V (Megatron-LM recompute module
    // mla_up_proj; DeepSeek-V3 report sec. 3.2.3; docs/memory.md): the up projections run
    // again before the attention core's backward needs their outputs.
    const Ctx rc = c.recomputing();
    if (a.q_lora_rank > 0) gemm(rc, "q_up", T_, heads_local_ * qk_head, a.q_lora_rank);
    gemm(rc, "kv_up", T_, kv_up_out, a.kv_lora_rank);
  }
  OpVertex dkv = attention_core_backward(c, o_dim, o_dim * h_);
  if (rope()) dkv = elementwise(c, "rope.bwd", mla_rope_bytes(), {dkv});
  // fp8: the core's dQ and dKV are cast and transposed for the up projections; the latent
  // norms' gradients for the down projections.
  quantize(c, "kv_up.grad_quantize", Quant::CastTranspose, T_, kv_up_out, {dkv});
  OpVertex ag_in = column_input(c, "ag_qkv_input", Gathered::Fp8WgradInput);
  gemm(c, "kv_up.dgrad", T_, a.kv_lora_rank, kv_up_out, {dkv});
  wgrad(c, "kv_up.wgrad", a.kv_lora_rank, kv_up_out, T_, a.kv_lora_rank * kv_up_out, false);
  OpVertex kv_norm = elementwise(c, "kv_norm.bwd",
                                 static_cast<std::uint64_t>(3 * T_ * a.kv_lora_rank * act_bytes_));
  register_grad(c, "kv_norm", a.kv_lora_rank, kv_norm);
  quantize(c, "kv_down.grad_quantize", Quant::CastTranspose, T_, kv_down_out);
  gemm(c, "kv_down.dgrad", T_, h_, kv_down_out);
  OpVertex in_t = wgrad_input_transpose(c, "qkv.input_transpose", ag_in);
  OpVertex kv_down_w =
      wgrad(c, "kv_down.wgrad", h_, kv_down_out, T_, h_ * kv_down_out, false, {ag_in});
  if (in_t == kNoOp) b_.pair(ag_in, kv_down_w);
  OpVertex last_dgrad;
  if (a.q_lora_rank > 0) {
    quantize(c, "q_up.grad_quantize", Quant::CastTranspose, T_, heads_local_ * qk_head);
    gemm(c, "q_up.dgrad", T_, a.q_lora_rank, heads_local_ * qk_head);
    wgrad(c, "q_up.wgrad", a.q_lora_rank, heads_local_ * qk_head, T_,
          a.q_lora_rank * heads_local_ * qk_head, false);
    OpVertex q_norm = elementwise(c, "q_norm.bwd",
                                  static_cast<std::uint64_t>(3 * T_ * a.q_lora_rank * act_bytes_));
    register_grad(c, "q_norm", a.q_lora_rank, q_norm);
    quantize(c, "q_down.grad_quantize", Quant::CastTranspose, T_, a.q_lora_rank);
    last_dgrad = gemm(c, "q_down.dgrad", T_, h_, a.q_lora_rank);
    OpVertex reduce = tp_reduce(c, "tp_qkv_dgrad", last_dgrad);
    wgrad(c, "q_down.wgrad", h_, a.q_lora_rank, T_, h_ * a.q_lora_rank, false);
    return reduce;
  }
  quantize(c, "q.grad_quantize", Quant::CastTranspose, T_, heads_local_ * qk_head);
  last_dgrad = gemm(c, "q.dgrad", T_, h_, heads_local_ * qk_head);
  OpVertex reduce = tp_reduce(c, "tp_qkv_dgrad", last_dgrad);
  wgrad(c, "q.wgrad", h_, heads_local_ * qk_head, T_, h_ * heads_local_ * qk_head, false);
  return reduce;
}

// ---- dense MLP ----

OpVertex TransformerEmitter::dense_mlp_forward(const Ctx& c, const char* prefix, std::int64_t ffn) {
  const std::int64_t ffn_local = ffn / tp_;
  const std::string p = prefix;
  // fp8: fc1 is a TE LayerNormColumnParallelLinear in a dense layer (its norm writes
  // fp8); a MoE layer's shared experts quantise their input themselves. The activation is
  // Megatron-LM's (bf16), and fc2, a TE RowParallelLinear, casts and transposes its input.
  quantize_weight(c, (p + ".fc1.weight_quantize").c_str(), gated_ * ffn_local, h_);
  if (is_moe_layer(c.layer)) quantize_linear_input(c, (p + ".fc1.input_quantize").c_str(), h_);
  OpVertex ag = column_input(c, (p + ".ag_fc1").c_str(), Gathered::Fp8Input);
  OpVertex fc1 = gemm(c, (p + ".fc1").c_str(), T_, gated_ * ffn_local, h_, {ag});
  b_.pair(ag, fc1);
  activation(c, p + ".act", T_, ffn_local);
  quantize_weight(c, (p + ".fc2.weight_quantize").c_str(), h_, ffn_local);
  quantize(c, (p + ".fc2.input_quantize").c_str(), Quant::CastTranspose, T_, ffn_local);
  OpVertex fc2 = gemm(c, (p + ".fc2").c_str(), T_, h_, ffn_local);
  return tp_reduce(c, (p + ".tp_fc2").c_str(), fc2);
}

OpVertex TransformerEmitter::dense_mlp_backward(const Ctx& c, const char* prefix,
                                                std::int64_t ffn) {
  const bool bias = spec_.transformer.bias;
  const std::int64_t ffn_local = ffn / tp_;
  const std::int64_t fc1_out = gated_ * ffn_local;
  const std::string p = prefix;
  quantize_row_parallel_grad(c, (p + ".fc2.grad_quantize").c_str(), h_);
  OpVertex ag_grad = column_input(c, (p + ".ag_fc2_grad").c_str(), Gathered::Fp8Grad);
  OpVertex fc2_d = gemm(c, (p + ".fc2.dgrad").c_str(), T_, ffn_local, h_, {ag_grad});
  b_.pair(ag_grad, fc2_d);
  if (sp_) quantize(c, (p + ".fc2.grad_transpose").c_str(), Quant::Transpose, T_, h_, {ag_grad});
  wgrad(c, (p + ".fc2.wgrad").c_str(), ffn_local, h_, T_, ffn_local * h_ + (bias ? h_ : 0), false);
  // Activation backward reads the gradient and the saved inputs, writes input gradients.
  elementwise(c, (p + ".act.bwd").c_str(),
              static_cast<std::uint64_t>((2 * gated_ + 1) * T_ * ffn_local * act_bytes_));
  quantize(c, (p + ".fc1.grad_quantize").c_str(), Quant::CastTranspose, T_, fc1_out);
  OpVertex ag_in = column_input(c, (p + ".ag_fc1_input").c_str(), Gathered::Fp8WgradInput);
  OpVertex fc1_d = gemm(c, (p + ".fc1.dgrad").c_str(), T_, h_, fc1_out);
  OpVertex reduce = tp_reduce(c, (p + ".tp_fc1_dgrad").c_str(), fc1_d);
  OpVertex in_t = wgrad_input_transpose(c, (p + ".fc1.input_transpose").c_str(), ag_in);
  OpVertex fc1_w = wgrad(c, (p + ".fc1.wgrad").c_str(), h_, fc1_out, T_,
                         h_ * fc1_out + (bias ? fc1_out : 0), false, {ag_in});
  if (in_t == kNoOp) b_.pair(ag_in, fc1_w);
  return reduce;
}

// ---- layer ----

LayerPass TransformerEmitter::layer_forward(int layer, Ctx c) {
  c.layer = layer;
  gather_params(c, is_moe_layer(layer));
  const std::uint64_t norm_bytes = static_cast<std::uint64_t>(2 * Tn_ * h_ * act_bytes_);
  // Megatron's fused bias-dropout-add reads the branch and the residual and writes the
  // sum; with hidden dropout it also writes the mask.
  const std::uint64_t residual_bytes =
      static_cast<std::uint64_t>(3 * Tn_ * h_ * act_bytes_) + hidden_dropout_mask_bytes();
  fp8_norm(c, "ln1", h_);
  OpVertex attn_out = attention_forward(c);
  elementwise(c, "residual1", residual_bytes, {attn_out});
  // A MoE layer's norm feeds the router and the token dispatch in bf16.
  if (is_moe_layer(layer))
    elementwise(c, "ln2", norm_bytes);
  else
    fp8_norm(c, "ln2", h_);
  OpVertex mlp_out = kNoOp;
  if (is_moe_layer(layer)) {
    for (LayerPass moe = moe_forward(c, mlp_out); moe.next();) co_yield moe.stage();
  } else {
    mlp_out = dense_mlp_forward(c, "mlp", spec_.transformer.ffn_hidden);
  }
  elementwise(c, "residual2", residual_bytes, {mlp_out});
}

LayerPass TransformerEmitter::layer_backward(int layer, Ctx c) {
  c.layer = layer;
  if (fully_recomputed(spec_, layer - layers_.begin)) {
    // Full recomputation re-runs the layer's forward (with its communication) right
    // before its backward (Megatron --recompute-granularity full; with recompute_layers,
    // --recompute-method block: only the chunk's first layers).
    layer_forward(layer, c.recomputing()).finish();
  }
  const bool moe = is_moe_layer(layer);
  // A dense layer's backward is all pre-dispatch computation: under the EP overlap it runs
  // where a MoE layer's attention backward would.
  if (!moe)
    for (LayerStage s : {LayerStage::ExpertsBwd, LayerStage::DispatchBwd, LayerStage::ExpertsDw,
                         LayerStage::PreDispatchBwd})
      co_yield s;
  // The branch's gradient: read the output gradient (and the dropout mask), write it.
  const std::uint64_t grad_bytes =
      static_cast<std::uint64_t>(2 * Tn_ * h_ * act_bytes_) + hidden_dropout_mask_bytes();
  const std::uint64_t norm_bwd_bytes = static_cast<std::uint64_t>(4 * Tn_ * h_ * act_bytes_);
  elementwise(c, "residual2.bwd", grad_bytes);
  OpVertex mlp_grad = kNoOp;
  if (moe) {
    for (LayerPass m = moe_backward(c, mlp_grad); m.next();) co_yield m.stage();
  } else {
    mlp_grad = dense_mlp_backward(c, "mlp", spec_.transformer.ffn_hidden);
  }
  // Norm backward: reads the gradient and the saved input, writes the input gradient and
  // adds the residual branch's gradient.
  OpVertex ln2 = elementwise(c, "ln2.bwd", norm_bwd_bytes, {mlp_grad});
  register_grad(c, "ln2", norm_params(h_), ln2);
  elementwise(c, "residual1.bwd", grad_bytes);
  OpVertex attn_grad = attention_backward(c);
  OpVertex ln1 = elementwise(c, "ln1.bwd", norm_bwd_bytes, {attn_grad});
  register_grad(c, "ln1", norm_params(h_), ln1);
}

// ---- embedding and head ----

void TransformerEmitter::embedding_forward(const Ctx& c) {
  // Vocab-parallel lookup: each TP rank gathers the rows it owns and writes a full
  // T x h output (zeros elsewhere), which the TP reduction then combines.
  sim::OpNode lookup;
  lookup.name = name(c, "lookup");
  lookup.kind = sim::OpKind::EmbeddingLookup;
  lookup.bytes = static_cast<std::uint64_t>(2 * T_ * h_ * act_bytes_);
  OpVertex v = compute(std::move(lookup), c);
  if (spec_.transformer.position == PositionEmbedding::Learned)
    v = elementwise(c, "position_add", static_cast<std::uint64_t>(3 * T_ * h_ * act_bytes_));
  OpVertex reduce = collective(
      c, "tp_embedding", sp_ ? CollectiveOp::ReduceScatter : CollectiveOp::AllReduce,
      static_cast<std::uint64_t>(T_ * h_ * act_bytes_), groups_.tp, StreamKind::TensorComm, {v});
  if (reduce != kNoOp) b_.fence_compute(reduce);  // the first layer reads the reduced embedding
  // Embedding dropout (Megatron's Embedding, hidden_dropout) on the reduced (with SP,
  // scattered) output: read, write, and write the mask.
  if (hidden_dropout_)
    elementwise(c, "embedding_dropout", embedding_dropout_bytes(), {reduce});
}

void TransformerEmitter::embedding_backward(const Ctx& c) {
  if (hidden_dropout_) elementwise(c, "embedding_dropout.bwd", embedding_dropout_bytes());
  OpVertex ag = column_input(c, "ag_embedding_grad");
  sim::OpNode lookup;
  lookup.name = name(c, "lookup.bwd");
  lookup.kind = sim::OpKind::EmbeddingLookup;
  // Reads the output gradient and accumulates it into the touched rows (read + write).
  lookup.bytes = static_cast<std::uint64_t>(3 * T_ * h_ * act_bytes_);
  OpVertex v = compute(std::move(lookup), c, {ag});
  const auto& t = spec_.transformer;
  const std::int64_t table = vocab_local_ * h_;
  register_grad(c, "word_embedding", table, v);
  if (t.position == PositionEmbedding::Learned)
    register_grad(c, "position_embedding", static_cast<std::int64_t>(spec_.training.seq_len) * h_,
                  v);
  if (t.tie_embeddings && spec_.parallelism.pp > 1 && c.register_grads)
    grads_.add_tied_embedding(table, v);
}

void TransformerEmitter::head_forward(const Ctx& head_ctx) {
  Ctx c = head_ctx;
  c.bf16_gemms = true;  // Megatron-LM's output layer is not a TE module: bf16 under fp8
  elementwise(c, "final_norm", static_cast<std::uint64_t>(2 * Tn_ * h_ * act_bytes_));
  OpVertex ag = column_input(c, "ag_logits");
  OpVertex logits = gemm(c, "logits", T_, vocab_local_, h_, {ag});
  b_.pair(ag, logits);
  // Vocab-parallel cross-entropy: softmax over the local vocabulary in fp32, and all-
  // reductions over TP of the per-token max, sum and target logit (3 floats per token).
  OpVertex loss = elementwise(c, "cross_entropy",
                              static_cast<std::uint64_t>(T_ * vocab_local_ * (act_bytes_ + 4)));
  OpVertex ce = collective(c, "tp_cross_entropy", CollectiveOp::AllReduce,
                           static_cast<std::uint64_t>(3 * T_ * 4), groups_.tp,
                           StreamKind::TensorComm, {loss});
  elementwise(c, "loss", static_cast<std::uint64_t>(T_ * 4), {ce});
}

void TransformerEmitter::head_backward(const Ctx& head_ctx) {
  Ctx c = head_ctx;
  c.bf16_gemms = true;
  const auto& t = spec_.transformer;
  elementwise(c, "cross_entropy.bwd",
              static_cast<std::uint64_t>(T_ * vocab_local_ * (act_bytes_ + 4)));
  OpVertex ag_in = column_input(c, "ag_logits_input");
  OpVertex logits_d = gemm(c, "logits.dgrad", T_, h_, vocab_local_);
  OpVertex reduce = tp_reduce(c, "tp_logits_dgrad", logits_d);
  const std::int64_t table = vocab_local_ * h_;
  // With tied embeddings on one stage the head's gradient accumulates into the embedding
  // table, which is registered once by the embedding backward.
  const bool separate = !t.tie_embeddings || spec_.parallelism.pp > 1;
  OpVertex w = wgrad(c, "logits.wgrad", h_, vocab_local_, T_, separate ? table : 0, false, {ag_in});
  b_.pair(ag_in, w);
  if (t.tie_embeddings && spec_.parallelism.pp > 1 && c.register_grads)
    grads_.add_tied_embedding(table, w);
  OpVertex norm = elementwise(c, "final_norm.bwd",
                              static_cast<std::uint64_t>(4 * Tn_ * h_ * act_bytes_), {reduce});
  register_grad(c, "final_norm", norm_params(h_), norm);
}

// ---- microbatch passes ----

TransformerEmitter::Ctx TransformerEmitter::forward_begin(int microbatch) {
  Ctx c;
  c.microbatch = microbatch;
  c.phase = sim::Phase::Forward;
  gather_anchor_ = kNoOp;
  if (first_stage_) {
    c.block = "emb";
    gather_params(c, false);
    embedding_forward(c);
  }
  fp8_gemms_ = 0;
  return c;
}

void TransformerEmitter::forward_end(Ctx c) {
  if (layers_.end > layers_.begin) {
    fp8_gemms_of_chunk_[static_cast<std::size_t>(chunk_)] = fp8_gemms_;
    Ctx a = c;
    a.block = "fp8";
    amax_reduction(a, 3 * fp8_gemms_);
  }
  if (last_stage_) {
    c.layer = -1;
    c.block = "head";
    gather_params(c, false);
    head_forward(c);
  }
}

TransformerEmitter::Ctx TransformerEmitter::backward_begin(int microbatch, bool last_microbatch) {
  Ctx c;
  c.microbatch = microbatch;
  c.phase = sim::Phase::Backward;
  c.register_grads = last_microbatch;
  if (last_stage_) {
    c.block = "head";
    head_backward(c);
  }
  return c;
}

void TransformerEmitter::backward_end(Ctx c) {
  if (layers_.end > layers_.begin) {
    Ctx a = c;
    a.layer = -1;
    a.block = "fp8";
    amax_reduction(a, 2 * fp8_gemms_of_chunk_[static_cast<std::size_t>(chunk_)]);
  }
  if (first_stage_) {
    c.layer = -1;
    c.block = "emb";
    embedding_backward(c);
  }
}

void TransformerEmitter::forward(int microbatch) {
  const Ctx c = forward_begin(microbatch);
  for (int l = layers_.begin; l < layers_.end; ++l) layer_forward(l, c).finish();
  forward_end(c);
}

void TransformerEmitter::backward(int microbatch, bool last_microbatch) {
  const Ctx c = backward_begin(microbatch, last_microbatch);
  for (int l = layers_.end - 1; l >= layers_.begin; --l) layer_backward(l, c).finish();
  backward_end(c);
}

// Megatron-Core's combined 1F1B (model_chunk_schedule_plan.py): the forward's embedding,
// the backward's head, then layer i of the forward beside layer L-1-i of the backward in
// TransformerLayerSchedulePlan.run's order, which on the communication stream is
//   combine backward | dispatch -> dispatch backward | combine
// and on the compute stream
//   pre-dispatch forward | experts backward -> experts' weight gradients -> experts | pre-
//   dispatch backward,
// so each exchange runs beside the other microbatch's computation; then the layers one
// chunk has beyond the other's (the backward's first), the forward's head and the
// backward's embedding. The forward's unpermutation and residual, which Megatron runs on
// the communication stream after the combine, are emitted after the backward's part: the
// compute stream does not wait for the combine.
void TransformerEmitter::forward_backward(const ChunkMicrobatch& forward,
                                          const ChunkMicrobatch& backward, bool last_microbatch) {
  set_chunk(forward.chunk);
  const Ctx f = forward_begin(forward.microbatch);
  const LayerRange fl = layers_;
  set_chunk(backward.chunk);
  const Ctx b = backward_begin(backward.microbatch, last_microbatch);
  const LayerRange bl = layers_;
  const int pairs = std::min(fl.end - fl.begin, bl.end - bl.begin);
  for (int i = 0; i < pairs; ++i) {
    LayerPass fwd = layer_forward(fl.begin + i, f);
    LayerPass bwd = layer_backward(bl.end - 1 - i, b);
    bwd.run_to(LayerStage::ExpertsBwd);      // the combine's backward
    fwd.run_to(LayerStage::Dispatch);        // pre-dispatch computation
    bwd.run_to(LayerStage::DispatchBwd);     // the experts' backward
    fwd.run_to(LayerStage::Experts);         // the dispatch
    bwd.run_to(LayerStage::ExpertsDw);       // the dispatch's backward
    bwd.run_to(LayerStage::PreDispatchBwd);  // the experts' weight gradients
    fwd.run_to(LayerStage::Combine);         // the experts
    fwd.run_to(LayerStage::PostCombine);     // the combine
    bwd.finish();                            // pre-dispatch backward
    fwd.finish();                            // unpermutation, residual
  }
  for (int l = bl.end - 1 - pairs; l >= bl.begin; --l) layer_backward(l, b).finish();
  for (int l = fl.begin + pairs; l < fl.end; ++l) layer_forward(l, f).finish();
  set_chunk(forward.chunk);
  forward_end(f);
  set_chunk(backward.chunk);
  backward_end(b);
}

}  // namespace overlapsim::workloads
