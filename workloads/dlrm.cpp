#include "workloads/dlrm.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "workloads/generator.hpp"

namespace overlapsim::workloads {

using sim::CollectiveOp;
using sim::StreamKind;

DlrmShardPlan plan_dlrm_sharding(const DlrmSpec& d, int world_size) {
  DlrmShardPlan plan;
  const int W = std::max(world_size, 1);
  for (int i = 0; i < static_cast<int>(d.tables.size()); ++i) {
    const auto& t = d.tables[static_cast<std::size_t>(i)];
    if (t.rows <= d.data_parallel_max_rows) {
      plan.data_parallel.push_back(i);
      plan.dp_table_rows += t.rows;
      plan.dp_hotness += t.hotness;
    } else {
      plan.model_parallel.push_back(i);
      plan.mp_hotness += t.hotness;
    }
  }
  double mp_rows = 0;
  for (int i : plan.model_parallel) mp_rows += static_cast<double>(d.tables[i].rows);
  const double n_mp = static_cast<double>(plan.model_parallel.size());
  switch (d.sharding) {
    case TableSharding::Balanced:
      plan.mp_rows_per_sample = static_cast<double>(plan.mp_hotness) / W;
      plan.mp_pooled_per_sample = n_mp / W;
      plan.mp_table_rows = mp_rows / W;
      break;
    case TableSharding::RowWise:
      plan.mp_rows_per_sample = static_cast<double>(plan.mp_hotness) / W;
      plan.mp_pooled_per_sample = n_mp;  // a partial pool of every table for every sample
      plan.mp_table_rows = mp_rows / W;
      break;
    case TableSharding::TableWise: {
      std::vector<int> order = plan.model_parallel;
      std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
        const auto &ta = d.tables[a], &tb = d.tables[b];
        if (ta.hotness != tb.hotness) return ta.hotness > tb.hotness;
        return ta.rows > tb.rows;
      });
      std::vector<std::int64_t> lookups(W, 0), rows(W, 0);
      plan.tables_of_rank.assign(W, {});
      for (int i : order) {
        int best = 0;
        for (int r = 1; r < W; ++r)
          if (lookups[r] < lookups[best] || (lookups[r] == lookups[best] && rows[r] < rows[best]))
            best = r;
        lookups[best] += d.tables[i].hotness;
        rows[best] += d.tables[i].rows;
        plan.tables_of_rank[best].push_back(i);
      }
      for (auto& list : plan.tables_of_rank) std::sort(list.begin(), list.end());
      int busiest = 0;
      for (int r = 1; r < W; ++r)
        if (lookups[r] > lookups[busiest] ||
            (lookups[r] == lookups[busiest] &&
             plan.tables_of_rank[r].size() > plan.tables_of_rank[busiest].size()))
          busiest = r;
      plan.busiest_rank = busiest;
      plan.mp_rows_per_sample = static_cast<double>(lookups[busiest]);
      plan.mp_pooled_per_sample = static_cast<double>(plan.tables_of_rank[busiest].size());
      plan.mp_table_rows = static_cast<double>(rows[busiest]);
      break;
    }
    case TableSharding::MemoryBalanced: {
      // Python's sorted(zip(sizes, ids), reverse=True): larger first, ties the later table
      // first. Every table has the same width here, so size orders as rows.
      std::vector<int> order = plan.model_parallel;
      std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
        if (d.tables[a].rows != d.tables[b].rows) return d.tables[a].rows > d.tables[b].rows;
        return a > b;
      });
      const int n = static_cast<int>(order.size());
      plan.tables_of_rank.assign(W, {});
      for (int r = 0; r < W; ++r) {
        for (int k = r; k < n; k += 2 * W) plan.tables_of_rank[r].push_back(order[k]);
        for (int k = 2 * W - 1 - r; k < n; k += 2 * W) plan.tables_of_rank[r].push_back(order[k]);
        std::sort(plan.tables_of_rank[r].begin(), plan.tables_of_rank[r].end());
      }
      std::vector<std::int64_t> lookups(W, 0), rows(W, 0);
      for (int r = 0; r < W; ++r)
        for (int i : plan.tables_of_rank[r]) {
          lookups[r] += d.tables[i].hotness;
          rows[r] += d.tables[i].rows;
        }
      int busiest = 0;
      for (int r = 1; r < W; ++r)
        if (lookups[r] > lookups[busiest] ||
            (lookups[r] == lookups[busiest] && rows[r] > rows[busiest]))
          busiest = r;
      plan.busiest_rank = busiest;
      plan.mp_rows_per_sample = static_cast<double>(lookups[busiest]);
      plan.mp_pooled_per_sample = static_cast<double>(plan.tables_of_rank[busiest].size());
      plan.mp_table_rows = static_cast<double>(*std::max_element(rows.begin(), rows.end()));
      break;
    }
  }
  return plan;
}

double expected_unique_rows(std::int64_t rows, double draws, double alpha) {
  if (rows <= 0 || draws <= 0) return 0;
  const double n = static_cast<double>(rows);
  const double gamma = 1 - alpha;
  // Share of the draws below y (1 <= y <= n + 1).
  auto cdf = [&](double y) {
    if (std::abs(gamma) < 1e-12) return std::log(y) / std::log(n + 1);
    return (std::pow(y, gamma) - 1) / (std::pow(n + 1, gamma) - 1);
  };
  // Probability that at least one of the draws hits a row of probability p.
  auto hit = [&](double p) {
    if (p <= 0) return 0.0;
    if (p >= 1) return 1.0;
    return -std::expm1(draws * std::log1p(-p));
  };
  const std::int64_t exact = std::min<std::int64_t>(rows, 65536);
  double unique = 0;
  for (std::int64_t k = 0; k < exact; ++k) {
    const double y = static_cast<double>(k) + 1;
    unique += hit(cdf(y + 1) - cdf(y));
  }
  // Row k is drawn with probability cdf(k + 2) - cdf(k + 1), decreasing in k: beyond the
  // exact head, blocks [a, b) of rows with b ~ 1.02 a share their mean probability.
  double a = static_cast<double>(exact);
  while (a < n) {
    const double b = std::min(n, std::max(a + 1, std::floor(a * 1.02)));
    const double count = b - a;
    unique += count * hit((cdf(b + 1) - cdf(a + 1)) / count);
    a = b;
  }
  return std::min(unique, std::min(n, draws));
}

double mp_unique_rows_per_step(const DlrmSpec& d, const DlrmShardPlan& plan,
                               std::int64_t global_batch, int world_size) {
  const double B = static_cast<double>(global_batch);
  auto table_unique = [&](int i) {
    const auto& t = d.tables[static_cast<std::size_t>(i)];
    return expected_unique_rows(t.rows, B * t.hotness, d.index_power_law_alpha);
  };
  double unique = 0;
  if (!plan.tables_of_rank.empty()) {
    for (int i : plan.tables_of_rank[static_cast<std::size_t>(plan.busiest_rank)])
      unique += table_unique(i);
    return unique;
  }
  for (int i : plan.model_parallel) unique += table_unique(i);
  return unique / std::max(world_size, 1);
}

namespace {

class DlrmEmitter {
 public:
  DlrmEmitter(const ModelSpec& spec, const DlrmShardPlan& plan, const RankGroups& groups,
              RankBuilder& b, GradientBuckets& grads, std::int64_t local_batch, int world_size)
      : d_(spec.dlrm),
        plan_(plan),
        groups_(groups),
        b_(b),
        grads_(grads),
        batch_(local_batch),
        global_batch_(local_batch * world_size),
        precision_(spec.training.precision),
        in_bytes_(sim::bytes_per_element(spec.training.precision)),
        act_bytes_(spec.training.precision == sim::Precision::FP32 ? 4 : 2),
        emb_bytes_(sim::bytes_per_element(spec.dlrm.embedding_precision)),
        exchange_bytes_(sim::bytes_per_element(spec.dlrm.exchange_type())),
        tf_ops_(spec.dlrm.embedding_ops == EmbeddingOps::TensorFlow),
        host_launch_s_(spec.training.host_launch_time_s) {
    tables_ = static_cast<std::int64_t>(d_.tables.size());
    if (tf_ops_)
      unique_rows_ = mp_unique_rows_per_step(d_, plan_, global_batch_, world_size);
    dp_tables_ = static_cast<std::int64_t>(plan_.data_parallel.size());
    row_wise_ = d_.sharding == TableSharding::RowWise;
    const std::int64_t bottom_out = d_.bottom_mlp.back();
    interaction_dim_ = d_.interaction == "dcn" ? bottom_out + tables_ * d_.embedding_dim
                                               : bottom_out + (tables_ + 1) * tables_ / 2;
  }

  void forward(int mb) {
    mb_ = mb;
    phase_ = sim::Phase::Forward;
    const std::int64_t D = d_.embedding_dim;
    OpVertex a2a = kNoOp, dp_lookup = kNoOp;
    if (!plan_.model_parallel.empty()) {
      OpVertex lk = embedding_op("embedding.lookup",
                                 mp_rows(plan_.mp_rows_per_sample + plan_.mp_pooled_per_sample));
      if (tf_ops_) {
        // Distributed Embeddings concatenates the local outputs into the send buffer and
        // casts them to the exchange type (one pass once XLA fuses the concat and cast).
        lk = elementwise("embedding.pack", static_cast<std::int64_t>(
                                               exchange_rows_bytes(plan_.mp_pooled_per_sample)),
                         {lk});
      }
      a2a = exchange(true, {lk});
      b_.pair(lk, a2a);
    }
    if (dp_tables_ > 0)
      dp_lookup = embedding_op("embedding.dp_lookup", rows_bytes(batch_ * (plan_.dp_hotness +
                                                                            dp_tables_)));
    std::int64_t in = d_.dense_features;
    for (std::size_t i = 0; i < d_.bottom_mlp.size(); ++i) {
      std::int64_t out = d_.bottom_mlp[i];
      gemm(fmt::format("bottom{}.fc", i), batch_, out, in);
      elementwise(fmt::format("bottom{}.relu", i), 2 * batch_ * out * act_bytes_);
      in = out;
    }
    if (d_.interaction == "dcn") {
      const std::int64_t d0 = interaction_dim_;
      elementwise("interaction.concat", 2 * batch_ * d0 * act_bytes_, {a2a, dp_lookup});
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
      add(std::move(node), {a2a, dp_lookup});
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
    OpVertex a2a = plan_.model_parallel.empty()
                       ? kNoOp
                       : exchange(false, {b_.last(StreamKind::Compute)});
    if (dp_tables_ > 0) {
      // Data-parallel tables: scatter the pooled gradients into a dense gradient buffer of
      // the tables (zeroed, then rows read-modified-written), reduced with the dense grads.
      OpVertex dp = embedding_op(
          "embedding.dp_backward",
          rows_bytes(batch_ * (dp_tables_ + 2 * plan_.dp_hotness)) +
              static_cast<std::uint64_t>(plan_.dp_table_rows * D) * 4);
      if (register_)
        grads_.add("embedding.dp_tables", plan_.dp_table_rows * D, dp, false);
    }
    // The bottom MLP's backward does not need the all-to-all: it overlaps it.
    for (int i = static_cast<int>(d_.bottom_mlp.size()) - 1; i >= 0; --i) {
      std::int64_t out = d_.bottom_mlp[i];
      std::int64_t in = i == 0 ? d_.dense_features : d_.bottom_mlp[i - 1];
      elementwise(fmt::format("bottom{}.relu.bwd", i), 3 * batch_ * out * act_bytes_);
      if (i > 0) gemm(fmt::format("bottom{}.fc.dgrad", i), batch_, in, out);
      wgrad(fmt::format("bottom{}.fc.wgrad", i), in, out, in * out + out);
    }
    if (!plan_.model_parallel.empty() && tf_ops_) {
      tensorflow_sparse_update(a2a);
    } else if (!plan_.model_parallel.empty()) {
      // Read the pooled gradients; read-modify-write each touched row, and with lazy Adam
      // its m and v as well.
      const double rmw = d_.optimizer == "adam" ? 6 : 2;
      OpVertex up = embedding_op(
          "embedding.backward",
          mp_rows(plan_.mp_pooled_per_sample + rmw * plan_.mp_rows_per_sample), {a2a});
      b_.pair(a2a, up);
    }
  }

 private:
  std::string name(const std::string& what) const {
    return fmt::format("mb{}.{}.{}", mb_, sim::to_string(phase_), what);
  }
  OpVertex add(sim::OpNode node, std::initializer_list<OpVertex> deps = {}) {
    node.phase = phase_;
    node.microbatch = mb_;
    node.host_s = host_launch_s_;  // one launch (docs/simulate.md, "The host")
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
  // embedding_ops: tensorflow. The received gradients become the tables' IndexedSlices
  // (cast back, sliced per table, divided by W and loss-scale unscaled: one pass once XLA
  // fuses them), Keras deduplicates them (unique, unsorted segment sum into the distinct
  // rows) and the optimizer updates the distinct rows with separate ops.
  void tensorflow_sparse_update(OpVertex a2a) {
    OpVertex unpack = elementwise(
        "embedding.unpack",
        static_cast<std::int64_t>(exchange_rows_bytes(plan_.mp_pooled_per_sample)), {a2a});
    b_.pair(a2a, unpack);
    const double U = unique_rows_;
    embedding_op("embedding.dedup",
                 mp_rows(plan_.mp_rows_per_sample) + rows_bytes(2 * U));
    // tfa LazyAdam: gather m, v (2 + 2), the fused update (read m, v, g; write m_t, v_t
    // and the step: 6), scatter m, v (2 + 2), scatter-sub the rows (3). Adagrad: one
    // sparse-apply kernel reading the gradient and read-modify-writing accumulator and row.
    const double passes = d_.optimizer == "adam" ? 17 : 5;
    embedding_op("embedding.backward",
                 static_cast<std::uint64_t>(std::llround(passes * U * d_.embedding_dim * 4)));
  }
  // Bytes of `per_sample` pooled rows of every global sample in the embedding type and
  // again in the exchange type (read one, write the other).
  std::uint64_t exchange_rows_bytes(double per_sample) const {
    const double rows = static_cast<double>(global_batch_) * per_sample;
    return static_cast<std::uint64_t>(
        std::llround(rows * d_.embedding_dim * (emb_bytes_ + exchange_bytes_)));
  }
  // Bytes of `rows` embedding rows.
  std::uint64_t rows_bytes(double rows) const {
    return static_cast<std::uint64_t>(std::llround(rows * d_.embedding_dim * emb_bytes_));
  }
  // Bytes of `per_sample` rows for every sample of the global batch.
  std::uint64_t mp_rows(double per_sample) const {
    return rows_bytes(static_cast<double>(global_batch_) * per_sample);
  }
  OpVertex embedding_op(const std::string& what, std::uint64_t bytes,
                        std::initializer_list<OpVertex> deps = {}) {
    sim::OpNode node;
    node.name = name(what);
    node.kind = sim::OpKind::EmbeddingLookup;
    node.precision = d_.embedding_precision;
    node.bytes = bytes;
    return add(std::move(node), deps);
  }
  // The model-parallel tables' pooled rows to (forward) or their gradients from (backward)
  // the ranks that own the samples: all-to-all, or for row_wise reduce-scatter of the
  // partial pools and all-gather of their gradients.
  OpVertex exchange(bool forward, std::initializer_list<OpVertex> deps) {
    if (groups_.dp < 0) return kNoOp;
    CollectiveOp op = CollectiveOp::AllToAll;
    const char* what = forward ? "embedding.alltoall" : "embedding.alltoall.bwd";
    if (row_wise_) {
      op = forward ? CollectiveOp::ReduceScatter : CollectiveOp::AllGather;
      what = forward ? "embedding.reducescatter" : "embedding.allgather.bwd";
    }
    const auto bytes = static_cast<std::uint64_t>(
        std::llround(static_cast<double>(global_batch_) * plan_.mp_pooled_per_sample *
                     d_.embedding_dim * exchange_bytes_));
    auto node = collective_node(name(what), op, bytes, groups_.dp, StreamKind::ExpertComm);
    node.precision = d_.exchange_type();
    return add(std::move(node), deps);
  }

  const DlrmSpec& d_;
  const DlrmShardPlan& plan_;
  RankGroups groups_;
  RankBuilder& b_;
  GradientBuckets& grads_;
  std::int64_t batch_, global_batch_;
  sim::Precision precision_;
  int in_bytes_, act_bytes_, emb_bytes_, exchange_bytes_;
  bool tf_ops_ = false;
  double host_launch_s_ = 0;
  double unique_rows_ = 0;  // tensorflow ops: distinct model-parallel rows per step
  std::int64_t tables_ = 0, dp_tables_ = 0, interaction_dim_ = 0;
  bool row_wise_ = false;
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
  const DlrmShardPlan plan = plan_dlrm_sharding(spec.dlrm, layout.dp());
  DlrmEmitter emitter(spec, plan, groups, builder, grads, local_batch, layout.dp());
  for (int mb = 0; mb < microbatches; ++mb) {
    emitter.forward(mb);
    emitter.backward(mb, mb == microbatches - 1);
  }
  // Dense weights stay fp32: Adagrad (the MLPerf reference) reads and writes the weight and
  // the accumulator (4 x 4 bytes per parameter), Adam the weight, m and v (6 x 4), besides
  // reading the gradient.
  sync.optimizer_state_bytes = spec.dlrm.optimizer == "adam" ? 24 : 16;
  // embedding_ops tensorflow with fp16: Keras' LossScaleOptimizer.get_unscaled_gradients
  // multiplies every dense gradient by 1/scale in its own pass between the all-reduce and
  // the optimizer (DeepLearningExamples nn/trainer.py _weight_update): read and write 4.
  if (spec.dlrm.embedding_ops == EmbeddingOps::TensorFlow &&
      spec.training.precision == sim::Precision::FP16)
    sync.optimizer_state_bytes += 8;
  sync.param_bytes = 4;
  grads.emit(builder, sync);
}

}  // namespace overlapsim::workloads
