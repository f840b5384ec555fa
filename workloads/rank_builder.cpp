#include "workloads/rank_builder.hpp"

#include <stdexcept>
#include <utility>

namespace overlapsim::workloads {

namespace {
bool node_stream_is_compute(sim::StreamKind s) { return s == sim::StreamKind::Compute; }
}  // namespace

OpVertex RankBuilder::add(sim::OpNode node, std::initializer_list<OpVertex> deps) {
  const OpVertex previous = last_[static_cast<int>(node.stream)];
  OpVertex v = add_unchained(std::move(node), deps);
  depend(v, previous);
  return v;
}

OpVertex RankBuilder::add_unchained(sim::OpNode node, std::initializer_list<OpVertex> deps) {
  const int stream = static_cast<int>(node.stream);
  if (budget_ != nullptr) {
    if (budget_->ops_left == 0)
      throw StepGraphTooLarge(
          "the step graph outgrew the operations that fit in 80% of this machine's available "
          "memory (expected fewer microbatches per step, layers or virtual stages)");
    --budget_->ops_left;
  }
  OpVertex v = boost::add_vertex(std::move(node), graph_);
  for (OpVertex d : deps) depend(v, d);
  if (node_stream_is_compute(graph_[v].stream)) {
    if (fence_ != kNoOp) depend(v, fence_);
    fence_ = kNoOp;
    for (OpVertex w : waits_) depend(v, w);
    waits_.clear();
  }
  last_[stream] = v;
  last_any_ = v;
  return v;
}

void RankBuilder::depend(OpVertex after, OpVertex before) {
  if (before == kNoOp || before == after) return;
  if (before > after) throw std::logic_error("rank graph: dependency on a later op");
  // Whether the edge exists, read off `after`'s in-edges: `after` is the op being added, so
  // its few in-edges are in cache, where boost::edge would scan `before`'s out-edges (an
  // older op's, often a cache miss).
  for (auto e : boost::make_iterator_range(boost::in_edges(after, graph_)))
    if (boost::source(e, graph_) == before) return;
  boost::add_edge(before, after, graph_);
}

void RankBuilder::pair(OpVertex a, OpVertex b) {
  if (a == kNoOp || b == kNoOp) return;
  graph_[a].pair_partner = static_cast<int>(b);
  graph_[b].pair_partner = static_cast<int>(a);
}

sim::OpNode gemm_node(std::string name, std::int64_t m, std::int64_t n, std::int64_t k,
                      std::int64_t batch, int in_bytes, int out_bytes) {
  sim::OpNode op;
  op.name = std::move(name);
  op.kind = n == 1 ? sim::OpKind::Gemv : sim::OpKind::Gemm;
  op.gemm = {m, n, k, batch};
  op.flops = 2.0 * static_cast<double>(batch) * m * n * k;
  op.bytes =
      static_cast<std::uint64_t>(batch) * (static_cast<std::uint64_t>(m * k + k * n) * in_bytes +
                                           static_cast<std::uint64_t>(m * n) * out_bytes);
  return op;
}

sim::OpNode elementwise_node(std::string name, std::uint64_t bytes) {
  sim::OpNode op;
  op.name = std::move(name);
  op.kind = sim::OpKind::Elementwise;
  op.bytes = bytes;
  return op;
}

sim::OpNode collective_node(std::string name, sim::CollectiveOp coll, std::uint64_t bytes,
                            int group, sim::StreamKind stream) {
  sim::OpNode op;
  op.name = std::move(name);
  op.kind = sim::OpKind::Collective;
  op.stream = stream;
  op.collective = coll;
  op.comm_bytes = bytes;
  op.comm_group = group;
  return op;
}

sim::OpNode sendrecv_node(std::string name, bool is_send, int peer_rank, std::uint64_t bytes,
                          int group) {
  sim::OpNode op = collective_node(std::move(name), sim::CollectiveOp::SendRecv, bytes, group,
                                   sim::StreamKind::PipelineComm);
  op.kind = sim::OpKind::SendRecv;
  op.is_send = is_send;
  op.peer_rank = peer_rank;
  return op;
}

}  // namespace overlapsim::workloads
