#pragma once
// What StepExecutor derives from a step before running it: each rank's program order per
// stream, its edges in compressed rows, each op's state at the start of a run, and the
// communicators' simulated members and background images. It depends only on the step,
// the network's host map and the images mode, so the design runs of one step share one
// (a 1,024-microbatch pipeline's layout took a few percent of each run to rebuild).
// Private to sim/exec and its users that run one step several times.
#include <array>
#include <cstdint>
#include <vector>

#include "sim/exec/comm_images.hpp"
#include "sim/graph/op_graph.hpp"
#include "sim/network/network_api.hpp"

namespace overlapsim::sim {
// Named rather than anonymous: StepExecutor::Impl, which has external linkage, holds these.
namespace executor_detail {

constexpr int kNumStreams = kNumStreamKinds;  // one stream per StreamKind

inline bool is_comm(OpKind k) { return k == OpKind::Collective || k == OpKind::SendRecv; }

struct OpState {
  int preds_left = 0;
  // The op's kind and stream, copied from its OpNode: finishing an op reads them for each
  // successor, and the graph's vertices are too large to stay in cache.
  std::uint8_t kind = 0;    // OpKind
  std::uint8_t stream = 0;  // StreamKind
  bool paired = false;      // OpNode::pair_partner >= 0
  double ready_s = -1;      // inputs done and head of its stream: handed to the design
  double launch_s = -1;     // communication: all parties present, data starts moving
  double start_s = -1;      // compute: began running
  double end_s = -1;
  int instance = -1;  // collectives: index among this rank's collectives on its group
  bool done = false;
  // Compute: the kernels the op runs as (a GEMM's batch, else OpNode::launches), at least 1.
  std::uint16_t kernels = 1;
  // Communication: the successor released before this op finished (release_consumer).
  std::int64_t released_to = -1;
};

// A rank graph's edges in compressed rows (successors of v: out_to[out_begin[v] ..
// out_begin[v + 1]), predecessors likewise, each in the graph's own order), read by the
// executor's hot paths instead of the adjacency list's per-vertex edge vectors.
struct EdgeRows {
  std::vector<std::uint32_t> out_begin, out_to, in_begin, in_from;
};

struct ProgramLayout {
  std::vector<OpState> initial_ops;  // every op as a run starts
  EdgeRows edges;
  // Program order: topological, lowest vertex index first among the ready; per stream,
  // without SendRecv ops (they are not serialised).
  std::array<std::vector<OpVertex>, kNumStreams> stream_order;
  std::size_t compute_ops = 0, comm_ops = 0;  // for reserving the interval lists
  // The host's program order (OpNode::host_s, host_sync): the ops the host issues inline,
  // those of the streams host_issues() names, in program order; host_position[v] is v's
  // index in it (kNotIssued for the others). Empty where no op carries a host time or a
  // sync: then the host always runs ahead.
  std::vector<OpVertex> host_order;
  std::vector<std::uint32_t> host_position;
};

inline constexpr std::uint32_t kNotIssued = static_cast<std::uint32_t>(-1);

// Streams whose ops the host issues inline, in program order: compute and the collectives
// a layer's code calls itself (tensor, context and expert parallelism). Not the DP buckets
// (issued by hooks as gradients complete, which the graph lists last) nor the pipeline's
// sends (matched as NCCL groups).
inline bool host_issues(StreamKind s) {
  return s == StreamKind::Compute || s == StreamKind::TensorComm || s == StreamKind::ContextComm ||
         s == StreamKind::ExpertComm || s == StreamKind::ExpertNodeComm;
}

}  // namespace executor_detail

class StepLayout {
 public:
  // Throws std::invalid_argument for malformed steps (bad ranks, groups, cycles).
  StepLayout(const StepGraph& step, const NetworkApi& net, BackgroundImages images);

  const StepGraph& step() const { return *step_; }
  BackgroundImages images() const { return images_; }
  const CommImagePlans& plans() const { return plans_; }
  // Per StepGraph::groups entry: whether its ranks span more than one host.
  bool group_spans_hosts(int group) const {
    return group_spans_hosts_[static_cast<std::size_t>(group)] != 0;
  }
  // Parallel to StepGraph::ranks.
  const executor_detail::ProgramLayout& program(std::size_t p) const { return programs_[p]; }

 private:
  const StepGraph* step_;
  BackgroundImages images_;
  CommImagePlans plans_;
  std::vector<char> group_spans_hosts_;
  std::vector<executor_detail::ProgramLayout> programs_;
};

}  // namespace overlapsim::sim
