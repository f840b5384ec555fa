#include "sim/exec/step_executor.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <limits>
#include <stdexcept>

#include "sim/exec/step_executor_impl.hpp"

namespace overlapsim::sim {

using executor_detail::is_comm;
using executor_detail::kNumStreams;

namespace {

void add_by_kind(OpKind kind, double duration_s, ComputeByKind& out) {
  switch (kind) {
    case OpKind::Gemm:
    case OpKind::Gemv:
      out.gemm_s += duration_s;
      break;
    case OpKind::Attention:
      out.attention_s += duration_s;
      break;
    default:  // elementwise and embedding lookups: memory-bound
      out.memory_bound_s += duration_s;
  }
}

// The ops that begin forward chunks `first` and `second` of a program's compute stream
// (kNoOp where it has fewer).
void find_period_ops(const RankProgram& program, const std::vector<OpVertex>& compute_order,
                     int first, int second, OpVertex out[2]) {
  int chunk = -1;
  int microbatch = -1;
  for (const OpVertex v : compute_order) {
    const OpNode& node = program.graph[v];
    if (node.microbatch < 0 || node.phase != Phase::Forward || node.recompute) continue;
    // Backward ops between forward ops of one micro-batch (a schedule that overlaps one
    // micro-batch's forward with another's backward) do not split its chunk.
    if (node.microbatch == microbatch) continue;
    microbatch = node.microbatch;
    ++chunk;
    if (chunk == first) out[0] = v;
    if (chunk == second) {
      out[1] = v;
      return;
    }
  }
}

}  // namespace

void StepExecutor::Impl::prepare() {
  if (!layout) layout = std::make_shared<const StepLayout>(step, net, options.images);
  if (&layout->step() != &step || layout->images() != options.images)
    throw std::logic_error("StepExecutor: the layout is of another step or images mode");
  programs.resize(step.ranks.size());
  for (std::size_t p = 0; p < step.ranks.size(); ++p) {
    ProgramState& ps = programs[p];
    const executor_detail::ProgramLayout& pl = layout->program(p);
    ps.program = &step.ranks[p];
    ps.ops = pl.initial_ops;
    ps.edges = &pl.edges;
    for (int s = 0; s < kNumStreams; ++s) ps.streams[s].order = &pl.stream_order[s];
    ps.remaining = ps.ops.size();
    ps.result.rank = ps.program->rank;
    ps.result.multiplicity = ps.program->multiplicity;
    ps.record = options.record_timeline &&
                (options.timeline_ranks.empty() ||
                 std::find(options.timeline_ranks.begin(), options.timeline_ranks.end(),
                           ps.program->rank) != options.timeline_ranks.end());
    // Most runs record one interval per compute op and per communication op.
    ps.compute_intervals.reserve(pl.compute_ops);
    ps.comm_intervals.reserve(pl.comm_ops);
    ps.host_gated = !pl.host_order.empty();
    if (ps.host_gated) {
      ps.host_order = &pl.host_order;
      ps.host_position = &pl.host_position;
      ps.host_issue_s.assign(ps.ops.size(), -1.0);
      ps.host_wake_s.fill(-1);
    }
    if (options.period_chunks[0] >= 0 && options.period_chunks[1] > options.period_chunks[0])
      find_period_ops(*ps.program, pl.stream_order[static_cast<int>(StreamKind::Compute)],
                      options.period_chunks[0], options.period_chunks[1], ps.period_ops);
  }
}

void StepExecutor::Impl::start_ready(int p) {
  ProgramState& ps = programs[p];
  for (int s = 0; s < kNumStreams; ++s) try_head(p, s);
  for (std::size_t v = 0; v < ps.ops.size(); ++v)
    if (ps.ops[v].kind == static_cast<std::uint8_t>(OpKind::SendRecv) && ps.ops[v].preds_left == 0)
      hand_to_design(p, v);
}

void StepExecutor::Impl::try_head(int p, int stream) {
  ProgramState& ps = programs[p];
  StreamQueue& q = ps.streams[stream];
  // Ops a design finished before they reached the head of their stream are skipped.
  const std::vector<OpVertex>& order = *q.order;
  while (!q.busy && q.next < order.size() && ps.ops[order[q.next]].done) ++q.next;
  if (q.busy || q.next >= order.size()) return;
  const OpVertex v = order[q.next];
  if (ps.ops[v].preds_left != 0) return;
  if (ps.host_gated && (*ps.host_position)[v] != executor_detail::kNotIssued) {
    // Its inputs are ready; the GPU can start it once the host has issued it.
    const double issue_s = host_issue(p, (*ps.host_position)[v]);
    if (issue_s > now()) {
      if (std::isfinite(issue_s)) host_wake(p, stream, issue_s);
      return;  // else the finish of the sync the host waits for tries the heads again
    }
  }
  q.busy = true;
  hand_to_design(p, v);
}

double StepExecutor::Impl::host_issue(int p, std::size_t index) {
  ProgramState& ps = programs[p];
  const std::vector<OpVertex>& order = *ps.host_order;
  const OpGraph& g = ps.program->graph;
  while (ps.host_next <= index && ps.host_blocked_on == executor_detail::kNoHostBlock) {
    const OpVertex u = order[ps.host_next++];
    const OpNode& node = g[u];
    ps.host_clock_s += node.host_s;
    ps.host_issue_s[u] = ps.host_clock_s;
    if (node.host_sync) {
      if (ps.ops[u].done)
        ps.host_clock_s = std::max(ps.host_clock_s, ps.ops[u].end_s + node.host_sync_s);
      else
        ps.host_blocked_on = u;
    }
  }
  return index < ps.host_next ? ps.host_issue_s[order[index]]
                              : std::numeric_limits<double>::infinity();
}

void StepExecutor::Impl::host_wake(int p, int stream, double t) {
  double& wake_s = programs[p].host_wake_s[static_cast<std::size_t>(stream)];
  if (wake_s >= 0 && wake_s <= t) return;  // an earlier wake tries again
  wake_s = t;
  simulator().schedule(t - now(), [this, p, stream] {
    programs[p].host_wake_s[static_cast<std::size_t>(stream)] = -1;
    try_head(p, stream);
  });
}

void StepExecutor::Impl::hand_to_design(int p, OpVertex v) {
  OpState& st = programs[p].ops[v];
  if (st.ready_s < 0) st.ready_s = now();  // a design may have started it earlier
  design->start(*this, p, v);
}

double StepExecutor::Impl::op_time_s(int p, OpVertex v) {
  if (!op_times) return compute.time_s(op(p, v));
  std::vector<double>& times = op_times->times[static_cast<std::size_t>(p)];
  if (times.empty()) times.assign(programs[p].ops.size(), std::numeric_limits<double>::quiet_NaN());
  double& t = times[v];
  if (std::isnan(t)) {
    const OpNode& node = op(p, v);
    const auto [it, inserted] = op_times->by_key.try_emplace(OpCostKey::of(node), 0.0);
    if (inserted) {
      try {
        it->second = compute.time_s(node);
      } catch (...) {
        op_times->by_key.erase(it);
        throw;
      }
    }
    t = it->second;
  }
  return t;
}

void StepExecutor::Impl::run_for(int p, OpVertex v, double duration_s) {
  ProgramState& ps = programs[p];
  if (ps.ops[v].stream != static_cast<std::uint8_t>(StreamKind::Compute)) {
    begin_compute(p, v, duration_s, [this, p, v] { finish(p, v); });
    return;
  }
  const double kernel_s = kernel_time_s(p, v, duration_s);
  const auto kind = static_cast<OpKind>(ps.ops[v].kind);
  const bool gemm = kind == OpKind::Gemm;
  if (duration_s > 0 && ((gemm && options.comm_waits_for_gemm_kernel) ||
                         (kind == OpKind::Elementwise && options.comm_waits_for_memory_kernel))) {
    ps.sm_holder = v;
    ps.sm_holder_is_gemm = gemm;
    ps.sm_holder_start_s = now();
    ps.sm_holder_alone_end_s = now() + duration_s;
    ps.sm_holder_kernel_s = kernel_s;
  }
  const double slow = comm_slowdown(p, v, kernel_s);
  if (slow > 1)
    run_segment(p, v, duration_s, slow, 0);
  else
    begin_compute(p, v, duration_s, [this, p, v] { finish(p, v); });
}

double StepExecutor::Impl::kernel_time_s(int p, OpVertex v, double duration_s) const {
  return duration_s / programs[p].ops[v].kernels;  // the OpState's copy: OpNodes miss cache
}

double StepExecutor::Impl::comm_slowdown(int p, OpVertex v, double kernel_s) const {
  const auto kind = static_cast<OpKind>(programs[p].ops[v].kind);
  const LogCurve* curve = kind == OpKind::Gemm          ? &options.gemm_comm_slowdown
                          : kind == OpKind::Elementwise ? &options.memory_comm_slowdown
                          : kind == OpKind::Attention   ? &options.attention_comm_slowdown
                                                        : nullptr;
  if (curve == nullptr || curve->empty()) return options.concurrent_comm_slowdown;
  return curve->at(kernel_s);
}

// Like a paired design's group (sim/overlap/paired_design.cpp): run for the work left as if
// at full rate, then for the work lost while communication of the rank moved data, once
// more as if at full rate, then what is still left at the slow rate, which completes it
// whether or not communication goes on (the last segment's work is charged, not measured
// again: measured, a factor near 2 would lose almost as much as it charges, round after
// round).
void StepExecutor::Impl::run_segment(int p, OpVertex v, double duration_s, double slow, int round) {
  const double busy0 = comm_busy_s(p);
  begin_compute(p, v, duration_s, [this, p, v, busy0, slow, round] {
    const double lost = round < 2 ? (comm_busy_s(p) - busy0) * (1 - 1 / slow) : 0;
    if (lost > 1e-12) {
      run_segment(p, v, round < 1 ? lost : lost * slow, slow, round + 1);
      return;
    }
    finish(p, v);
  });
}

void StepExecutor::Impl::comm_started(int p) {
  ProgramState& ps = programs[p];
  if (ps.comm_in_flight++ == 0) ps.comm_busy_since_s = now();
}

void StepExecutor::Impl::comm_ended(int p) {
  ProgramState& ps = programs[p];
  if (--ps.comm_in_flight == 0) {
    ps.comm_busy_accum_s += now() - ps.comm_busy_since_s;
    ps.comm_busy_since_s = -1;
  }
}

double StepExecutor::Impl::comm_busy_s(int p) {
  const ProgramState& ps = programs[p];
  return ps.comm_busy_accum_s + (ps.comm_busy_since_s >= 0 ? now() - ps.comm_busy_since_s : 0);
}

void StepExecutor::Impl::compute_for(int p, OpVertex v, double duration_s, Callback on_done) {
  begin_compute(p, v, duration_s, std::move(on_done));
}

void StepExecutor::Impl::begin_compute(int p, OpVertex v, double duration_s,
                                       Simulator::Callback on_done) {
  ProgramState& ps = programs[p];
  OpState& st = ps.ops[v];
  const double t = now();
  if (ps.period_marks < 2 && v == ps.period_ops[ps.period_marks] && st.start_s < 0) mark_period(ps);
  if (st.start_s < 0) st.start_s = t;
  if (st.ready_s < 0) st.ready_s = t;
  // The op's kind, stream and pairing from its OpState: its OpNode is rarely in cache.
  if (st.stream == static_cast<std::uint8_t>(StreamKind::Compute) &&
      !is_comm(static_cast<OpKind>(st.kind))) {
    // Why was the compute stream idle before this op? Blame the input that came last; an
    // input still running (a consumer pair's collective, released early) came last.
    if (t > ps.last_compute_end_s) {
      OpVertex cause = v;
      double latest = -1;
      const EdgeRows& rows = *ps.edges;
      for (std::uint32_t i = rows.in_begin[v]; i < rows.in_begin[v + 1]; ++i) {
        const OpVertex u = rows.in_from[i];
        const double end_s = ps.ops[u].done ? ps.ops[u].end_s : t;
        if (end_s > latest) {
          latest = end_s;
          cause = u;
        }
      }
      // Inputs ready before the host issued the op: that part of the idle is the host's.
      const double inputs_s = std::max(latest, ps.last_compute_end_s);
      const double issued_s = ps.host_gated ? ps.host_issue_s[v] : -1;
      if (issued_s > inputs_s && inputs_s < t) {
        ps.result.host_wait_s += t - inputs_s;
        if (inputs_s > ps.last_compute_end_s)
          attribute_idle(ps, ps.last_compute_end_s, inputs_s, cause);
      } else {
        attribute_idle(ps, ps.last_compute_end_s, t, cause);
      }
    }
    ps.last_compute_end_s = t + duration_s;
    ps.compute_intervals.emplace_back(t, t + duration_s);
    if (st.paired) ps.result.paired_compute_s += duration_s;
    add_by_kind(static_cast<OpKind>(st.kind), duration_s, ps.result.compute_by_kind);
    if (st.paired) add_by_kind(static_cast<OpKind>(st.kind), duration_s, ps.result.paired_by_kind);
    if (!options.collective_memory_slowdown.empty()) {
      double rate = 0;
      if (st.kind == static_cast<std::uint8_t>(OpKind::Elementwise) && duration_s > 0)
        rate = 1 - 1 / options.collective_memory_slowdown.at(kernel_time_s(p, v, duration_s));
      set_memory_rate(p, rate, t + duration_s);
    }
  }
  simulator().schedule(duration_s, std::move(on_done));
}

void StepExecutor::Impl::mark_period(ProgramState& ps) {
  const double t = now();
  // The intervals as they stand now: those begun, cut at now (a compute op's is recorded
  // whole when it begins, a transfer's when it ends).
  const auto until_now = [t](const std::vector<Interval>& all) {
    std::vector<Interval> cut;
    cut.reserve(all.size());
    for (const Interval& i : all)
      if (i.first < t) cut.emplace_back(i.first, std::min(i.second, t));
    return merge_intervals(std::move(cut));
  };
  RankResult r = ps.result;
  r.step_time_s = t - t0_s;
  const auto compute = until_now(ps.compute_intervals);
  const auto comm = until_now(ps.comm_intervals);
  r.compute_s = total_length(compute);
  r.comm_s = total_length(comm);
  r.overlapped_comm_s = intersection_length(compute, comm);
  ps.period_at[ps.period_marks++] = r;
}

double StepExecutor::Impl::memory_loss_s(int p) {
  const ProgramState& ps = programs[p];
  const double t = std::min(now(), ps.memory_until_s);
  return ps.memory_loss_accum_s + std::max(0.0, t - ps.memory_since_s) * ps.memory_rate;
}

void StepExecutor::Impl::set_memory_rate(int p, double rate, double until_s) {
  ProgramState& ps = programs[p];
  ps.memory_loss_accum_s = memory_loss_s(p);
  ps.memory_since_s = now();
  ps.memory_rate = rate;
  ps.memory_until_s = until_s;
}

void StepExecutor::Impl::attribute_idle(ProgramState& ps, double t0, double t1, OpVertex cause) {
  const OpGraph& g = ps.program->graph;
  RankResult& r = ps.result;
  OpVertex u = cause;
  while (t1 > t0) {
    const OpNode& node = g[u];
    const OpState& st = ps.ops[u];
    if (!is_comm(node.kind) || st.ready_s < 0) {
      // Waiting on compute that ran on another stream: not communication, not another
      // rank; counted with exposed communication (streams other than compute are comm).
      r.exposed_comm_s += t1 - t0;
      return;
    }
    // A collective still under way (a consumer pair's, whose op runs as its parts land)
    // is moving data up to now, or still waiting for its other members.
    const double end_s = st.done ? st.end_s : t1;
    const double launch_s = st.launch_s < 0 ? end_s : st.launch_s;
    book_exposed(ps, u, overlap_length(t0, t1, launch_s, end_s));
    r.bubble_s += overlap_length(t0, t1, st.ready_s, launch_s);
    t1 = std::min(t1, st.ready_s);
    if (t1 <= t0) return;
    // Before it was ready the op waited for its inputs or for its stream.
    double inputs_s = t0_s;
    OpVertex next = u;
    const EdgeRows& rows = *ps.edges;
    for (std::uint32_t i = rows.in_begin[u]; i < rows.in_begin[u + 1]; ++i) {
      const OpVertex w = rows.in_from[i];
      if (ps.ops[w].end_s > inputs_s) {
        inputs_s = ps.ops[w].end_s;
        next = w;
      }
    }
    // Its inputs done, it waited for the host to issue it, then queued on its stream.
    const double issued_s = ps.host_gated ? std::min(ps.host_issue_s[u], st.ready_s) : -1;
    if (issued_s > inputs_s) {
      r.host_wait_s += overlap_length(t0, t1, inputs_s, issued_s);
      r.exposed_comm_s += overlap_length(t0, t1, issued_s, st.ready_s);
    } else {
      r.exposed_comm_s += overlap_length(t0, t1, inputs_s, st.ready_s);
    }
    t1 = std::min(t1, inputs_s);
    if (next == u) {
      // No input finished after the step began: whatever is left is stream queueing.
      r.exposed_comm_s += std::max(0.0, t1 - t0);
      return;
    }
    u = next;
  }
}

bool StepExecutor::Impl::spans_hosts(const ProgramState& ps, const OpNode& node) const {
  if (node.kind == OpKind::SendRecv)
    return node.peer_rank >= 0 && net.host_of(node.peer_rank) != net.host_of(ps.program->rank);
  return node.comm_group >= 0 && layout->group_spans_hosts(node.comm_group);
}

void StepExecutor::Impl::book_exposed(ProgramState& ps, OpVertex u, double length_s) {
  if (length_s <= 0) return;
  const OpNode& node = ps.program->graph[u];
  RankResult& r = ps.result;
  r.exposed_comm_s += length_s;
  if (spans_hosts(ps, node)) r.exposed_inter_host_s += length_s;
  if (node.pair_partner >= 0) r.exposed_paired_s += length_s;
}

void StepExecutor::Impl::finish(int p, OpVertex v) {
  ProgramState& ps = programs[p];
  OpState& st = ps.ops[v];
  if (st.done) throw std::logic_error("StepExecutor: op finished twice");
  // A design may finish a compute op it absorbed without running it (OpNode::pair_layout).
  if (st.start_s < 0 && !is_comm(static_cast<OpKind>(st.kind))) {
    st.start_s = now();
    if (st.ready_s < 0) st.ready_s = now();
  }
  st.done = true;
  st.end_s = now();
  --ps.remaining;
  if (ps.sm_holder == v) {
    // Its last kernel ended: NCCL kernels waiting for SMs start now, ahead of whatever the
    // compute stream starts next (they were launched first).
    ps.sm_holder = executor_detail::kNoOp;
    for (const OpVertex u : ps.waiting_for_sms)
      simulator().schedule(0.0, [this, p, u] { start_comm(p, u); });
    ps.waiting_for_sms.clear();
  }
  if (ps.record) {
    const OpNode& node = ps.program->graph[v];
    OpRecord rec;
    rec.rank = ps.program->rank;
    rec.stream = node.stream;
    rec.kind = node.kind;
    rec.phase = node.phase;
    rec.name = node.name;
    rec.ready_s = st.ready_s - t0_s;
    rec.start_s = (is_comm(node.kind) ? st.launch_s : st.start_s) - t0_s;
    rec.end_s = st.end_s - t0_s;
    rec.flops = is_comm(node.kind) ? 0 : ComputeModel::op_flops(node);
    rec.bytes = is_comm(node.kind) ? node.comm_bytes
                                   : static_cast<std::uint64_t>(ComputeModel::op_bytes(node));
    timeline.ops.push_back(std::move(rec));
  }
  if (ps.host_gated && ps.host_blocked_on == v) {
    // The host had waited for this op: it resumes after the copy's round trip.
    ps.host_blocked_on = executor_detail::kNoHostBlock;
    ps.host_clock_s = std::max(ps.host_clock_s, now() + ps.program->graph[v].host_sync_s);
    // Every stream's head may have waited for the host (this op's own stream is tried
    // below).
    for (int s = 0; s < kNumStreams; ++s)
      if (s != st.stream) try_head(p, s);
  }
  const int stream = st.stream;
  const bool sendrecv = st.kind == static_cast<std::uint8_t>(OpKind::SendRecv);
  if (!sendrecv) {
    StreamQueue& q = ps.streams[stream];
    // A design may finish an op before it reaches the head of its stream; try_head skips
    // it then.
    if (q.busy && (*q.order)[q.next] == v) {
      q.busy = false;
      ++q.next;
    }
  }
  const EdgeRows& rows = *ps.edges;
  for (std::uint32_t i = rows.out_begin[v]; i < rows.out_begin[v + 1]; ++i) {
    const OpVertex w = rows.out_to[i];
    if (st.released_to == static_cast<std::int64_t>(w)) continue;  // counted at release
    OpState& next = ps.ops[w];
    if (--next.preds_left != 0) continue;
    if (next.kind == static_cast<std::uint8_t>(OpKind::SendRecv))
      hand_to_design(p, w);
    else
      try_head(p, next.stream);
  }
  if (!sendrecv) try_head(p, stream);
  if (p == 0) sample_links();
}

void StepExecutor::Impl::release_consumer(int p, OpVertex comm, OpVertex consumer) {
  ProgramState& ps = programs[p];
  OpState& st = ps.ops[comm];
  const OpGraph& g = ps.program->graph;
  if (st.done || st.released_to >= 0 || !has_edge(p, comm, consumer))
    throw std::logic_error("release_consumer: not an unfinished op's successor");
  st.released_to = static_cast<std::int64_t>(consumer);
  if (--ps.ops[consumer].preds_left == 0 && g[consumer].kind != OpKind::SendRecv)
    try_head(p, static_cast<int>(g[consumer].stream));
}

void StepExecutor::Impl::sample_links() {
  if (!options.link_bytes) return;
  const double t = now() - t0_s;
  if (last_sample_s >= 0 && t - last_sample_s < options.link_sample_interval_s) return;
  last_sample_s = t;
  timeline.link_samples.push_back({t, options.link_bytes()});
}

StepResult StepExecutor::Impl::collect(const char* design_name, std::uint64_t events,
                                       double wall_s) {
  StepResult out;
  out.design = design_name;
  if (!programs.empty() && std::all_of(programs.begin(), programs.end(),
                                       [](const auto& ps) { return ps.period_marks == 2; }))
    for (const ProgramState& ps : programs) {
      out.period_start.push_back(ps.period_at[0]);
      out.period_end.push_back(ps.period_at[1]);
    }
  out.events = events;
  out.sim_wall_s = wall_s;
  out.collectives = collectives;
  out.background_collectives = background;
  bool first = true;
  for (ProgramState& ps : programs) {
    RankResult& r = ps.result;
    double end_s = t0_s;
    OpVertex last = 0;
    for (std::size_t v = 0; v < ps.ops.size(); ++v)
      if (ps.ops[v].end_s > end_s) {
        end_s = ps.ops[v].end_s;
        last = v;
      }
    // Communication still running after the last compute op is exposed (e.g. the final
    // gradient reduction), or a bubble if it waited for another rank.
    if (end_s > ps.last_compute_end_s && !ps.ops.empty())
      attribute_idle(ps, std::max(ps.last_compute_end_s, t0_s), end_s, last);
    r.step_time_s = end_s - t0_s;
    // The run is over: the lists are merged where they are, not copied.
    const auto compute = merge_intervals(std::move(ps.compute_intervals));
    const auto comm = merge_intervals(std::move(ps.comm_intervals));
    r.compute_s = total_length(compute);
    r.comm_s = total_length(comm);
    r.overlapped_comm_s = intersection_length(compute, comm);
    out.ranks.push_back(r);
    if (first || r.step_time_s > out.step_time_s) {
      first = false;
      take_critical(out, r);
    }
  }
  return out;
}

void StepExecutor::Impl::report_stuck() const {
  std::string msg = "the step did not complete (a dependency the graph cannot satisfy):";
  int shown = 0;
  for (const ProgramState& ps : programs) {
    const OpGraph& g = ps.program->graph;
    for (std::size_t v = 0; v < ps.ops.size() && shown < 4; ++v) {
      const OpState& st = ps.ops[v];
      if (st.done || st.ready_s < 0) continue;
      const OpNode& n = g[v];
      msg += fmt::format(" rank {} op '{}' ({}) waits for {};", ps.program->rank, n.name,
                         to_string(n.kind),
                         n.kind == OpKind::SendRecv
                             ? fmt::format("its matching {} with rank {}",
                                           n.is_send ? "receive" : "send", n.peer_rank)
                             : fmt::format("the other members of group {} ({})", n.comm_group,
                                           n.comm_group >= 0 ? step.groups[n.comm_group].family
                                                             : std::string("none")));
      ++shown;
    }
  }
  if (shown == 0)
    msg += " no op is waiting at a rendezvous (the network never completed a transfer)";
  throw std::runtime_error(msg);
}

StepExecutor::StepExecutor(const StepGraph& step, const ComputeModel& compute, NetworkApi& net,
                           ExecOptions options)
    : StepExecutor(step, compute, net, std::move(options), nullptr) {}

StepExecutor::StepExecutor(const StepGraph& step, const ComputeModel& compute, NetworkApi& net,
                           ExecOptions options, std::shared_ptr<const StepLayout> layout)
    : impl_(std::make_unique<Impl>(step, compute, net, std::move(options), std::move(layout))) {
  Impl* impl = impl_.get();
  impl->launcher = [impl](const CollectiveRequest& req, std::function<void()> done) {
    start_collective(impl->net, req, std::move(done), impl->options.tuning);
  };
  impl->prepare();
  impl->timeline.link_classes = impl->options.link_classes;
  impl->timeline.link_capacity_Bps = impl->options.link_capacity_Bps;
}

StepExecutor::~StepExecutor() = default;

void StepExecutor::set_background_launcher(BackgroundLauncher launcher) {
  impl_->background_launcher = std::move(launcher);
}

void StepExecutor::set_op_time_memo(std::shared_ptr<OpTimeMemo> memo) {
  if (!memo || memo->model != &impl_->compute) {
    impl_->op_times = nullptr;
    return;
  }
  if (memo->times.size() != impl_->programs.size()) memo->times.resize(impl_->programs.size());
  impl_->op_times = std::move(memo);
}

void StepExecutor::set_collective_launcher(CollectiveLauncher launcher) {
  impl_->launcher = std::move(launcher);
}

const Timeline& StepExecutor::timeline() const { return impl_->timeline; }

StepResult StepExecutor::run(OverlapDesign& design) {
  Impl& s = *impl_;
  if (s.design) throw std::logic_error("StepExecutor::run called twice");
  s.design = &design;
  Simulator& sim = s.simulator();
  s.t0_s = sim.now();
  for (auto& ps : s.programs) ps.last_compute_end_s = ps.host_clock_s = s.t0_s;
  const std::uint64_t events0 = sim.events_processed();
  const auto wall0 = std::chrono::steady_clock::now();
  s.sample_links();
  for (std::size_t p = 0; p < s.programs.size(); ++p) s.start_ready(static_cast<int>(p));
  sim.run();
  for (const auto& ps : s.programs)
    if (ps.remaining != 0) s.report_stuck();
  s.last_sample_s = -1;
  s.sample_links();
  const double wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  return s.collect(design.name(), sim.events_processed() - events0, wall_s);
}

}  // namespace overlapsim::sim
