// The MoE feed-forward block of TransformerEmitter: router, token dispatch over the
// expert-parallel group (all-to-all), grouped expert GEMMs, combine (all-to-all), and
// optional shared experts, following Megatron-LM's all-to-all token dispatcher.
//
// Routing is taken as uniform (every expert receives tokens·top_k/experts tokens, none
// dropped): the balanced case load-balancing losses aim for. Per rank:
//   Tn tokens are routed (SP-split when tp > 1), top_k copies each are sent;
//   with expert tensor parallelism (= tp) the received tokens are all-gathered over TP,
//   so R = Tn·top_k·tp tokens reach the rank's experts/ep local experts, and each local
//   expert GEMM has M = R·ep/experts rows (fractional M is rounded in the shape; the
//   FLOPs and bytes use the exact value).
#include <fmt/format.h>

#include <cmath>

#include "workloads/transformer_emitter.hpp"

namespace overlapsim::workloads {

using sim::CollectiveOp;
using sim::StreamKind;

namespace {

struct ExpertShape {
  double rows_per_expert;  // M of each local expert GEMM
  std::int64_t local_experts;
  std::int64_t routed_tokens;  // R: token copies handled by this rank's experts
};

ExpertShape expert_shape(const ModelSpec& spec, std::int64_t routed_local_tokens) {
  const auto& m = spec.moe;
  const auto& p = spec.parallelism;
  ExpertShape s;
  s.local_experts = m.experts / p.ep;
  s.routed_tokens = routed_local_tokens * m.top_k * p.tp;
  s.rows_per_expert = static_cast<double>(s.routed_tokens) / s.local_experts;
  return s;
}

// A grouped GEMM over the local experts with a possibly fractional M.
sim::OpNode expert_gemm(std::string name, double m, std::int64_t n, std::int64_t k,
                        std::int64_t experts, int in_bytes, int out_bytes) {
  auto node = gemm_node(std::move(name), std::llround(m), n, k, experts, in_bytes, out_bytes);
  node.flops = 2.0 * experts * m * n * k;
  node.bytes = static_cast<std::uint64_t>(std::llround(
      experts * ((m * k + static_cast<double>(k) * n) * in_bytes + m * n * out_bytes)));
  return node;
}

}  // namespace

OpVertex TransformerEmitter::moe_forward(const Ctx& c) {
  const auto& m = spec_.moe;
  const ExpertShape es = expert_shape(spec_, Tn_);
  const std::int64_t f_local = m.expert_ffn_hidden / tp_;
  const std::uint64_t sent = static_cast<std::uint64_t>(Tn_ * m.top_k * h_ * act_bytes_);
  const std::uint64_t routed = static_cast<std::uint64_t>(es.routed_tokens * h_ * act_bytes_);

  gemm(c, "router", Tn_, m.experts, h_);
  OpVertex permute = elementwise(
      c, "permute", static_cast<std::uint64_t>((Tn_ + Tn_ * m.top_k) * h_ * act_bytes_));
  OpVertex dispatch = collective(c, "ep_dispatch", CollectiveOp::AllToAll, sent, groups_.ep,
                                 StreamKind::ExpertComm, {permute});
  OpVertex gathered = collective(c, "tp_gather_tokens", CollectiveOp::AllGather, routed, groups_.tp,
                                 StreamKind::TensorComm, {dispatch, permute});
  // Shared experts do not wait for the dispatch, so they can run while it is in flight.
  OpVertex shared = kNoOp;
  if (m.shared_experts > 0)
    shared = dense_mlp_forward(c, "shared",
                               static_cast<std::int64_t>(m.shared_experts) * m.expert_ffn_hidden);
  OpVertex tokens_in = gathered != kNoOp ? gathered : dispatch;
  auto fc1_node = expert_gemm(name(c, "experts.fc1"), es.rows_per_expert, gated_ * f_local, h_,
                              es.local_experts, gemm_in_bytes_, act_bytes_);
  fc1_node.precision = gemm_precision_;
  OpVertex fc1 = compute(std::move(fc1_node), c, {tokens_in});
  b_.pair(tokens_in, fc1);
  elementwise(c, "experts.act",
              static_cast<std::uint64_t>((gated_ + 1) * es.routed_tokens * f_local * act_bytes_));
  auto fc2_node = expert_gemm(name(c, "experts.fc2"), es.rows_per_expert, h_, f_local,
                              es.local_experts, gemm_in_bytes_, act_bytes_);
  fc2_node.precision = gemm_precision_;
  OpVertex fc2 = compute(std::move(fc2_node), c);
  OpVertex scattered = collective(c, "tp_scatter_tokens", CollectiveOp::ReduceScatter, routed,
                                  groups_.tp, StreamKind::TensorComm, {fc2});
  if (scattered != kNoOp) b_.pair(fc2, scattered);
  OpVertex combine = collective(c, "ep_combine", CollectiveOp::AllToAll, sent, groups_.ep,
                                StreamKind::ExpertComm, {scattered, fc2});
  if (scattered == kNoOp) b_.pair(fc2, combine);
  // Weighted sum of the top_k expert outputs of each token.
  return elementwise(c, "unpermute",
                     static_cast<std::uint64_t>((Tn_ * m.top_k + Tn_) * h_ * act_bytes_),
                     {combine, scattered, shared});
}

OpVertex TransformerEmitter::moe_backward(const Ctx& c) {
  const auto& m = spec_.moe;
  const ExpertShape es = expert_shape(spec_, Tn_);
  const std::int64_t f_local = m.expert_ffn_hidden / tp_;
  const std::int64_t fc1_out = gated_ * f_local;
  const std::uint64_t sent = static_cast<std::uint64_t>(Tn_ * m.top_k * h_ * act_bytes_);
  const std::uint64_t routed = static_cast<std::uint64_t>(es.routed_tokens * h_ * act_bytes_);

  OpVertex unpermute = elementwise(
      c, "unpermute.bwd", static_cast<std::uint64_t>((Tn_ * m.top_k + Tn_) * h_ * act_bytes_));
  OpVertex grad_dispatch = collective(c, "ep_combine.bwd", CollectiveOp::AllToAll, sent, groups_.ep,
                                      StreamKind::ExpertComm, {unpermute});
  OpVertex grad_gather = collective(c, "tp_scatter_tokens.bwd", CollectiveOp::AllGather, routed,
                                    groups_.tp, StreamKind::TensorComm, {grad_dispatch, unpermute});
  OpVertex shared = kNoOp;
  if (m.shared_experts > 0)
    shared = dense_mlp_backward(c, "shared",
                                static_cast<std::int64_t>(m.shared_experts) * m.expert_ffn_hidden);
  OpVertex grads_in = grad_gather != kNoOp ? grad_gather : grad_dispatch;
  auto fc2_d = expert_gemm(name(c, "experts.fc2.dgrad"), es.rows_per_expert, f_local, h_,
                           es.local_experts, gemm_in_bytes_, act_bytes_);
  fc2_d.precision = gemm_precision_;
  OpVertex fc2_dv = compute(std::move(fc2_d), c, {grads_in});
  b_.pair(grads_in, fc2_dv);
  // Weight gradients of a grouped GEMM: per expert (f_local x h) from M token rows.
  auto fc2_w = expert_gemm(name(c, "experts.fc2.wgrad"), f_local, h_, 0, es.local_experts,
                           gemm_in_bytes_, act_bytes_);
  fc2_w.gemm = {f_local, h_, std::llround(es.rows_per_expert), es.local_experts};
  fc2_w.flops = 2.0 * es.local_experts * es.rows_per_expert * f_local * h_;
  fc2_w.bytes = static_cast<std::uint64_t>(
      std::llround(es.local_experts * ((es.rows_per_expert * (f_local + h_)) * gemm_in_bytes_ +
                                       static_cast<double>(f_local) * h_ * act_bytes_)));
  fc2_w.precision = gemm_precision_;
  OpVertex fc2_wv = compute(std::move(fc2_w), c);
  register_grad(c, "experts.fc2", es.local_experts * f_local * h_, fc2_wv, true);
  elementwise(
      c, "experts.act.bwd",
      static_cast<std::uint64_t>((2 * gated_ + 1) * es.routed_tokens * f_local * act_bytes_));
  auto fc1_d = expert_gemm(name(c, "experts.fc1.dgrad"), es.rows_per_expert, h_, fc1_out,
                           es.local_experts, gemm_in_bytes_, act_bytes_);
  fc1_d.precision = gemm_precision_;
  OpVertex fc1_dv = compute(std::move(fc1_d), c);
  OpVertex grad_scatter = collective(c, "tp_gather_tokens.bwd", CollectiveOp::ReduceScatter, routed,
                                     groups_.tp, StreamKind::TensorComm, {fc1_dv});
  if (grad_scatter != kNoOp) b_.pair(fc1_dv, grad_scatter);
  OpVertex grad_combine = collective(c, "ep_dispatch.bwd", CollectiveOp::AllToAll, sent, groups_.ep,
                                     StreamKind::ExpertComm, {grad_scatter, fc1_dv});
  if (grad_scatter == kNoOp) b_.pair(fc1_dv, grad_combine);
  auto fc1_w = expert_gemm(name(c, "experts.fc1.wgrad"), h_, fc1_out, 0, es.local_experts,
                           gemm_in_bytes_, act_bytes_);
  fc1_w.gemm = {h_, fc1_out, std::llround(es.rows_per_expert), es.local_experts};
  fc1_w.flops = 2.0 * es.local_experts * es.rows_per_expert * h_ * fc1_out;
  fc1_w.bytes = static_cast<std::uint64_t>(
      std::llround(es.local_experts * ((es.rows_per_expert * (h_ + fc1_out)) * gemm_in_bytes_ +
                                       static_cast<double>(h_) * fc1_out * act_bytes_)));
  fc1_w.precision = gemm_precision_;
  OpVertex fc1_wv = compute(std::move(fc1_w), c);
  register_grad(c, "experts.fc1", es.local_experts * h_ * fc1_out, fc1_wv, true);
  elementwise(c, "permute.bwd", static_cast<std::uint64_t>((Tn_ + Tn_ * m.top_k) * h_ * act_bytes_),
              {grad_combine, grad_scatter});
  gemm(c, "router.dgrad", Tn_, h_, m.experts);
  OpVertex router_w = gemm(c, "router.wgrad", h_, m.experts, Tn_);
  register_grad(c, "router", h_ * m.experts, router_w);
  return shared;
}

}  // namespace overlapsim::workloads
