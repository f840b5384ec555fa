#include "workloads/grad_buckets.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace overlapsim::workloads {

namespace {

struct Bucket {
  std::int64_t params = 0;
  OpVertex ready_after = kNoOp;  // the last producer of the bucket's gradients
};

std::vector<Bucket> pack(const std::vector<std::pair<std::int64_t, OpVertex>>& tensors,
                         std::uint64_t bucket_bytes, int grad_bytes) {
  std::vector<Bucket> out;
  Bucket open;
  for (const auto& [params, producer] : tensors) {
    std::uint64_t bytes = static_cast<std::uint64_t>(params) * grad_bytes;
    std::uint64_t open_bytes = static_cast<std::uint64_t>(open.params) * grad_bytes;
    if (open.params > 0 && open_bytes + bytes > bucket_bytes) {
      out.push_back(open);
      open = {};
    }
    open.params += params;
    if (open.ready_after == kNoOp || (producer != kNoOp && producer > open.ready_after))
      open.ready_after = producer;
  }
  if (open.params > 0) out.push_back(open);
  return out;
}

}  // namespace

void GradientBuckets::add(std::string name, std::int64_t params, OpVertex producer, bool expert,
                          int slot) {
  if (params > 0) tensors_.push_back({std::move(name), params, producer, expert, slot});
}

OpVertex GradientBuckets::param_gather(RankBuilder& b, int slot, bool expert, int group,
                                       OpVertex after, std::string name, int layer) {
  if (group < 0) return kNoOp;
  auto node = collective_node(std::move(name), sim::CollectiveOp::AllGather, 0, group,
                              sim::StreamKind::DataComm);
  node.phase = sim::Phase::Forward;
  node.layer = layer;
  node.microbatch = 0;
  const OpVertex v = b.add(std::move(node), {after});
  gathers_.push_back({slot, expert, v});
  return v;
}

void GradientBuckets::add_tied_embedding(std::int64_t params, OpVertex producer) {
  tied_params_ = params;
  tied_producer_ = producer;
}

std::int64_t GradientBuckets::dense_params() const {
  std::int64_t n = 0;
  for (const auto& t : tensors_) n += t.expert ? 0 : t.params;
  return n;
}

std::int64_t GradientBuckets::expert_params() const {
  std::int64_t n = 0;
  for (const auto& t : tensors_) n += t.expert ? t.params : 0;
  return n;
}

OpVertex GradientBuckets::emit(RankBuilder& b, const GradSyncOptions& opt) const {
  using sim::CollectiveOp;
  using sim::StreamKind;
  const bool sharded = opt.mode == GradSync::DistributedOptimizer;
  struct FamilyBuckets {
    std::string tag;
    int group;
    int size;
    std::vector<Bucket> buckets;
  };
  std::vector<FamilyBuckets> families;
  // A tensor whose slot has an overlapped gather is not gathered after the optimizer.
  auto gathered_early = [&](const Tensor& t) {
    if (!sharded || !opt.overlap_param_gather || t.slot == kNoGatherSlot) return false;
    return std::any_of(gathers_.begin(), gathers_.end(), [&](const Gather& g) {
      return g.slot == t.slot && g.expert == t.expert;
    });
  };
  std::vector<FamilyBuckets> late_gathers;  // tensors gathered after the optimizer
  for (bool expert : {false, true}) {
    std::vector<std::pair<std::int64_t, OpVertex>> list, late;
    for (const auto& t : tensors_) {
      if (t.expert != expert) continue;
      list.emplace_back(t.params, t.producer);
      if (!gathered_early(t)) late.emplace_back(t.params, t.producer);
    }
    const std::string tag = expert ? "edp" : "dp";
    const int group = expert ? opt.edp_group : opt.dp_group;
    const int size = expert ? opt.edp_size : opt.dp_size;
    families.push_back({tag, group, size, pack(list, opt.bucket_bytes, opt.grad_bytes)});
    late_gathers.push_back({tag, group, size, pack(late, opt.bucket_bytes, opt.grad_bytes)});
  }
  // The overlapped gathers' sizes: the parameters of their slot and family.
  for (const auto& g : gathers_) {
    std::int64_t params = 0;
    for (const auto& t : tensors_)
      if (t.slot == g.slot && t.expert == g.expert) params += t.params;
    b.graph()[g.op].comm_bytes = static_cast<std::uint64_t>(params) * opt.param_bytes;
  }

  // Reductions in the order their buckets become ready (dense and expert interleaved).
  struct Pending {
    OpVertex ready;
    int family;
    int index;
  };
  std::vector<Pending> order;
  for (int f = 0; f < 2; ++f)
    for (int i = 0; i < static_cast<int>(families[f].buckets.size()); ++i)
      order.push_back({families[f].buckets[i].ready_after, f, i});
  std::stable_sort(order.begin(), order.end(),
                   [](const Pending& x, const Pending& y) { return x.ready < y.ready; });

  OpVertex last_comm = kNoOp;
  for (const auto& p : order) {
    const auto& fam = families[p.family];
    if (fam.group < 0) continue;
    const auto& bucket = fam.buckets[p.index];
    auto node = collective_node(fmt::format("{}.grad_{}.bucket{}", fam.tag,
                                            sharded ? "reducescatter" : "allreduce", p.index),
                                sharded ? CollectiveOp::ReduceScatter : CollectiveOp::AllReduce,
                                static_cast<std::uint64_t>(bucket.params) * opt.grad_bytes,
                                fam.group, StreamKind::DataComm);
    node.phase = sim::Phase::Backward;
    node.precision = opt.grad_bytes == 4 ? sim::Precision::FP32 : sim::Precision::BF16;
    // Without overlap the reductions start once the whole backward pass is done.
    last_comm = b.add(std::move(node), {bucket.ready_after, opt.overlap_grad_reduce
                                                               ? kNoOp
                                                               : b.last(StreamKind::Compute)});
  }
  if (opt.embd_group >= 0 && tied_params_ > 0) {
    // Megatron all-reduces the tied embedding's gradient between the first and the last
    // stage after the data-parallel reduction (finalize_model_grads).
    auto node = collective_node("embd.grad_allreduce", CollectiveOp::AllReduce,
                                static_cast<std::uint64_t>(tied_params_) * opt.grad_bytes,
                                opt.embd_group, StreamKind::DataComm);
    node.phase = sim::Phase::Backward;
    last_comm = b.add(std::move(node), {tied_producer_});
  }

  // Adam over the local (or, sharded, the 1/dp) parameters, after every gradient is final.
  std::int64_t updated = 0;
  std::int64_t local = 0;
  for (int f = 0; f < 2; ++f) {
    std::int64_t params = 0;
    for (const auto& bk : families[f].buckets) params += bk.params;
    updated += sharded ? params / families[f].size : params;
    local += params;
  }
  // One memory-bound pass on the compute stream, after the previous one.
  auto pass = [&](const char* name, std::uint64_t bytes, OpVertex after) {
    auto node = elementwise_node(name, bytes);
    node.phase = sim::Phase::Optimizer;
    node.precision = sim::Precision::FP32;
    return b.add(std::move(node), {after, b.last(StreamKind::Compute)});
  };
  OpVertex last = kNoOp;
  if (opt.megatron_step) {
    const MegatronStepBytes m = megatron_step_bytes(updated, local, opt.grad_bytes,
                                                    opt.param_bytes, opt.clip_grad,
                                                    opt.unscale_grads);
    last = last_comm;
    if (m.copy_main_grads > 0) last = pass("optimizer.copy_main_grads", m.copy_main_grads, last);
    if (m.unscale > 0) last = pass("optimizer.unscale_grads", m.unscale, last);
    if (m.grad_norm > 0) last = pass("optimizer.grad_norm", m.grad_norm, last);
    last = pass("optimizer.step", m.adam, last);
    last = pass("optimizer.copy_main_params", m.copy_main_params, last);
    // The next step's zeroing of the gradient buffer, on the compute stream while the
    // parameter gathers below run on the DataComm stream.
    pass("optimizer.zero_grad_buffer", m.zero_grad_buffer, last);
  } else {
    last = pass("optimizer.step",
                static_cast<std::uint64_t>(updated) * (opt.grad_bytes + opt.optimizer_state_bytes),
                last_comm);
  }

  if (sharded) {
    for (const auto& fam : late_gathers) {
      if (fam.group < 0) continue;
      for (int i = 0; i < static_cast<int>(fam.buckets.size()); ++i) {
        auto node = collective_node(
            fmt::format("{}.param_allgather.bucket{}", fam.tag, i), CollectiveOp::AllGather,
            static_cast<std::uint64_t>(fam.buckets[i].params) * opt.param_bytes, fam.group,
            StreamKind::DataComm);
        node.phase = sim::Phase::Optimizer;
        last = b.add(std::move(node), {last});
      }
    }
  }
  return last;
}

MegatronStepBytes megatron_step_bytes(std::int64_t updated, std::int64_t local, int grad_bytes,
                                      int param_bytes, bool clip_grad, bool unscale) {
  const auto u = static_cast<std::uint64_t>(updated);
  constexpr std::uint64_t kMainGrad = 4;    // fp32 main gradient
  constexpr std::uint64_t kMainParam = 4;   // fp32 master weight
  MegatronStepBytes m;
  if (grad_bytes != 4) m.copy_main_grads = u * (static_cast<std::uint64_t>(grad_bytes) + kMainGrad);
  if (unscale) m.unscale = u * 2 * kMainGrad;
  if (clip_grad) m.grad_norm = u * kMainGrad;
  m.adam = u * (kMainGrad + kAdamStateBytesPerParam);
  m.copy_main_params = u * (kMainParam + static_cast<std::uint64_t>(param_bytes));
  m.zero_grad_buffer = static_cast<std::uint64_t>(local) * static_cast<std::uint64_t>(grad_bytes);
  return m;
}

}  // namespace overlapsim::workloads
