#pragma once
// StepExecutor's state, shared by step_executor.cpp (program order, streams, finishing
// ops, results) and step_executor_comm.cpp (rendezvous and launch of communication).
// Private to sim/exec.
#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "sim/exec/intervals.hpp"
#include "sim/exec/step_executor.hpp"
#include "sim/exec/step_layout.hpp"

namespace overlapsim::sim {
// Named rather than anonymous: StepExecutor::Impl, which has external linkage, holds these.
namespace executor_detail {

inline constexpr OpVertex kNoHostBlock = static_cast<OpVertex>(-1);
inline constexpr OpVertex kNoOp = static_cast<OpVertex>(-1);

struct StreamQueue {
  const std::vector<OpVertex>* order = nullptr;  // the layout's program order
  std::size_t next = 0;
  bool busy = false;
};

struct ProgramState {
  const RankProgram* program = nullptr;
  std::vector<OpState> ops;
  const EdgeRows* edges = nullptr;  // the layout's
  std::array<StreamQueue, kNumStreams> streams;
  std::vector<Interval> compute_intervals;
  std::vector<Interval> comm_intervals;
  double last_compute_end_s = 0;
  // Communication of this rank moving data: how many, time accumulated, since when (< 0:
  // none), for ExecOptions::concurrent_comm_slowdown.
  int comm_in_flight = 0;
  double comm_busy_accum_s = 0, comm_busy_since_s = -1;
  std::size_t remaining = 0;
  bool record = false;
  RankResult result;
  // The host issuing the ops of the layout's host_order in program order (OpNode::host_s,
  // host_sync); off (host_gated false) where no op carries a host time or a sync.
  bool host_gated = false;
  const std::vector<OpVertex>* host_order = nullptr;          // the layout's
  const std::vector<std::uint32_t>* host_position = nullptr;  // the layout's
  std::size_t host_next = 0;                // index in host_order of the next op to issue
  double host_clock_s = 0;                  // when the host issued the last op it issued
  OpVertex host_blocked_on = kNoHostBlock;  // a host_sync op the host waits for
  std::vector<double> host_issue_s;         // per vertex: when the host issued it (-1: not yet)
  // Per stream: a try_head scheduled at this time (-1: none).
  std::array<double, kNumStreams> host_wake_s{};
  // The GEMM or memory-bound op run_for runs on the compute stream (kNoOp: none), when it
  // started, its kernel time alone, and the communication ops waiting for its end to find
  // SMs (ExecOptions::comm_waits_for_gemm_kernel, comm_waits_for_memory_kernel).
  OpVertex sm_holder = kNoOp;
  bool sm_holder_is_gemm = false;  // else memory-bound: high-priority communication goes first
  double sm_holder_start_s = 0, sm_holder_kernel_s = 0, sm_holder_alone_end_s = 0;
  std::vector<OpVertex> waiting_for_sms;
  // Collective work lost to memory-bound ops (ExecOptions::collective_memory_slowdown):
  // accumulated up to memory_since_s, then at memory_rate (1 - 1/s of the compute segment
  // begun then; 0: not memory-bound) until memory_until_s, the segment's end.
  double memory_loss_accum_s = 0, memory_since_s = 0, memory_rate = 0, memory_until_s = 0;
  // ExecOptions::period_chunks: the ops that begin the marked forward chunks, how many of
  // them have begun, and the rank's times then.
  OpVertex period_ops[2] = {kNoOp, kNoOp};
  int period_marks = 0;
  RankResult period_at[2];
};

// Members of one collective launch (a whole op, or one part of it) gathered so far.
struct RendezvousMember {
  int program = 0;
  OpVertex op = 0;
  std::uint64_t bytes = 0;
  Callback on_done;
};
struct Rendezvous {
  std::vector<RendezvousMember> members;
};
// A met collective in flight: its members and when it met.
struct Launch {
  Rendezvous rv;
  double t = 0;
  // Per member, its memory-bound loss (ProgramState::memory_loss_s) when the transfer
  // started or was last extended, and how many extensions ran
  // (ExecOptions::collective_memory_slowdown).
  std::vector<double> memory_loss0_s;
  int extensions = 0;
};

// A send and its receive, matched by (source representative, destination representative,
// sequence number).
struct P2pMatch {
  int send_program = -1, recv_program = -1;
  OpVertex send_op = 0, recv_op = 0;
};
// A met send in flight: its transfers not yet arrived (one, or two where folding made the
// receiver's differ) and when it met.
struct P2pLaunch {
  P2pMatch match;
  int left = 0;
  double t = 0;
};

}  // namespace executor_detail

struct StepExecutor::Impl final : ExecContext {
  using OpState = executor_detail::OpState;
  using StreamQueue = executor_detail::StreamQueue;
  using ProgramState = executor_detail::ProgramState;
  using Rendezvous = executor_detail::Rendezvous;
  using Launch = executor_detail::Launch;
  using RendezvousMember = executor_detail::RendezvousMember;
  using P2pMatch = executor_detail::P2pMatch;
  using P2pLaunch = executor_detail::P2pLaunch;
  using EdgeRows = executor_detail::EdgeRows;

  Impl(const StepGraph& s, const ComputeModel& c, NetworkApi& n, ExecOptions o,
       std::shared_ptr<const StepLayout> l)
      : step(s), compute(c), net(n), options(std::move(o)), layout(std::move(l)) {}

  const StepGraph& step;
  const ComputeModel& compute;
  NetworkApi& net;
  ExecOptions options;
  std::shared_ptr<const StepLayout> layout;
  CollectiveLauncher launcher;
  StepExecutor::BackgroundLauncher background_launcher;
  // Requests reused from launch to launch (their rank lists keep their capacity): a
  // launch's request, and the images of one launch (the first num_images of images_scratch).
  CollectiveRequest request_scratch;
  std::vector<CollectiveRequest> images_scratch;
  std::size_t num_images = 0;
  // A request at images_scratch[num_images++] with `like`'s op, algorithm, bytes, root and
  // peer; the caller sets its ranks.
  CollectiveRequest& next_image(const CollectiveRequest& like);
  void launch_images();             // the num_images requests, then none
  std::vector<ProgramState> programs;
  OverlapDesign* design = nullptr;
  double t0_s = 0;
  bool launching = false;  // a launcher may complete synchronously; defer then
  std::uint64_t collectives = 0, background = 0;
  std::unordered_map<std::uint64_t, Rendezvous> pending_collectives;  // key: rendezvous_key
  // Met collectives in flight, in slots reused from launch to launch (a deque: a member's
  // continuation may launch others while its slot is read). The completion captures the
  // executor and the slot only, small enough for std::function to keep without allocating.
  std::deque<Launch> launches;
  std::vector<std::uint32_t> free_launches;
  std::uint32_t take_launch();
  void finish_launch(std::uint32_t slot);
  // The same for sends.
  std::deque<P2pLaunch> p2p_launches;
  std::vector<std::uint32_t> free_p2p_launches;
  std::map<std::pair<int, int>, int> sends_issued, recvs_issued;
  std::map<std::tuple<int, int, int>, P2pMatch> pending_p2p;
  Timeline timeline;
  double last_sample_s = -1;

  // ExecContext
  Simulator& simulator() override { return net.simulator(); }
  const ComputeModel& compute_model() const override { return compute; }
  const OpNode& op(int p, OpVertex v) const override { return programs[p].program->graph[v]; }
  const OpGraph& graph(int p) const override { return programs[p].program->graph; }
  OpKind op_kind(int p, OpVertex v) const override {
    return static_cast<OpKind>(programs[p].ops[v].kind);
  }
  bool op_paired(int p, OpVertex v) const override { return programs[p].ops[v].paired; }
  double op_time_s(int p, OpVertex v) override;
  bool has_edge(int p, OpVertex from, OpVertex to) const override {
    const EdgeRows& rows = *programs[p].edges;
    for (std::uint32_t i = rows.out_begin[from]; i < rows.out_begin[from + 1]; ++i)
      if (rows.out_to[i] == to) return true;
    return false;
  }
  std::shared_ptr<OpTimeMemo> op_times;  // null: every time from the model
  void run_for(int p, OpVertex v, double duration_s) override;
  void run_comm(int p, OpVertex v) override;
  // run_comm's work once the op may start (ExecOptions::comm_waits_for_gemm_kernel).
  void start_comm(int p, OpVertex v);
  // When communication op v of rank p could find SMs: now, a later kernel boundary of the
  // running GEMM or (for a default-priority op) memory-bound op, or infinity for its end
  // (not yet known).
  double sms_free_at(int p, OpVertex v);
  // Collective work lost on rank p to memory-bound ops so far, in seconds.
  double memory_loss_s(int p);
  // Rank p's compute stream runs a segment costing collectives `rate` (1 - 1/s; 0: not
  // memory-bound) from now until until_s.
  void set_memory_rate(int p, double rate, double until_s);
  void compute_for(int p, OpVertex v, double duration_s, Callback on_done) override;
  // compute_for's work, with the continuation scheduled as given (the executor's own
  // callers pass lambdas, kept inline in the event rather than in a std::function).
  void begin_compute(int p, OpVertex v, double duration_s, Simulator::Callback on_done);
  void mark_period(ProgramState& ps);
  void launch_comm_part(int p, OpVertex v, std::uint64_t bytes, int part,
                        Callback on_done) override;
  void finish_op(int p, OpVertex v) override { finish(p, v); }
  void release_consumer(int p, OpVertex comm, OpVertex consumer) override;

  double now() { return net.simulator().now(); }
  void comm_started(int p);
  void comm_ended(int p);
  double comm_busy_s(int p) override;
  double concurrent_comm_slowdown() const override { return options.concurrent_comm_slowdown; }
  // The slowdown a compute op of kernel_s a kernel pays beside its rank's communication
  // (ExecOptions).
  double comm_slowdown(int p, OpVertex v, double kernel_s) const;
  // An op's time per kernel, `duration_s` over its kernels: a GEMM's are its batch (a
  // grouped GEMM launches one per member), any other op's its launches.
  double kernel_time_s(int p, OpVertex v, double duration_s) const;
  void run_segment(int p, OpVertex v, double duration_s, double slow, int round);
  const CommImagePlans& plans() const { return layout->plans(); }
  int rep(int rank) const { return step.representative.empty() ? rank : step.representative[rank]; }

  void prepare();
  void start_ready(int p);
  void try_head(int p, int stream);
  // When the host issues the op at `index` of p's host order: +inf while a host_sync op
  // before it has not finished.
  double host_issue(int p, std::size_t index);
  void host_wake(int p, int stream, double t);  // try_head of p's `stream` at time t
  void hand_to_design(int p, OpVertex v);
  void finish(int p, OpVertex v);
  void complete_later(Simulator::Callback fn);
  void join_collective(int p, OpVertex v, std::uint64_t bytes, int part, Callback on_done);
  void launch_collective(int group, std::uint32_t launch);
  // The transfer of a met collective (after its launch delay, if any).
  void start_transfer(int group, CollectiveOp op, std::uint64_t bytes,
                      const std::function<void()>& on_done);
  void join_p2p(int p, OpVertex v);
  void launch_p2p(const P2pMatch& m);
  void attribute_idle(ProgramState& ps, double t0, double t1, OpVertex cause);
  // Books `length_s` of compute idle on communication op `u` of `ps` into its classes.
  void book_exposed(ProgramState& ps, OpVertex u, double length_s);
  bool spans_hosts(const ProgramState& ps, const OpNode& node) const;
  void sample_links();
  StepResult collect(const char* design_name, std::uint64_t events, double wall_s);
  [[noreturn]] void report_stuck() const;
};

}  // namespace overlapsim::sim
