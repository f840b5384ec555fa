// The MoE feed-forward block of TransformerEmitter: router, token dispatch over the
// expert-parallel group (all-to-all), grouped expert GEMMs, combine (all-to-all), and
// optional shared experts, following Megatron-LM's all-to-all token dispatcher.
//
// Routing is taken as uniform (every expert receives tokens·top_k/experts tokens, none
// dropped): the balanced case load-balancing losses aim for. Per rank:
//   Tn tokens are routed (SP-split when tp > 1), top_k copies each are sent;
//   with expert tensor parallelism etp (default tp) the received tokens are all-gathered
//   over the expert-TP group, so R = Tn·top_k·etp tokens reach the rank's experts/ep local
//   experts, each split etp ways, and each local expert GEMM has M = R·ep/experts rows
//   (fractional M is rounded in the shape; the FLOPs and bytes use the exact value). With
//   etp = 1 (MoE parallel folding) the EP group spans TP ranks and no token crosses TP.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "workloads/transformer_emitter.hpp"

namespace overlapsim::workloads {

using sim::CollectiveOp;
using sim::StreamKind;

// Named, not anonymous: the MoE passes are coroutines, and their frames hold these types.
namespace moe_detail {

struct ExpertShape {
  double rows_per_expert;  // M of each local expert GEMM
  std::int64_t local_experts;
  std::int64_t routed_tokens;  // R: token copies handled by this rank's experts
  std::int64_t ffn_local;      // each local expert's width on this rank (split over etp)
};

ExpertShape expert_shape(const ModelSpec& spec, std::int64_t routed_local_tokens) {
  const auto& m = spec.moe;
  const auto& p = spec.parallelism;
  ExpertShape s;
  s.local_experts = m.experts / p.ep;
  s.routed_tokens = routed_local_tokens * m.top_k * p.expert_tp();
  s.ffn_local = m.expert_ffn_hidden / p.expert_tp();
  s.rows_per_expert = static_cast<double>(s.routed_tokens) / s.local_experts;
  return s;
}

// A grouped GEMM over the local experts with a possibly fractional M.
sim::OpNode expert_gemm_node(std::string name, double m, std::int64_t n, std::int64_t k,
                             std::int64_t experts, int in_bytes, int out_bytes) {
  auto node = gemm_node(std::move(name), std::llround(m), n, k, experts, in_bytes, out_bytes);
  node.flops = 2.0 * experts * m * n * k;
  node.bytes = static_cast<std::uint64_t>(std::llround(
      experts * ((m * k + static_cast<double>(k) * n) * in_bytes + m * n * out_bytes)));
  return node;
}

double share_of_tokens_reaching(int experts, int top_k, int experts_there) {
  // 1 - C(E - e, k) / C(E, k): top_k distinct experts of E drawn uniformly, none of the e.
  double none = 1;
  for (int j = 0; j < top_k; ++j)
    none *= std::max(0.0, static_cast<double>(experts - experts_there - j) / (experts - j));
  return 1 - none;
}

// Kernels Megatron-Core's eager MoE path launches around the experts, per layer and pass,
// on the ops that stand for them (the host issues each: docs/simulate.md, "The host").
// Measured with the all-to-all dispatcher, the permutation unfused (moe.permute_fusion
// false), Megatron-LM at d98e8a64dd (benchmarks/results/h200x2/megatron_moe_layer/, run 4,
// per module on one EP 16 rank's experts, megatron_moe_layer_modules_w1.csv): the router 28
// forward and 21 backward (TopKRouter unfused, moe.router_fusion false); the dispatcher's
// preprocessing and permutation 11 and 12, its regrouping (dispatch_postprocess) 2 and 2;
// the combine's regrouping (combine_preprocess) 1 and 1, its unpermutation 2 and 1; the
// experts' are theirs (7 and 15 a SequentialMLP expert). Fused paths and other dispatchers
// are not measured: one launch an op.
struct FrameworkKernels {
  int router_fwd = 1, permute_fwd = 1, unpermute_fwd = 1;
  int router_bwd = 1, permute_bwd = 1, unpermute_bwd = 1;  // router_bwd: its dgrad op's
  int sort_fwd = 1, unsort_fwd = 1, sort_bwd = 1, unsort_bwd = 1;  // the regroupings
};

FrameworkKernels framework_kernels(const MoeSpec& m) {
  FrameworkKernels k;
  if (!m.router_fusion) {
    k.router_fwd = 28;
    k.router_bwd = 20;  // on its dgrad; its wgrad is one more
  }
  if (!m.permute_fusion && m.dispatcher == TokenDispatcher::AllToAll) {
    k.permute_fwd = 11;
    k.unpermute_fwd = 2;
    k.permute_bwd = 12;
    k.unpermute_bwd = 1;
    k.sort_fwd = 2;  // the rows and their routing probabilities
    k.sort_bwd = 2;
  }
  return k;
}

}  // namespace moe_detail

using namespace moe_detail;

OpVertex TransformerEmitter::expert_gemm(const Ctx& c, const char* what, double m, std::int64_t n,
                                         std::int64_t k, std::int64_t experts,
                                         std::initializer_list<OpVertex> deps) {
  auto node = expert_gemm_node(name(c, what), m, n, k, experts, gemm_in_bytes_, act_bytes_);
  node.precision = gemm_precision_;
  // TE GroupedLinear keeps one set of fp8 scales per expert GEMM.
  if (fp8_ && c.phase == sim::Phase::Forward && !c.recompute) fp8_gemms_ += experts;
  return compute(std::move(node), c, deps);
}

// Weight gradients of a grouped GEMM: per expert (in x out) from `rows` token rows.
OpVertex TransformerEmitter::expert_wgrad(const Ctx& c, const char* what, std::int64_t in,
                                          std::int64_t out, double rows, std::int64_t experts) {
  auto node = expert_gemm_node(name(c, (std::string(what) + ".wgrad").c_str()), in, out, 0,
                               experts, gemm_in_bytes_, act_bytes_);
  node.gemm = {in, out, std::llround(rows), experts};
  node.flops = 2.0 * experts * rows * in * out;
  node.bytes = static_cast<std::uint64_t>(std::llround(
      experts * ((rows * (in + out)) * gemm_in_bytes_ + static_cast<double>(in) * out * act_bytes_)));
  node.precision = gemm_precision_;
  OpVertex v = compute(std::move(node), c);
  register_grad(c, what, experts * in * out, v, true);
  return v;
}

// Tokens move over expert TP by all-gather or reduce-scatter (every copy that reaches this
// rank's experts).
OpVertex TransformerEmitter::token_collective(const Ctx& c, const char* what, CollectiveOp op,
                                              std::initializer_list<OpVertex> deps) {
  return collective(
      c, what, op,
      static_cast<std::uint64_t>(expert_shape(spec_, Tn_).routed_tokens * h_ * act_bytes_),
      groups_.etp, StreamKind::TensorComm, deps);
}

// All-to-all (Megatron-LM's all-to-all dispatcher): top_k copies of each routed token, one
// per expert, over the EP group. DeepEP / HybridEP (Megatron-Core's flex dispatcher) send a
// token once to each rank holding any of its experts (DeepEP's get_dispatch_layout:
// is_token_in_rank), and between nodes once to each node, to the GPU of the same local
// index there, which forwards it over NVLink to the node's ranks; the combine returns the
// same rows the other way. Per rank, with N nodes of g EP ranks, under uniform routing:
//   network leg, over the N rail peers:  Tn · P(a node holds one of the token's experts)
//   NVLink leg, over the g node peers:   Tn · ep · P(a rank holds one)
// rows of each destination's share (the all-to-alls' sizes count the rank's whole send
// buffer, its own share included). With the EP group inside a node, only the NVLink leg.
TransformerEmitter::EpExchange TransformerEmitter::ep_exchange(
    const Ctx& c, const char* what, std::initializer_list<OpVertex> deps) {
  const auto& m = spec_.moe;
  const double row_bytes = static_cast<double>(h_ * act_bytes_);
  EpExchange x;
  if (!m.hierarchical_dispatch()) {
    x.ep = collective(c, what, CollectiveOp::AllToAll,
                      static_cast<std::uint64_t>(Tn_ * m.top_k * h_ * act_bytes_), groups_.ep,
                      StreamKind::ExpertComm, deps);
    return x;
  }
  const int ep = spec_.parallelism.ep;
  const int per_node = layout_.ep_per_node();
  const int nodes = ep / per_node;
  const double rank_rows =
      static_cast<double>(Tn_) * ep * share_of_tokens_reaching(m.experts, m.top_k, m.experts / ep);
  if (nodes == 1) {
    x.ep = collective(c, what, CollectiveOp::AllToAll,
                      static_cast<std::uint64_t>(std::llround(rank_rows * row_bytes)), groups_.ep,
                      StreamKind::ExpertComm, deps);
    return x;
  }
  const double node_rows = static_cast<double>(Tn_) * nodes *
                           share_of_tokens_reaching(m.experts, m.top_k, m.experts / nodes);
  x.ep = collective(c, (std::string(what) + ".rail").c_str(), CollectiveOp::AllToAll,
                    static_cast<std::uint64_t>(std::llround(node_rows * row_bytes)),
                    groups_.ep_rail, StreamKind::ExpertComm, deps);
  x.ep_node = collective(c, (std::string(what) + ".node").c_str(), CollectiveOp::AllToAll,
                         static_cast<std::uint64_t>(std::llround(rank_rows * row_bytes)),
                         groups_.ep_node, StreamKind::ExpertNodeComm, deps);
  return x;
}

TransformerEmitter::TokenExchange TransformerEmitter::tokens_from_experts(
    const Ctx& c, const char* scatter, const char* all_to_all, OpVertex producer,
    OpVertex issued_after, OpVertex regrouped) {
  TokenExchange x;
  x.tp = token_collective(c, scatter, CollectiveOp::ReduceScatter,
                          {producer, issued_after, regrouped});
  x.ep = ep_exchange(c, all_to_all, {x.tp, producer, issued_after, regrouped});
  // The overlap designs model NCCL's and the copy engines' all-to-all, not a dispatcher's
  // own kernels.
  if (!spec_.moe.hierarchical_dispatch()) b_.pair(producer, x.tp != kNoOp ? x.tp : x.ep.ep);
  return x;
}

OpVertex TransformerEmitter::regroup_tokens(const Ctx& c, const char* what,
                                            std::initializer_list<OpVertex> deps) {
  const ExpertShape es = expert_shape(spec_, Tn_);
  if (spec_.moe.hierarchical_dispatch() || es.local_experts <= 1) return kNoOp;
  const OpVertex v = elementwise(
      c, what, static_cast<std::uint64_t>(2 * es.routed_tokens * h_ * act_bytes_), deps);
  b_.graph()[v].pair_layout = true;
  return v;
}

LayerPass TransformerEmitter::moe_forward(Ctx c, OpVertex& out) {
  const auto& m = spec_.moe;
  const ExpertShape es = expert_shape(spec_, Tn_);
  const std::int64_t f_local = es.ffn_local;
  // fp8: the router is Megatron-LM's own (bf16) GEMM; the experts are TE GroupedLinear
  // layers, which cast and transpose their inputs (all experts' rows in one pass) and
  // whose weights are quantised in the first microbatch. Tokens travel in bf16, and are
  // quantised only once they have all arrived, so the first expert GEMM no longer
  // consumes the exchange as it lands.
  Ctx router = c;
  router.bf16_gemms = true;
  quantize_weight(c, "experts.fc1.weight_quantize", gated_ * f_local, h_, es.local_experts);
  quantize_weight(c, "experts.fc2.weight_quantize", h_, f_local, es.local_experts);
  const FrameworkKernels k = framework_kernels(m);
  gemm(router.launching(k.router_fwd), "router", Tn_, m.experts, h_);
  OpVertex permute =
      elementwise(c.launching(k.permute_fwd), "permute",
                  static_cast<std::uint64_t>((Tn_ + Tn_ * m.top_k) * h_ * act_bytes_));
  if (m.host_sync) {
    // The dispatcher copies the tokens per expert to the host and waits for them before it
    // sizes the exchange (docs/simulate.md, "The host"). The copy follows the router, and
    // the permutation is issued before the wait; the wait is charged here, after both,
    // which holds the host back by the permutation's GPU time at most.
    sim::OpNode& node = b_.graph()[permute];
    node.host_sync = true;
    node.host_sync_s = spec_.training.host_sync_time_s;
  }
  co_yield LayerStage::Dispatch;
  const EpExchange dispatch = ep_exchange(c, "ep_dispatch", {permute});
  OpVertex gathered = token_collective(c, "tp_gather_tokens", CollectiveOp::AllGather,
                                       {dispatch.ep, dispatch.ep_node, permute});
  co_yield LayerStage::Experts;
  // Shared experts do not wait for the dispatch, so they can run while it is in flight.
  OpVertex shared = kNoOp;
  if (m.shared_experts > 0)
    shared = dense_mlp_forward(c, "shared",
                               static_cast<std::int64_t>(m.shared_experts) * m.expert_ffn_hidden);
  OpVertex tokens_in = gathered != kNoOp ? gathered : dispatch.ep;
  // The pair (exchange, fc1) keeps its edge; the regrouping between them is the pair's
  // layout op, which an overlap design that runs the pair absorbs.
  const OpVertex sorted =
      regroup_tokens(c.launching(k.sort_fwd), "sort_tokens", {tokens_in, dispatch.ep_node});
  OpVertex q_in = quantize(c, "experts.fc1.input_quantize", Quant::CastTranspose, es.routed_tokens,
                           h_, {tokens_in, dispatch.ep_node, sorted});
  OpVertex fc1 = expert_gemm(c, "experts.fc1", es.rows_per_expert, gated_ * f_local, h_,
                             es.local_experts, {tokens_in, dispatch.ep_node, sorted});
  if (q_in == kNoOp && !m.hierarchical_dispatch()) b_.pair(tokens_in, fc1);
  activation(c, "experts.act", es.routed_tokens, f_local);
  quantize(c, "experts.fc2.input_quantize", Quant::CastTranspose, es.routed_tokens, f_local);
  OpVertex fc2 = expert_gemm(c, "experts.fc2", es.rows_per_expert, h_, f_local, es.local_experts);
  const OpVertex unsorted = regroup_tokens(c.launching(k.unsort_fwd), "unsort_tokens", {fc2});
  co_yield LayerStage::Combine;
  const TokenExchange combined =
      tokens_from_experts(c, "tp_scatter_tokens", "ep_combine", fc2, kNoOp, unsorted);
  co_yield LayerStage::PostCombine;
  // Weighted sum of the top_k expert outputs of each token; unfused, by scatter_add_.
  const OpVertex unpermute =
      elementwise(c.launching(k.unpermute_fwd), "unpermute",
                  static_cast<std::uint64_t>((Tn_ * m.top_k + Tn_) * h_ * act_bytes_),
                  {combined.ep.ep, combined.ep.ep_node, combined.tp, shared});
  if (!m.permute_fusion) b_.graph()[unpermute].atomic_add = sim::AtomicAdd::Scatter;
  out = unpermute;
}

LayerPass TransformerEmitter::moe_backward(Ctx c, OpVertex& out) {
  const auto& m = spec_.moe;
  const ExpertShape es = expert_shape(spec_, Tn_);
  const std::int64_t f_local = es.ffn_local;
  const std::int64_t fc1_out = gated_ * f_local;

  const FrameworkKernels k = framework_kernels(m);
  OpVertex unpermute =
      elementwise(c.launching(k.unpermute_bwd), "unpermute.bwd",
                  static_cast<std::uint64_t>((Tn_ * m.top_k + Tn_) * h_ * act_bytes_));
  const EpExchange grad_dispatch = ep_exchange(c, "ep_combine.bwd", {unpermute});
  OpVertex grad_gather = token_collective(c, "tp_scatter_tokens.bwd", CollectiveOp::AllGather,
                                          {grad_dispatch.ep, grad_dispatch.ep_node, unpermute});
  co_yield LayerStage::ExpertsBwd;
  // Selective recompute keeps the experts' (and shared experts') activation inputs, not
  // its output (Megatron-LM recompute module moe_act; DeepSeek-V3 report sec. 3.3.2;
  // docs/memory.md): the activation runs again before the fc2 backward reads it.
  const bool recompute_act = spec_.training.recompute == Recompute::Selective;
  OpVertex shared = kNoOp;
  if (m.shared_experts > 0) {
    const std::int64_t shared_ffn =
        static_cast<std::int64_t>(m.shared_experts) * m.expert_ffn_hidden;
    if (recompute_act) activation(c.recomputing(), "shared.act", T_, shared_ffn / tp_);
    shared = dense_mlp_backward(c, "shared", shared_ffn);
  }
  if (recompute_act) activation(c.recomputing(), "experts.act", es.routed_tokens, f_local);
  OpVertex grads_in = grad_gather != kNoOp ? grad_gather : grad_dispatch.ep;
  const OpVertex grads_sorted = regroup_tokens(c.launching(k.unsort_bwd), "unsort_tokens.bwd",
                                               {grads_in, grad_dispatch.ep_node});
  OpVertex q_grad = quantize(c, "experts.fc2.grad_quantize", Quant::CastTranspose, es.routed_tokens,
                             h_, {grads_in, grad_dispatch.ep_node, grads_sorted});
  OpVertex fc2_dv = expert_gemm(c, "experts.fc2.dgrad", es.rows_per_expert, f_local, h_,
                                es.local_experts, {grads_in, grad_dispatch.ep_node, grads_sorted});
  if (q_grad == kNoOp && !m.hierarchical_dispatch()) b_.pair(grads_in, fc2_dv);
  expert_wgrad(c, "experts.fc2", f_local, h_, es.rows_per_expert, es.local_experts);
  elementwise(
      c, "experts.act.bwd",
      static_cast<std::uint64_t>((2 * gated_ + 1) * es.routed_tokens * f_local * act_bytes_));
  quantize(c, "experts.fc1.grad_quantize", Quant::CastTranspose, es.routed_tokens, fc1_out);
  OpVertex fc1_dv = expert_gemm(c, "experts.fc1.dgrad", es.rows_per_expert, h_, fc1_out,
                                es.local_experts);
  // Transformer Engine's grouped linear computes the weight gradients right after the data
  // gradients in its backward, and the exchange's stream waits for both (an overlap
  // design's pair still starts the exchange from the dgrad's tiles); delayed, they run
  // beside the exchange.
  OpVertex fc1_dw = kNoOp;
  if (!m.delay_wgrad)
    fc1_dw = expert_wgrad(c, "experts.fc1", h_, fc1_out, es.rows_per_expert, es.local_experts);
  const OpVertex grads_unsorted =
      regroup_tokens(c.launching(k.sort_bwd), "sort_tokens.bwd", {fc1_dv});
  co_yield LayerStage::DispatchBwd;
  const TokenExchange grads = tokens_from_experts(c, "tp_gather_tokens.bwd", "ep_dispatch.bwd",
                                                  fc1_dv, fc1_dw, grads_unsorted);
  co_yield LayerStage::ExpertsDw;
  if (m.delay_wgrad)
    expert_wgrad(c, "experts.fc1", h_, fc1_out, es.rows_per_expert, es.local_experts);
  co_yield LayerStage::PreDispatchBwd;
  // Unfused: the backward of the permutation's index_select, an index_add_.
  const OpVertex permute_grad =
      elementwise(c.launching(k.permute_bwd), "permute.bwd",
                  static_cast<std::uint64_t>((Tn_ + Tn_ * m.top_k) * h_ * act_bytes_),
                  {grads.ep.ep, grads.ep.ep_node, grads.tp});
  if (!m.permute_fusion) b_.graph()[permute_grad].atomic_add = sim::AtomicAdd::Index;
  Ctx router = c;
  router.bf16_gemms = true;
  gemm(router.launching(k.router_bwd), "router.dgrad", Tn_, h_, m.experts);
  OpVertex router_w = gemm(router, "router.wgrad", h_, m.experts, Tn_);
  register_grad(c, "router", h_ * m.experts, router_w);
  out = shared;
}

}  // namespace overlapsim::workloads
