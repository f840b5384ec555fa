#include "sim/overlap/paired_design.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <boost/range/iterator_range.hpp>
#include <cmath>
#include <deque>
#include <stdexcept>

namespace overlapsim::sim {

struct PairedDesign::Pair {
  int program = 0;
  OpVertex compute = 0, comm = 0;
  bool producer = true;
  PairSchedule s;
  std::vector<std::uint64_t> bytes;  // per part
  std::vector<char> arrived;         // per part
  int next_group = 0;
  bool compute_handed = false;  // consumer: the op reached the head of its stream
  bool compute_finished = false, comm_finished = false;
  int in_flight = 0, parts_done = 0;
  bool comm_busy = false;
  std::deque<int> queued;
  std::vector<int> waiting_for_sms;  // parts ready while a group held every SM
  // Later parts timed from the first (PairPlanning::scaled_parts_min_ranks).
  bool scale_parts = false;
  double first_part_s_per_byte = -1;
  int comm_group = -1;
  // Time with at least one part moving data: accumulated, and since when (< 0: idle).
  double busy_accum_s = 0, busy_since_s = -1;
  // Time with a group of the op running: accumulated, and since when (< 0: none runs).
  double compute_accum_s = 0, compute_since_s = -1;
  bool compute_running() const { return compute_since_s >= 0; }
  int refs = 0;  // PairRef's count
};

PairedDesign::PairRef::PairRef(Pair* owned) noexcept : p_(owned) {
  if (p_) p_->refs = 1;
}
PairedDesign::PairRef::PairRef(const PairRef& other) noexcept : p_(other.p_) {
  if (p_) ++p_->refs;
}
PairedDesign::PairRef::~PairRef() {
  if (p_ && --p_->refs == 0) delete p_;
}

namespace {
std::uint64_t key_of(int program, OpVertex v) {
  return (static_cast<std::uint64_t>(program) << 32) | static_cast<std::uint64_t>(v);
}
bool is_comm(OpKind k) { return k == OpKind::Collective || k == OpKind::SendRecv; }
}  // namespace

void PairedDesign::run_sequential(ExecContext& ctx, int p, OpVertex v) {
  if (is_comm(ctx.op_kind(p, v)))
    ctx.run_comm(p, v);
  else
    ctx.run_for(p, v, ctx.op_time_s(p, v));
}

void PairedDesign::add_pair_op(const ExecContext& ctx, int program, OpVertex v,
                               const PairRef& pair) {
  const auto p = static_cast<std::size_t>(program);
  if (in_pairs_.size() <= p) in_pairs_.resize(p + 1);
  if (in_pairs_[p].empty()) in_pairs_[p].assign(boost::num_vertices(ctx.graph(program)), 0);
  in_pairs_[p][v] = 1;
  pairs_[key_of(program, v)] = pair;
}

void PairedDesign::erase_pair_ops(const Pair& pair) {
  const int program = pair.program;
  const OpVertex compute = pair.compute, comm = pair.comm;
  in_pairs_[static_cast<std::size_t>(program)][compute] = 0;
  in_pairs_[static_cast<std::size_t>(program)][comm] = 0;
  pairs_.erase(key_of(program, compute));  // may destroy `pair`
  pairs_.erase(key_of(program, comm));
}

void PairedDesign::start(ExecContext& ctx, int p, OpVertex v) {
  if (static_cast<std::size_t>(p) < in_pairs_.size() && !in_pairs_[p].empty() &&
      in_pairs_[p][v] != 0) {
    const PairRef pair = pairs_.find(key_of(p, v))->second;
    if (v == pair->compute && !pair->producer) {
      pair->compute_handed = true;
      run_next_group(ctx, pair);
    }
    // A producer's collective reaching its stream: its parts are already under way.
    return;
  }
  if (ctx.op_paired(p, v)) {  // node.pair_partner >= 0
    const OpNode& node = ctx.op(p, v);
    const auto partner = static_cast<OpVertex>(node.pair_partner);
    const OpNode& other = ctx.op(p, partner);
    if (node.kind != OpKind::SendRecv && other.kind != OpKind::SendRecv &&
        is_comm(node.kind) != is_comm(other.kind)) {
      const OpVertex compute = is_comm(node.kind) ? partner : v;
      const OpVertex comm = is_comm(node.kind) ? v : partner;
      const bool producer = ctx.has_edge(p, compute, comm);
      const bool consumer = ctx.has_edge(p, comm, compute);
      if ((producer && v == compute) || (consumer && v == comm)) {
        begin_pair(ctx, p, compute, comm, producer);
        return;
      }
    }
  }
  run_sequential(ctx, p, v);
}

PairView PairedDesign::view_of(const OpNode& compute, const OpNode& comm, bool producer) const {
  PairView view;
  view.compute = &compute;
  view.comm = &comm;
  view.producer = producer;
  const int group = comm.comm_group;
  view.intra_host = intra_host_.empty() || group < 0 ||
                    group >= static_cast<int>(intra_host_.size()) || intra_host_[group] != 0;
  if (group >= 0 && group < static_cast<int>(group_sizes_.size()))
    view.comm_ranks = group_sizes_[group];
  view.costs = costs_;
  view.call_latency_in_collective =
      costs_ && group >= 0 &&
      costs_->charges_call_latency(comm.collective, view.comm_ranks, view.intra_host);
  return view;
}

void PairedDesign::bind(const StepGraph& step, const CollectiveCostModel& costs,
                        PairPlanning planning) {
  costs_ = &costs;
  planning_ = planning;
  intra_host_.clear();
  group_sizes_.clear();
  for (const CommGroup& g : step.groups) {
    intra_host_.push_back(costs.intra_host(g.ranks) ? 1 : 0);
    group_sizes_.push_back(static_cast<int>(g.ranks.size()));
  }
}

// The collective's time per call from the cost model, and a rate and latency through its
// times at the full size and a sixteenth of it (before any part has run).
void PairedDesign::plan_with_call_times(PairView& view) const {
  const CollectiveOp op = view.comm->collective;
  const int n = view.comm_ranks;
  const bool intra = view.intra_host;
  const std::uint64_t bytes = view.comm->comm_bytes;
  const std::optional<double> full_s =
      costs_ && bytes > 0 ? costs_->call_time_s(op, bytes, n, intra) : std::nullopt;
  if (!full_s) return;
  const CollectiveCostModel* costs = costs_;
  view.comm_time_at = [costs, op, n, intra](double b) {
    return *costs->call_time_s(op, static_cast<std::uint64_t>(b), n, intra);
  };
  const double full = *full_s;
  const double part = *costs->call_time_s(op, bytes / 16, n, intra);
  if (full <= 0) return;
  const double rate = std::max(0.0, (full - part) / static_cast<double>(bytes - bytes / 16));
  // A rate the communicator's earlier parts took on the network wins over the hint.
  if (!learned_rate_.count(view.comm->comm_group))
    view.comm_s_per_byte = rate > 0 ? rate : full / static_cast<double>(bytes);
  view.comm_latency_s = std::max(0.0, full - rate * static_cast<double>(bytes));
}

PairStats PairedDesign::scan(const StepGraph& step, const ComputeModel& model,
                             bool stop_at_overlap) const {
  PairStats out;
  for (const RankProgram& prog : step.ranks) {
    const OpGraph& g = prog.graph;
    for (OpVertex v = 0; v < boost::num_vertices(g); ++v) {
      const OpNode& node = g[v];
      if (node.pair_partner < 0 || is_comm(node.kind)) continue;
      const auto c = static_cast<OpVertex>(node.pair_partner);
      if (g[c].kind != OpKind::Collective) continue;
      const bool producer = boost::edge(v, c, g).second;
      if (!producer && !boost::edge(c, v, g).second) continue;
      std::string why_not;
      if (schedule(model, view_of(node, g[c], producer), why_not)) {
        ++out.overlapped;
        if (stop_at_overlap) return out;
      } else
        ++out.sequential[why_not];
    }
  }
  return out;
}

std::optional<PairSchedule> PairedDesign::preview(const StepGraph& step, const ComputeModel& model,
                                                  int program, OpVertex compute,
                                                  std::string& why_not) const {
  const OpGraph& g = step.ranks.at(static_cast<std::size_t>(program)).graph;
  const OpNode& node = g[compute];
  if (node.pair_partner < 0 || is_comm(node.kind)) {
    why_not = "not a paired compute op";
    return std::nullopt;
  }
  const auto c = static_cast<OpVertex>(node.pair_partner);
  PairView view = view_of(node, g[c], boost::edge(compute, c, g).second);
  if (planning_.plan_with_call_times) plan_with_call_times(view);
  return schedule(model, view, why_not);
}

void PairedDesign::begin_pair(ExecContext& ctx, int p, OpVertex compute, OpVertex comm,
                              bool producer) {
  PairView view = view_of(ctx.op(p, compute), ctx.op(p, comm), producer);
  const int group = view.comm->comm_group;
  if (auto it = learned_rate_.find(group); it != learned_rate_.end())
    view.comm_s_per_byte = it->second;
  if (planning_.plan_with_call_times) plan_with_call_times(view);
  std::string why_not;
  auto sched = schedule(ctx.compute_model(), view, why_not);
  if (!sched) {
    ++stats_.sequential[why_not];
    run_sequential(ctx, p, producer ? compute : comm);
    return;
  }
  const std::size_t n = sched->compute_s.size();
  if (n == 0 || sched->comm_share.size() != n ||
      (!sched->part_stretch.empty() && sched->part_stretch.size() != n) ||
      (!sched->part_time_s.empty() && sched->part_time_s.size() != n) ||
      (!sched->part_delays_s.empty() && sched->part_delays_s.size() != n))
    throw std::logic_error(
        fmt::format("design {}: malformed schedule for '{}'", name(), view.compute->name));
  ++stats_.overlapped;
  const PairRef pair(new Pair());
  pair->program = p;
  pair->compute = compute;
  pair->comm = comm;
  pair->producer = producer;
  pair->comm_group = group;
  pair->s = std::move(*sched);
  pair->arrived.assign(n, 0);
  // Bytes per part: shares of the collective, the remainder in the last part.
  const std::uint64_t total = view.comm->comm_bytes;
  std::uint64_t given = 0;
  for (std::size_t j = 0; j < n; ++j) {
    std::uint64_t b =
        j + 1 == n ? total - given
                   : std::min<std::uint64_t>(
                         total - given,
                         static_cast<std::uint64_t>(std::llround(pair->s.comm_share[j] * total)));
    pair->bytes.push_back(b);
    given += b;
  }
  pair->scale_parts = planning_.scaled_parts_min_ranks > 0 && group >= 0 &&
                      group < static_cast<int>(group_sizes_.size()) &&
                      group_sizes_[group] >= planning_.scaled_parts_min_ranks;
  add_pair_op(ctx, p, compute, pair);
  add_pair_op(ctx, p, comm, pair);
  if (producer) {
    absorb_layout_ops(ctx, p, compute, comm);
    run_next_group(ctx, pair);
  } else {
    // The op may reach its stream now; each group waits for its part (run_next_group).
    ctx.release_consumer(p, comm, compute);
    absorb_layout_ops(ctx, p, comm, compute);
    for (std::size_t j = 0; j < n; ++j) part_ready(ctx, pair, static_cast<int>(j));
  }
}

void PairedDesign::absorb_layout_ops(ExecContext& ctx, int p, OpVertex first, OpVertex second) {
  const OpGraph& g = ctx.graph(p);
  std::vector<OpVertex> layout;
  for (const auto e : boost::make_iterator_range(boost::out_edges(first, g))) {
    const OpVertex u = boost::target(e, g);
    if (g[u].pair_layout && ctx.has_edge(p, u, second)) layout.push_back(u);
  }
  for (const OpVertex u : layout) ctx.finish_op(p, u);
}

void PairedDesign::run_next_group(ExecContext& ctx, const PairRef& pair) {
  const int n = static_cast<int>(pair->s.compute_s.size());
  if (pair->compute_running() || pair->next_group >= n) return;
  if (!pair->producer && (!pair->compute_handed || !pair->arrived[pair->next_group])) return;
  const int j = pair->next_group++;
  pair->compute_since_s = ctx.simulator().now();
  start_segment(ctx, pair, j, pair->s.compute_s[j], 0);
}

double PairedDesign::comm_busy_s(const Pair& pair, double now) const {
  return pair.busy_accum_s + (pair.busy_since_s >= 0 ? now - pair.busy_since_s : 0);
}

double PairedDesign::compute_busy_s(const Pair& pair, double now) {
  return pair.compute_accum_s + (pair.compute_since_s >= 0 ? now - pair.compute_since_s : 0);
}

// A group's compute progresses at rate 1 while no part of its collective moves data and
// 1/compute_slowdown while one does. A segment runs for the work left as if at rate 1;
// at its end the work lost to interference during it is run as the next segment, and what
// that one loses is charged at the slow rate.
void PairedDesign::start_segment(ExecContext& ctx, const PairRef& pair, int j, double duration_s,
                                 int round) {
  const int n = static_cast<int>(pair->s.compute_s.size());
  const double busy0 = comm_busy_s(*pair, ctx.simulator().now());
  const double rank_busy0 = ctx.comm_busy_s(pair->program);
  ctx.compute_for(pair->program, pair->compute, duration_s,
                  [this, &ctx, pair, j, n, busy0, rank_busy0, round] {
    const double slow = pair->s.compute_slowdown;
    const double overlapped = comm_busy_s(*pair, ctx.simulator().now()) - busy0;
    // The rank's other communication (not this pair's parts) slows the group like any
    // compute beside communication (the step's own concurrency, ExecOptions).
    const double others = std::max(
        0.0, ctx.comm_busy_s(pair->program) - rank_busy0 - overlapped);
    const double base = ctx.concurrent_comm_slowdown();
    // The segment charged at the slow rate (round 2) completes the work: measuring its
    // loss again would charge the loss twice.
    const double lost =
        round < 2 ? overlapped * (1 - 1 / slow) + (base > 1 ? others * (1 - 1 / base) : 0) : 0;
    if (lost > 1e-12) {
      // After one correction round, charge what is left at the slow rate (events).
      // (With the rank's other communication, at the larger of the two factors.)
      const double left_slow = others > 1e-15 ? std::max(slow, base) : slow;
      start_segment(ctx, pair, j, round < 1 ? lost : lost * left_slow, round + 1);
      return;
    }
    pair->compute_accum_s += ctx.simulator().now() - pair->compute_since_s;
    pair->compute_since_s = -1;
    // The group's SMs free up: parts that waited for them go first, then
    // the next group starts, and this group's part waits for it.
    std::vector<int> waiting;
    waiting.swap(pair->waiting_for_sms);
    for (int w : waiting) enqueue_part(ctx, pair, w);
    if (j + 1 < n) run_next_group(ctx, pair);
    if (pair->producer) part_ready(ctx, pair, j);
    if (j + 1 == n) {
      pair->compute_finished = true;
      if (pair->comm_finished) erase_pair_ops(*pair);
      ctx.finish_op(pair->program, pair->compute);
    }
  });
}

void PairedDesign::part_ready(ExecContext& ctx, const PairRef& pair, int part) {
  if (pair->s.comm_waits_for_running_group && pair->compute_running()) {
    pair->waiting_for_sms.push_back(part);
    return;
  }
  enqueue_part(ctx, pair, part);
}

void PairedDesign::enqueue_part(ExecContext& ctx, const PairRef& pair, int part) {
  if (pair->s.serial_parts) {
    pair->queued.push_back(part);
    if (pair->comm_busy) return;
    const int next = pair->queued.front();
    pair->queued.pop_front();
    launch_part(ctx, pair, next);
  } else {
    launch_part(ctx, pair, part);
  }
}

void PairedDesign::launch_part(ExecContext& ctx, const PairRef& pair, int part) {
  pair->comm_busy = true;
  const int n = static_cast<int>(pair->bytes.size());
  double delay = part == 0 ? pair->s.first_part_delay_s : pair->s.part_delay_s;
  if (part > 0 && part + 1 == n && pair->s.last_part_delay_s >= 0)
    delay = pair->s.last_part_delay_s;
  if (!pair->s.part_delays_s.empty()) delay = pair->s.part_delays_s[part];
  auto go = [this, &ctx, pair, part] {
    const double t0 = ctx.simulator().now();
    if (pair->in_flight++ == 0) pair->busy_since_s = t0;  // moving data (not while delayed)
    if (!pair->s.part_time_s.empty()) {
      ctx.simulator().schedule(pair->s.part_time_s[part],
                               [this, &ctx, pair, part] { part_done(ctx, pair, part); });
      return;
    }
    const double compute0 = compute_busy_s(*pair, t0);
    if (pair->scale_parts && pair->first_part_s_per_byte >= 0 && pair->bytes[part] > 0) {
      ctx.simulator().schedule(
          pair->first_part_s_per_byte * static_cast<double>(pair->bytes[part]),
          [this, &ctx, pair, part, compute0] { end_transfer(ctx, pair, part, compute0); });
      return;
    }
    ctx.launch_comm_part(
        pair->program, pair->comm, pair->bytes[part], part + 1,
        [this, &ctx, pair, part, t0, compute0] {
          // NCCL limited to fewer CTAs moves the same bytes more slowly.
          const double stretch =
              pair->s.part_stretch.empty() ? pair->s.comm_stretch : pair->s.part_stretch[part];
          const double extra = (ctx.simulator().now() - t0) * (stretch - 1.0);
          const double s_per_byte =
              (ctx.simulator().now() - t0) * stretch /
              static_cast<double>(std::max<std::uint64_t>(1, pair->bytes[part]));
          if (pair->bytes[part] > 0 && pair->first_part_s_per_byte < 0)
            pair->first_part_s_per_byte = s_per_byte;
          // Parts of >= 1 MiB teach the rate later pairs plan with.
          if (pair->bytes[part] >= (1u << 20) && pair->comm_group >= 0)
            learned_rate_[pair->comm_group] = s_per_byte / stretch;
          if (extra > 0)
            ctx.simulator().schedule(extra, [this, &ctx, pair, part, compute0] {
              end_transfer(ctx, pair, part, compute0);
            });
          else
            end_transfer(ctx, pair, part, compute0);
        });
  };
  if (delay > 0)
    ctx.simulator().schedule(delay, std::move(go));
  else
    go();
}

// The part has moved its bytes at the rate NCCL reaches on its CTAs; for the time a group of
// the op ran beside that transfer it is slower still (the GEMM's memory traffic), charged
// as one extra interval.
void PairedDesign::end_transfer(ExecContext& ctx, const PairRef& pair, int part,
                                double compute0) {
  const double beside = compute_busy_s(*pair, ctx.simulator().now()) - compute0;
  const double extra = beside * (pair->s.comm_slowdown_beside_compute - 1.0);
  if (extra > 0)
    ctx.simulator().schedule(extra, [this, &ctx, pair, part] { part_done(ctx, pair, part); });
  else
    part_done(ctx, pair, part);
}

void PairedDesign::part_done(ExecContext& ctx, const PairRef& pair, int part) {
  if (--pair->in_flight == 0) {
    pair->busy_accum_s += ctx.simulator().now() - pair->busy_since_s;
    pair->busy_since_s = -1;
  }
  ++pair->parts_done;
  pair->arrived[part] = 1;
  const int n = static_cast<int>(pair->bytes.size());
  // A consumer's first group was enqueued before its collective started (its kernel
  // waits for part 0): it takes the SMs as soon as part 0 lands, before the next part's
  // NCCL kernel can (as validate's decomposed all-gather rows were predicted).
  if (!pair->producer && pair->parts_done == 1) run_next_group(ctx, pair);
  // The collective is complete when its last part has landed, producer or consumer.
  if (pair->parts_done == n) {
    pair->comm_finished = true;
    if (pair->compute_finished) erase_pair_ops(*pair);
    ctx.finish_op(pair->program, pair->comm);
  }
  if (pair->s.serial_parts) {
    pair->comm_busy = false;
    if (!pair->queued.empty()) {
      const int next = pair->queued.front();
      pair->queued.pop_front();
      // The next NCCL kernel of the stream needs SMs again.
      if (pair->s.comm_waits_for_running_group && pair->compute_running())
        pair->waiting_for_sms.push_back(next);
      else
        launch_part(ctx, pair, next);
    }
  }
  if (!pair->producer) run_next_group(ctx, pair);
}

OpNode op_piece(const OpNode& op, double share) {
  OpNode piece = op;
  const double flops = ComputeModel::op_flops(op);
  const double bytes = ComputeModel::op_bytes(op);
  piece.flops = flops * share;
  double piece_bytes = bytes * share;
  if (op.kind == OpKind::Gemm) {
    piece.gemm.m = std::max<std::int64_t>(1, std::llround(static_cast<double>(op.gemm.m) * share));
    // Every piece reads the whole weight matrix.
    const double weights = static_cast<double>(op.gemm.k) * static_cast<double>(op.gemm.n) *
                           static_cast<double>(op.gemm.batch) * bytes_per_element(op.precision);
    if (weights < bytes) piece_bytes = (bytes - weights) * share + weights;
  } else if (op.kind == OpKind::Gemv) {
    piece.gemm.n = std::max<std::int64_t>(1, std::llround(static_cast<double>(op.gemm.n) * share));
  }
  piece.bytes = static_cast<std::uint64_t>(std::llround(std::max(1.0, piece_bytes)));
  return piece;
}

double gemm_tiles(const OpNode& op, double tile_m, double tile_n) {
  return std::ceil(static_cast<double>(op.gemm.m) / tile_m) *
         std::ceil(static_cast<double>(op.gemm.n) / tile_n) *
         static_cast<double>(std::max<std::int64_t>(1, op.gemm.batch));
}

std::vector<int> doubling_groups(int total, int max_groups) {
  std::vector<int> sizes;
  if (total <= 0) return sizes;
  max_groups = std::max(1, max_groups);
  for (int size = 1, left = total; left > 0; size *= 2) {
    sizes.push_back(std::min(size, left));
    left -= sizes.back();
  }
  if (static_cast<int>(sizes.size()) <= max_groups) return sizes;
  if (max_groups == 1) return {total};
  // Too many: a one-wave head, the rest in near-equal groups.
  sizes.assign(1, 1);
  const int rest = total - 1, groups = max_groups - 1;
  for (int g = 0; g < groups; ++g) sizes.push_back(rest / groups + (g < rest % groups ? 1 : 0));
  sizes.erase(std::remove(sizes.begin(), sizes.end(), 0), sizes.end());
  return sizes;
}

}  // namespace overlapsim::sim
