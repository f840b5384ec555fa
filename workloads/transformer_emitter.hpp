#pragma once
// Emits the ops of one pipeline stage of a Transformer or MoE model for one rank:
// forward and backward of a microbatch, with Megatron-LM tensor/sequence parallelism
// (Shoeybi et al. 2019; Korthikanti et al. 2022), context parallelism as ring attention
// (Megatron-LM / Transformer Engine p2p: K/V chunks passed around the CP ring while the
// attention blocks run; Liu et al. 2023, "Ring Attention") and expert parallelism.
// transformer.cpp holds embedding, attention, dense MLP and head; moe.cpp the MoE block.
//
// Shapes per rank, with b = micro_batch, s = seq_len:
//   T  = b·s/cp tokens enter every GEMM (M dimension)
//   Tn = T/tp with sequence parallelism (norms, residuals, pipeline transfers), else T
// FLOPs: 2·m·n·k per GEMM; backward = dgrad + wgrad GEMMs (2x forward); attention
// 4·b·(s/cp)·s·heads·head_dim forward (halved when causal, as FlashAttention skips the
// masked blocks), 2x that backward. Norms, activations and residuals are charged by the
// bytes they move and carry no FLOPs (as in the Megatron FLOP count).
#include <cstdint>
#include <string>
#include <vector>

#include "workloads/grad_buckets.hpp"
#include "workloads/layer_pass.hpp"
#include "workloads/model.hpp"
#include "workloads/parallel_layout.hpp"
#include "workloads/rank_builder.hpp"

namespace overlapsim::workloads {

// Indices into StepGraph::groups of the communicators of one rank; -1 when that
// dimension has size 1 (no communication).
struct RankGroups {
  int tp = -1, cp = -1, dp = -1, pp = -1, ep = -1, edp = -1, embd = -1;
  int etp = -1;  // the experts' TP group: the TP group itself when etp = tp
  // A hierarchical token exchange's NVLink and network legs (ParallelLayout families
  // ep_node, ep_rail); -1 where the EP group lies inside one node.
  int ep_node = -1, ep_rail = -1;
};

class TransformerEmitter {
 public:
  TransformerEmitter(const ModelSpec& spec, const ParallelLayout& layout, int rank,
                     const RankGroups& groups, RankBuilder& builder, GradientBuckets& grads);

  void forward(int microbatch);
  // `last_microbatch`: this backward finishes the weight gradients (register them).
  void backward(int microbatch, bool last_microbatch);
  // Megatron-Core's EP communication overlap (moe.ep_overlap): one chunk pass's forward and
  // another's backward as one program, layer by layer, each pass's token exchanges beside
  // the other's computation. Leaves the backward's chunk set.
  struct ChunkMicrobatch {
    int chunk = 0;
    int microbatch = 0;
  };
  void forward_backward(const ChunkMicrobatch& forward, const ChunkMicrobatch& backward,
                        bool last_microbatch);

  int stage() const { return coord_.pp; }
  // Interleaved pipelines: the model chunk the next forward/backward passes run (its
  // layers; the embedding belongs to chunk 0 of stage 0, the head to the last chunk of the
  // last stage).
  void set_chunk(int chunk);
  // Interleaved pipelines (Megatron-Core's schedule, param_sync_func): each model chunk's
  // parameter all-gathers are issued together, for chunks 0 and 1 at the step's start and
  // for chunk c >= 2 when the forward step whose first op is `anchor` starts, instead of
  // one block ahead of use. Call before any forward of chunk c is emitted.
  void prefetch_chunk_params(int chunk, OpVertex anchor);
  // Bytes of one pipeline transfer (activations or their gradients) of a microbatch.
  std::uint64_t pipeline_bytes() const;

 private:
  struct Ctx {
    int layer = -1;
    int microbatch = 0;
    sim::Phase phase = sim::Phase::Forward;
    bool recompute = false;
    bool register_grads = false;
    bool bf16_gemms = false;  // GEMMs stay bf16 under fp8 (output layer, MoE router)
    const char* block = "";   // name prefix when layer < 0 ("emb", "head")
    // Kernels the framework launches for the op (the host issues each: host_s is this
    // times training.host_launch_time).
    int launches = 1;
    // The same context, its ops launching `n` kernels each.
    Ctx launching(int n) const {
      Ctx r = *this;
      r.launches = n;
      return r;
    }
    // The same context, its ops marked as recomputation.
    Ctx recomputing() const {
      Ctx r = *this;
      r.recompute = true;
      return r;
    }
  };

  // Op helpers: name, phase, layer, microbatch and precision stamped from ctx.
  OpVertex compute(sim::OpNode node, const Ctx& c, std::initializer_list<OpVertex> deps = {});
  OpVertex gemm(const Ctx& c, const char* what, std::int64_t m, std::int64_t n, std::int64_t k,
                std::initializer_list<OpVertex> deps = {}, std::int64_t batch = 1);
  OpVertex wgrad(const Ctx& c, const char* what, std::int64_t in, std::int64_t out,
                 std::int64_t tokens, std::int64_t params, bool expert,
                 std::initializer_list<OpVertex> deps = {}, std::int64_t batch = 1);
  OpVertex elementwise(const Ctx& c, const char* what, std::uint64_t bytes,
                       std::initializer_list<OpVertex> deps = {});
  // An MLP's activation pass (GeLU, or SwiGLU's product) over `rows` x `width`: reads the
  // first GEMM's output (both halves when gated), writes the activation.
  OpVertex activation(const Ctx& c, const std::string& what, std::int64_t rows, std::int64_t width);
  // Hidden dropout's mask, written by each residual branch's bias-dropout-add and read by
  // its backward (0 without hidden dropout); the embedding dropout kernel's bytes.
  std::uint64_t hidden_dropout_mask_bytes() const;
  std::uint64_t embedding_dropout_bytes() const;
  // The attention core without a fused kernel (attention.kernel: unfused), forward or
  // backward, named `what`.
  OpVertex unfused_attention(const Ctx& c, const char* what, bool backward);
  OpVertex collective(const Ctx& c, const char* what, sim::CollectiveOp op, std::uint64_t bytes,
                      int group, sim::StreamKind stream, std::initializer_list<OpVertex> deps);
  void register_grad(const Ctx& c, const char* what, std::int64_t params, OpVertex producer,
                     bool expert = false);
  // The param_gather() slot of the block `c` is in (its layer, the embedding or the head).
  static int gather_slot(const Ctx& c);
  // Distributed optimizer with overlap_param_gather: in microbatch 0's forward, the
  // all-gathers of the block's updated parameters (dense, and expert for a MoE layer),
  // issued when the previous block of this pass began; the block's first compute op waits
  // for them.
  void gather_params(const Ctx& c, bool expert);
  std::string name(const Ctx& c, const char* what) const;

  // TP plumbing. column_input: SP all-gather of the Tn-token input (kNoOp without SP), of
  // `gathered` tensor kind (its bytes per element depend on the fp8 recipe).
  // tp_reduce: TP reduction of a row-parallel GEMM's output (AR, or RS with SP), paired
  // with the GEMM; also of the input gradient of a column-parallel layer in backward.
  enum class Gathered {
    Activation,     // bf16 activations (embedding gradient, output layer input)
    Fp8Input,       // forward: a TE Linear's input, quantised before the gather
    Fp8Grad,        // backward: a row-parallel layer's output gradient, quantised
    Fp8WgradInput,  // backward: the saved input, gathered again for the weight gradient
  };
  OpVertex column_input(const Ctx& c, const char* what, Gathered gathered = Gathered::Activation);
  OpVertex tp_reduce(const Ctx& c, const char* what, OpVertex producer);

  // FP8 as Transformer Engine runs it (workloads/transformer.cpp, "FP8"): the
  // quantisation kernels around the fp8 GEMMs, each an elementwise op charged by the
  // bytes it reads and writes. All are no-ops (kNoOp) unless precision is fp8.
  enum class Quant {
    Cast,           // bf16 -> fp8 row-wise (amax recorded in the same pass)
    CastTranspose,  // bf16 -> fp8 and its transpose in one pass
    Transpose,      // fp8 -> its fp8 transpose (tensor scaling only)
  };
  OpVertex quantize(const Ctx& c, const char* what, Quant q, std::int64_t rows, std::int64_t cols,
                    std::initializer_list<OpVertex> deps = {});
  // The cast alone, its scale already known (delayed scaling, or a current-scaling amax
  // taken before it).
  OpVertex quantize_known_amax(const Ctx& c, const char* what, Quant q, std::int64_t rows,
                               std::int64_t cols, std::initializer_list<OpVertex> deps = {});
  // A weight (rows x cols, bf16) quantised with its transpose: once per step, in the first
  // microbatch's forward (TE caches it across microbatches: is_first_microbatch).
  void quantize_weight(const Ctx& c, const char* what, std::int64_t rows, std::int64_t cols,
                       std::int64_t experts = 1);
  // Current scaling: the amax of `what`'s bf16 tensor before its cast, a separate kernel
  // that reads it (op `what`.amax); with `tp_reduce` (an input gathered in fp8 under SP) the
  // amax is all-reduced (MAX) over the TP group before the cast (amax_tp_allreduce), so
  // every rank casts with one scale.
  OpVertex current_amax(const Ctx& c, const char* what, std::uint64_t elems, bool tp_reduce,
                        std::initializer_list<OpVertex> deps);
  // The 4-byte MAX all-reduce of `what`'s amax over TP (op `what`.amax_allreduce), after
  // `amax`; returns `amax` without a TP group.
  OpVertex amax_tp_allreduce(const Ctx& c, const char* what, OpVertex amax);
  // Delayed scaling: after a microbatch's forward (backward) of the stage's layers, the
  // amaxes of `tensors` fp8 tensors are concatenated, all-reduced (MAX) over the amax group
  // and the scales updated by one kernel.
  void amax_reduction(const Ctx& c, std::int64_t tensors);
  // The input-side quantisation of a column-parallel TE Linear that is not fused with a
  // norm (its bf16 input is `rows` x `cols` on this rank before any SP gather), and of
  // the output gradient of a row-parallel one (`rows` x `cols` before the gather).
  void quantize_linear_input(const Ctx& c, const char* what, std::int64_t cols);
  void quantize_row_parallel_grad(const Ctx& c, const char* what, std::int64_t cols);
  // A norm whose output feeds a TE LayerNormLinear: fused with the fp8 cast (tensor
  // scaling), or followed by a block quantiser.
  OpVertex fp8_norm(const Ctx& c, const char* what, std::int64_t width);
  // Tensor scaling under SP: the fp8 transpose of the input gathered again for wgrad
  // (kNoOp otherwise: then the wgrad may consume the gather as it arrives).
  OpVertex wgrad_input_transpose(const Ctx& c, const char* what, OpVertex gathered);
  bool tensor_fp8() const { return fp8_ && !block_fp8_; }

  // Forward blocks; each returns the op the residual add must wait for.
  void embedding_forward(const Ctx& c);
  // A layer's pass, stopping between its parts (layer_pass.hpp); dense layers have none.
  LayerPass layer_forward(int layer, Ctx c);
  OpVertex attention_forward(const Ctx& c);
  OpVertex mla_forward(const Ctx& c);
  OpVertex dense_mlp_forward(const Ctx& c, const char* prefix, std::int64_t ffn);
  LayerPass moe_forward(Ctx c, OpVertex& out);  // moe.cpp; `out`: the unpermutation
  void head_forward(const Ctx& c);

  // Backward blocks; each returns the op the next compute op must wait for.
  void embedding_backward(const Ctx& c);
  LayerPass layer_backward(int layer, Ctx c);
  OpVertex attention_backward(const Ctx& c);
  OpVertex mla_backward(const Ctx& c);
  OpVertex dense_mlp_backward(const Ctx& c, const char* prefix, std::int64_t ffn);
  LayerPass moe_backward(Ctx c, OpVertex& out);  // moe.cpp; `out`: the shared experts'
  // The starts and ends of a forward and a backward pass around their layers.
  Ctx forward_begin(int microbatch);
  void forward_end(Ctx c);
  Ctx backward_begin(int microbatch, bool last_microbatch);
  void backward_end(Ctx c);
  void head_backward(const Ctx& c);

  // The part of attention that MHA/GQA and MLA share. Forward: the attention core (with
  // CP, its ring after `kv_producer`), the output projection and its TP reduction.
  // Backward: the output projection's gradients, the core's recomputation and backward
  // (with CP, its ring; it returns the hop that brings dK/dV home, else kNoOp).
  OpVertex attention_core_forward(const Ctx& c, OpVertex kv_producer, std::int64_t o_dim);
  OpVertex attention_core_backward(const Ctx& c, std::int64_t o_dim, std::int64_t proj_params);
  sim::OpNode attention_node(const Ctx& c, const char* what, bool backward) const;
  // Context parallelism's ring: block `block` of cp (1/cp of the attention's FLOPs and
  // bytes), and one hop of the ring (send to the next CP rank, receive from the previous;
  // returns the receive) after `after`.
  sim::OpNode attention_block(const Ctx& c, const char* what, bool backward, int block) const;
  OpVertex ring_hop(const Ctx& c, const char* what, int hop, std::uint64_t bytes, OpVertex after);
  // moe.cpp: a grouped GEMM over the local experts (M may be fractional), the weight
  // gradient of one (registered as `what`), and the token exchanges around the experts.
  OpVertex expert_gemm(const Ctx& c, const char* what, double m, std::int64_t n, std::int64_t k,
                       std::int64_t experts, std::initializer_list<OpVertex> deps = {});
  OpVertex expert_wgrad(const Ctx& c, const char* what, std::int64_t in, std::int64_t out,
                        double rows, std::int64_t experts);
  // All-gather / reduce-scatter over expert TP of the routed tokens.
  OpVertex token_collective(const Ctx& c, const char* what, sim::CollectiveOp op,
                            std::initializer_list<OpVertex> deps);
  // The routed tokens' exchange over EP (moe.dispatcher): one all-to-all (`ep`), or a
  // hierarchical exchange's network leg (`ep`, over the ep_rail family) and NVLink leg
  // (`ep_node`, over ep_node), in flight together; what consumes the tokens waits for both.
  struct EpExchange {
    OpVertex ep = kNoOp, ep_node = kNoOp;
  };
  EpExchange ep_exchange(const Ctx& c, const char* what, std::initializer_list<OpVertex> deps);
  struct TokenExchange {
    OpVertex tp = kNoOp;  // TP reduce-scatter (or kNoOp)
    EpExchange ep;
  };
  // Back from the experts: TP reduce-scatter, then the exchange over EP; the first
  // collective is paired with `producer` where the overlap designs apply (all-to-all).
  // Both also wait for `issued_after` (kNoOp: none), compute issued after the producer, and
  // read `regrouped` (kNoOp: the producer's output itself), the producer's rows regrouped.
  TokenExchange tokens_from_experts(const Ctx& c, const char* scatter, const char* all_to_all,
                                    OpVertex producer, OpVertex issued_after = kNoOp,
                                    OpVertex regrouped = kNoOp);
  // The all-to-all dispatcher's regrouping of the received rows between (source rank,
  // local expert) and (local expert, source rank) order, a pass over them (Megatron-LM
  // sort_chunks_by_idxs); kNoOp where there is none (one local expert, or a hierarchical
  // dispatcher, whose kernels write each expert's rows together). An OpNode::pair_layout op.
  OpVertex regroup_tokens(const Ctx& c, const char* what, std::initializer_list<OpVertex> deps);

  bool is_moe_layer(int layer) const;
  std::int64_t norm_params(std::int64_t width) const;  // one norm's weights over `width`
  double attention_forward_flops(int layer) const;
  std::uint64_t attention_io_bytes(bool backward) const;
  std::uint64_t cp_kv_bytes() const;  // K and V (or dK, dV) of the whole sequence
  std::uint64_t qk_bytes(int passes) const;  // passes over the rank's query and key heads
  bool rope() const;                         // rotary position embeddings
  std::uint64_t mla_rope_bytes() const;      // one pass each way over MLA's positional parts

  const ModelSpec& spec_;
  const ParallelLayout& layout_;
  RankCoord coord_;
  RankGroups groups_;
  RankBuilder& b_;
  GradientBuckets& grads_;
  LayerRange layers_;
  bool first_stage_ = false, last_stage_ = false;

  // Dimensions (see the header comment).
  std::int64_t h_ = 0, T_ = 0, Tn_ = 0, vocab_local_ = 0;
  std::int64_t heads_local_ = 0, kv_heads_local_ = 0, head_dim_ = 0;
  int tp_ = 1, gated_ = 1;
  bool sp_ = false;
  int act_bytes_ = 2;      // activations and gradients (16-bit)
  int gemm_in_bytes_ = 2;  // GEMM inputs (1 with fp8)
  sim::Precision gemm_precision_ = sim::Precision::BF16;
  bool fp8_ = false, block_fp8_ = false;          // precision fp8; fp8_scaling block128
  bool current_fp8_ = false;                      // fp8_scaling current
  bool attention_dropout_ = false;  // attention_dropout > 0 (its kernels with unfused attention)
  bool hidden_dropout_ = false;     // hidden_dropout > 0: residual branches and the embedding
  std::int64_t fp8_gemms_ = 0;                    // fp8 GEMMs in this forward pass (amax tensors)
  std::vector<std::int64_t> fp8_gemms_of_chunk_;  // the same per model chunk, for backward
  int chunk_ = 0;
  bool overlap_param_gather_ = false;
  OpVertex gather_anchor_ = kNoOp;  // first op of the previous block of this forward pass
  // Per model chunk, where its parameter gathers are issued (prefetch_chunk_params); empty:
  // one block ahead of use (gather_anchor_).
  std::vector<OpVertex> chunk_gather_anchor_;
};

}  // namespace overlapsim::workloads
