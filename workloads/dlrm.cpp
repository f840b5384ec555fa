#include "workloads/dlrm.hpp"

#include <fmt/format.h>

#include "workloads/generator.hpp"

namespace overlapsim::workloads {

using sim::CollectiveOp;
using sim::StreamKind;

namespace {

class DlrmEmitter {
 public:
  DlrmEmitter(const ModelSpec& spec, const RankGroups& groups, RankBuilder& b,
              GradientBuckets& grads, std::int64_t local_batch)
      : d_(spec.dlrm),
        groups_(groups),
        b_(b),
        grads_(grads),
        batch_(local_batch),
        precision_(spec.training.precision),
        in_bytes_(sim::bytes_per_element(spec.training.precision)),
        act_bytes_(spec.training.precision == sim::Precision::FP32 ? 4 : 2),
        emb_bytes_(sim::bytes_per_element(spec.dlrm.embedding_precision)) {
    for (const auto& t : d_.tables) hot_ += t.hotness;
    tables_ = static_cast<std::int64_t>(d_.tables.size());
    const std::int64_t bottom_out = d_.bottom_mlp.back();
    interaction_dim_ = d_.interaction == "dcn" ? bottom_out + tables_ * d_.embedding_dim
                                               : bottom_out + (tables_ + 1) * tables_ / 2;
  }

  void forward(int mb) {
    mb_ = mb;
    phase_ = sim::Phase::Forward;
    const std::int64_t D = d_.embedding_dim;
    sim::OpNode lookup;
    lookup.name = name("embedding.lookup");
    lookup.kind = sim::OpKind::EmbeddingLookup;
    lookup.precision = d_.embedding_precision;
    lookup.bytes = static_cast<std::uint64_t>(batch_ * (hot_ + tables_) * D * emb_bytes_);
    OpVertex lk = add(std::move(lookup));
    OpVertex a2a = comm("embedding.alltoall", {lk});
    b_.pair(lk, a2a);
    std::int64_t in = d_.dense_features;
    for (std::size_t i = 0; i < d_.bottom_mlp.size(); ++i) {
      std::int64_t out = d_.bottom_mlp[i];
      gemm(fmt::format("bottom{}.fc", i), batch_, out, in);
      elementwise(fmt::format("bottom{}.relu", i), 2 * batch_ * out * act_bytes_);
      in = out;
    }
    if (d_.interaction == "dcn") {
      const std::int64_t d0 = interaction_dim_;
      elementwise("interaction.concat", 2 * batch_ * d0 * act_bytes_, {a2a});
      for (int l = 0; l < d_.dcn_layers; ++l) {
        gemm(fmt::format("dcn{}.v", l), batch_, d_.dcn_rank, d0);
        gemm(fmt::format("dcn{}.u", l), batch_, d0, d_.dcn_rank);
        elementwise(fmt::format("dcn{}.cross", l), 4 * batch_ * d0 * act_bytes_);
      }
    } else {
      // Pairwise dot products of the n embeddings and the bottom output (batched GEMM).
      const std::int64_t f = tables_ + 1;
      auto node = gemm_node(name("interaction.dot"), f, f, D, batch_, in_bytes_, act_bytes_);
      node.precision = precision_;
      add(std::move(node), {a2a});
    }
    in = interaction_dim_;
    for (std::size_t i = 0; i < d_.top_mlp.size(); ++i) {
      std::int64_t out = d_.top_mlp[i];
      gemm(fmt::format("top{}.fc", i), batch_, out, in);
      if (i + 1 < d_.top_mlp.size())
        elementwise(fmt::format("top{}.relu", i), 2 * batch_ * out * act_bytes_);
      in = out;
    }
    elementwise("loss", 2 * batch_ * 4);
  }

  void backward(int mb, bool last_mb) {
    mb_ = mb;
    phase_ = sim::Phase::Backward;
    register_ = last_mb;
    const std::int64_t D = d_.embedding_dim;
    elementwise("loss.bwd", 2 * batch_ * 4);
    for (int i = static_cast<int>(d_.top_mlp.size()) - 1; i >= 0; --i) {
      std::int64_t out = d_.top_mlp[i];
      std::int64_t in = i == 0 ? interaction_dim_ : d_.top_mlp[i - 1];
      if (i + 1 < static_cast<int>(d_.top_mlp.size()))
        elementwise(fmt::format("top{}.relu.bwd", i), 3 * batch_ * out * act_bytes_);
      gemm(fmt::format("top{}.fc.dgrad", i), batch_, in, out);
      wgrad(fmt::format("top{}.fc.wgrad", i), in, out, in * out + out);
    }
    if (d_.interaction == "dcn") {
      const std::int64_t d0 = interaction_dim_;
      for (int l = d_.dcn_layers - 1; l >= 0; --l) {
        elementwise(fmt::format("dcn{}.cross.bwd", l), 6 * batch_ * d0 * act_bytes_);
        gemm(fmt::format("dcn{}.u.dgrad", l), batch_, d_.dcn_rank, d0);
        wgrad(fmt::format("dcn{}.u.wgrad", l), d_.dcn_rank, d0, d_.dcn_rank * d0 + d0);
        gemm(fmt::format("dcn{}.v.dgrad", l), batch_, d0, d_.dcn_rank);
        wgrad(fmt::format("dcn{}.v.wgrad", l), d0, d_.dcn_rank, d0 * d_.dcn_rank);
      }
      elementwise("interaction.concat.bwd", 2 * batch_ * d0 * act_bytes_);
    } else {
      const std::int64_t f = tables_ + 1;
      auto node =
          gemm_node(name("interaction.dot.bwd"), f, D, f, 2 * batch_, in_bytes_, act_bytes_);
      node.precision = precision_;
      add(std::move(node));
    }
    OpVertex a2a = comm("embedding.alltoall.bwd", {b_.last(StreamKind::Compute)});
    // The bottom MLP's backward does not need the all-to-all: it overlaps it.
    for (int i = static_cast<int>(d_.bottom_mlp.size()) - 1; i >= 0; --i) {
      std::int64_t out = d_.bottom_mlp[i];
      std::int64_t in = i == 0 ? d_.dense_features : d_.bottom_mlp[i - 1];
      elementwise(fmt::format("bottom{}.relu.bwd", i), 3 * batch_ * out * act_bytes_);
      if (i > 0) gemm(fmt::format("bottom{}.fc.dgrad", i), batch_, in, out);
      wgrad(fmt::format("bottom{}.fc.wgrad", i), in, out, in * out + out);
    }
    sim::OpNode update;
    update.name = name("embedding.backward");
    update.kind = sim::OpKind::EmbeddingLookup;
    update.precision = d_.embedding_precision;
    update.bytes = static_cast<std::uint64_t>(batch_ * (tables_ + 2 * hot_) * D * emb_bytes_);
    OpVertex up = add(std::move(update), {a2a});
    b_.pair(a2a, up);
  }

 private:
  std::string name(const std::string& what) const {
    return fmt::format("mb{}.{}.{}", mb_, sim::to_string(phase_), what);
  }
  OpVertex add(sim::OpNode node, std::initializer_list<OpVertex> deps = {}) {
    node.phase = phase_;
    node.microbatch = mb_;
    return b_.add(std::move(node), deps);
  }
  OpVertex gemm(const std::string& what, std::int64_t m, std::int64_t n, std::int64_t k) {
    auto node = gemm_node(name(what), m, n, k, 1, in_bytes_, act_bytes_);
    node.precision = precision_;
    return add(std::move(node));
  }
  void wgrad(const std::string& what, std::int64_t in, std::int64_t out, std::int64_t params) {
    OpVertex v = gemm(what, in, out, batch_);
    if (register_) grads_.add(what, params, v, false);
  }
  OpVertex elementwise(const std::string& what, std::int64_t bytes,
                       std::initializer_list<OpVertex> deps = {}) {
    return add(elementwise_node(name(what), static_cast<std::uint64_t>(bytes)), deps);
  }
  OpVertex comm(const std::string& what, std::initializer_list<OpVertex> deps) {
    if (groups_.dp < 0) return kNoOp;
    auto node = collective_node(
        name(what), CollectiveOp::AllToAll,
        static_cast<std::uint64_t>(batch_ * tables_ * d_.embedding_dim * emb_bytes_), groups_.dp,
        StreamKind::ExpertComm);
    node.precision = d_.embedding_precision;
    return add(std::move(node), deps);
  }

  const DlrmSpec& d_;
  RankGroups groups_;
  RankBuilder& b_;
  GradientBuckets& grads_;
  std::int64_t batch_;
  sim::Precision precision_;
  int in_bytes_, act_bytes_, emb_bytes_;
  std::int64_t hot_ = 0, tables_ = 0, interaction_dim_ = 0;
  int mb_ = 0;
  sim::Phase phase_ = sim::Phase::Forward;
  bool register_ = false;
};

}  // namespace

void emit_dlrm_rank(const ModelSpec& spec, const ParallelLayout& layout, const RankGroups& groups,
                    RankBuilder& builder, GradSyncOptions sync) {
  const int microbatches = microbatches_per_step(spec);
  const std::int64_t local_batch = spec.training.global_batch / (layout.dp() * microbatches);
  GradientBuckets grads;
  DlrmEmitter emitter(spec, groups, builder, grads, local_batch);
  for (int mb = 0; mb < microbatches; ++mb) {
    emitter.forward(mb);
    emitter.backward(mb, mb == microbatches - 1);
  }
  // Dense weights stay fp32 with Adagrad in the MLPerf reference: read+write the weight and
  // the accumulator (4 x 4 bytes per parameter) besides reading the gradient.
  sync.optimizer_state_bytes = 16;
  sync.param_bytes = 4;
  grads.emit(builder, sync);
}

}  // namespace overlapsim::workloads
