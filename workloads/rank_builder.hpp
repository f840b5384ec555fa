#pragma once
// Appends ops to one rank's operation graph in program order. Each op gets an edge from
// the previous op on its stream (a GPU stream runs in order) plus the data dependencies
// the caller names; pair() marks an (op, collective) pair for the overlap designs.
#include <array>
#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/graph/op_graph.hpp"

namespace overlapsim::workloads {

using sim::OpVertex;
inline constexpr OpVertex kNoOp = static_cast<OpVertex>(-1);

// The operations a whole step graph may still add: a step of absurd size (10^9
// microbatches, layers or chunks) stops while it is generated, before its graph alone
// exhausts memory, instead of after.
struct OpBudget {
  std::uint64_t ops_left = 0;
};

// Thrown when a step's graph outgrows its OpBudget; the message names the budget, and the
// caller adds the model file.
class StepGraphTooLarge : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class RankBuilder {
 public:
  // `budget` (optional, shared by every rank of a step) is charged one per op added.
  explicit RankBuilder(sim::OpGraph& graph, OpBudget* budget = nullptr)
      : graph_(graph), budget_(budget) {
    last_.fill(kNoOp);
  }

  // Adds `node` after the last op on its stream and after every op in `deps` (kNoOp
  // entries are skipped). Returns the new vertex.
  OpVertex add(sim::OpNode node, std::initializer_list<OpVertex> deps = {});
  // The same without the edge from the previous op on the stream: for transfers that
  // proceed concurrently, like the sends/receives of an NCCL group.
  OpVertex add_unchained(sim::OpNode node, std::initializer_list<OpVertex> deps = {});
  void depend(OpVertex after, OpVertex before);  // `after` waits for `before`
  void pair(OpVertex a, OpVertex b);             // a.pair_partner = b and back
  OpVertex last(sim::StreamKind stream) const { return last_[static_cast<int>(stream)]; }
  // The most recently added op on any stream (program order).
  OpVertex last_any() const { return last_any_; }
  // The next op added on the Compute stream also waits for `v` (a blocking transfer in
  // program order, e.g. a pipeline send/receive); a later call replaces an unused one.
  void fence_compute(OpVertex v) { fence_ = v; }
  // The same for inputs that add up rather than replace (e.g. a layer's parameter
  // all-gather besides the pipeline receive its first op waits for).
  void wait_before_next_compute(OpVertex v) {
    if (v != kNoOp) waits_.push_back(v);
  }

  sim::OpGraph& graph() { return graph_; }
  const sim::OpNode& node(OpVertex v) const { return graph_[v]; }

 private:
  sim::OpGraph& graph_;
  OpBudget* budget_ = nullptr;
  std::array<OpVertex, sim::kNumStreamKinds> last_{};
  OpVertex last_any_ = kNoOp;
  OpVertex fence_ = kNoOp;
  std::vector<OpVertex> waits_;
};

// Node factories: shape, FLOPs and bytes filled in by the conventions of op_graph.hpp.
// `in_bytes`/`out_bytes` are bytes per element of the inputs and of the output.
sim::OpNode gemm_node(std::string name, std::int64_t m, std::int64_t n, std::int64_t k,
                      std::int64_t batch, int in_bytes, int out_bytes);
sim::OpNode elementwise_node(std::string name, std::uint64_t bytes);
sim::OpNode collective_node(std::string name, sim::CollectiveOp op, std::uint64_t bytes, int group,
                            sim::StreamKind stream);
sim::OpNode sendrecv_node(std::string name, bool is_send, int peer_rank, std::uint64_t bytes,
                          int group);

}  // namespace overlapsim::workloads
