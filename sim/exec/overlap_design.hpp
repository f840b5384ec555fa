#pragma once
// The seam for overlap designs. The executor owns dependencies, streams, rendezvous of
// collectives and accounting; a design decides how an op that is ready to run turns into
// time on the GPU and traffic on the network. `sequential` (what the graph expresses:
// each op on its own stream, a collective after the op that produces its input) is the
// SequentialDesign below. The other designs (decomposed, tilewise, fused, shaped) act on
// OpNode::pair_partner pairs: when the compute half of a pair starts they can run both
// halves together through the context (and the context grows the primitives they need,
// e.g. launching a fraction of a collective), finishing each op when its part is done.
#include <cstdint>
#include <functional>

#include "sim/profile/compute_model.hpp"
#include "sim/engine/simulator.hpp"
#include "sim/graph/op_graph.hpp"

namespace overlapsim::sim {

class ExecContext {
 public:
  virtual ~ExecContext() = default;
  virtual Simulator& simulator() = 0;
  virtual const ComputeModel& compute_model() const = 0;
  // `program` indexes StepGraph::ranks.
  virtual const OpNode& op(int program, OpVertex v) const = 0;
  virtual const OpGraph& graph(int program) const = 0;
  // The op's kind and whether it has a pair_partner, and compute_model().time_s(op): read
  // from the executor's compact per-op state (and times kept across the runs of one step
  // under one model) rather than from the op's OpNode, which is rarely in cache.
  virtual OpKind op_kind(int program, OpVertex v) const = 0;
  virtual bool op_paired(int program, OpVertex v) const = 0;
  virtual double op_time_s(int program, OpVertex v) = 0;
  // Whether the graph has an edge from -> to (boost::edge), from the executor's compact rows.
  virtual bool has_edge(int program, OpVertex from, OpVertex to) const = 0;

  // Holds the op's stream for duration_s from now, then finishes the op.
  virtual void run_for(int program, OpVertex v, double duration_s) = 0;
  // A Collective or SendRecv: joins the rendezvous with the other simulated members (or
  // the matching receive/send); the op finishes when its transfers have arrived.
  virtual void run_comm(int program, OpVertex v) = 0;

  // Primitives for designs that run an op in pieces (its inputs need not be done: the
  // design decides). compute_for holds the op's stream for duration_s (counted as busy
  // compute) and then calls on_done without finishing the op. launch_comm_part launches
  // `bytes` of collective op `v` as part `part` (1, 2, ...): it meets the same part of
  // the op on the other simulated members, runs on the network, then calls on_done.
  // finish_op finishes an op (its successors may start); an op finished before it
  // reached the head of its stream is skipped there.
  // The continuations are Callbacks (kept inline up to Callback::kInlineBytes), not
  // std::function, which allocates for captures over 16 bytes.
  virtual void compute_for(int program, OpVertex v, double duration_s, Callback on_done) = 0;
  virtual void launch_comm_part(int program, OpVertex v, std::uint64_t bytes, int part,
                                Callback on_done) = 0;
  virtual void finish_op(int program, OpVertex v) = 0;
  // Lets `consumer` (a successor of communication op `comm`) start without waiting for
  // `comm` to finish: a consumer pair's op runs group by group as the collective's parts
  // land, and the design gates each group on its part. `comm` still finishes when its last
  // part lands; its finish then no longer counts for `consumer`.
  virtual void release_consumer(int program, OpVertex comm, OpVertex consumer) = 0;
  // Time so far with any communication of the rank moving data (a collective, a part of
  // one, a send or receive), and the slowdown compute pays meanwhile
  // (ExecOptions::concurrent_comm_slowdown): a design's pieces pay it for communication
  // other than their own.
  virtual double comm_busy_s(int program) = 0;
  virtual double concurrent_comm_slowdown() const = 0;
};

class OverlapDesign {
 public:
  virtual ~OverlapDesign() = default;
  virtual const char* name() const = 0;
  // `v` has all its predecessors done and is at the head of its stream (SendRecv ops are
  // not serialised on a stream). The design must eventually finish it through `ctx`.
  virtual void start(ExecContext& ctx, int program, OpVertex v) = 0;
};

// T_op + T_coll: compute ops for their ComputeModel time, communication on the network.
class SequentialDesign final : public OverlapDesign {
 public:
  const char* name() const override { return "sequential"; }
  void start(ExecContext& ctx, int program, OpVertex v) override;
};

}  // namespace overlapsim::sim
