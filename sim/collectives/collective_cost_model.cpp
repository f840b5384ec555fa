#include "sim/collectives/collective_cost_model.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "config/units.hpp"
#include "sim/collectives/algorithms.hpp"
#include "sim/collectives/nccl_call_cost.hpp"
#include "sim/engine/simulator.hpp"

namespace overlapsim::sim {

const char* to_string(CollectivePath path) {
  switch (path) {
    case CollectivePath::Curve:
      return "profile_curve";
    case CollectivePath::Efficiency:
      return "flow_efficiency";
    default:
      return "flow_cluster";
  }
}

CollectiveCostModel::CollectiveCostModel(const CollectiveProfile& profile, NetworkApi& net,
                                         CollectiveTimingOptions options)
    : profile_(profile), net_(net), options_(std::move(options)) {}

const CollectiveCurve* CollectiveCostModel::exact_curve(CollectiveOp op, int ranks) const {
  for (const ExactCurve& e : exact_curves_)
    if (e.op == op && e.ranks == ranks) return e.curve;
  const CollectiveCurve* c =
      profile_.find(op, Algorithm::Auto, CommScope::IntraNode, ranks, options_.ctas);
  // Only a curve measured at this communicator size (or for any size) stands for it.
  if (c && !((c->ranks == ranks || c->ranks == 0) && c->ctas == options_.ctas)) c = nullptr;
  if (exact_curves_.size() >= 64) exact_curves_.clear();  // few (op, size) pairs in a step
  exact_curves_.push_back({op, ranks, c});
  return c;
}

const CollectiveCurve* CollectiveCostModel::nearest_curve(CollectiveOp op, int ranks) const {
  // The curve measured at the communicator size closest to `ranks`, at this CTA limit.
  const CollectiveCurve* c =
      profile_.find(op, Algorithm::Auto, CommScope::IntraNode, ranks, options_.ctas);
  return c && c->ctas == options_.ctas && !c->segments.empty() ? c : nullptr;
}

const CollectiveCurve* CollectiveCostModel::efficiency_curve(CollectiveOp op, int ranks,
                                                             bool* as_alltoall) const {
  if (as_alltoall) *as_alltoall = false;
  if (const CollectiveCurve* own = nearest_curve(op, ranks)) return own;
  if (op != CollectiveOp::SendRecv || !options_.sendrecv_from_alltoall) return nullptr;
  const CollectiveCurve* a2a = nearest_curve(CollectiveOp::AllToAll, 2);
  if (a2a && as_alltoall) *as_alltoall = true;
  return a2a;
}

bool CollectiveCostModel::intra_host(const std::vector<int>& ranks) const {
  if (ranks.empty()) return false;
  const int host = net_.host_of(ranks.front());
  for (int r : ranks)
    if (net_.host_of(r) != host) return false;
  return true;
}

CollectivePath CollectiveCostModel::path(CollectiveOp op, int ranks, bool intra_host) const {
  if (!measured_.empty()) return CollectivePath::Curve;
  if (!intra_host) return CollectivePath::Cluster;
  if (exact_curve(op, ranks)) return CollectivePath::Curve;
  if (options_.nvlink_Bps > 0 && efficiency_curve(op, ranks)) return CollectivePath::Efficiency;
  return CollectivePath::Cluster;
}

double CollectiveCostModel::loop_factor(const CollectiveCurve& c) const {
  return options_.in_compute_loop ? c.in_loop_factor() : 1.0;
}

std::string CollectiveCostModel::loop_factor_text(const CollectiveCurve& c) const {
  const double f = loop_factor(c);
  if (f == 1.0) return "";
  return fmt::format(", x {:.4g} between compute kernels ({}: {})", f,
                     to_string(c.in_compute_loop_factor->source.kind),
                     c.in_compute_loop_factor->source.citation);
}

std::string CollectiveCostModel::describe(CollectiveOp op, int ranks, bool intra_host) const {
  switch (path(op, ranks, intra_host)) {
    case CollectivePath::Curve: {
      if (!measured_.empty())
        return fmt::format("measured alone times at {} message size(s)", measured_.size());
      const CollectiveCurve* c = exact_curve(op, ranks);
      return fmt::format("profile curve n={} ({}: {}){}", c->ranks == 0 ? ranks : c->ranks,
                         to_string(c->source.kind), c->source.citation, loop_factor_text(*c));
    }
    case CollectivePath::Efficiency: {
      bool as_alltoall = false;
      const CollectiveCurve* c = efficiency_curve(op, ranks, &as_alltoall);
      std::vector<std::string> effs;
      double lo = 1e300, hi = 0;
      for (const auto& s : c->segments) {
        const double e = std::min(1.0, s.bus_bandwidth_Bps / options_.nvlink_Bps);
        lo = std::min(lo, e);
        hi = std::max(hi, e);
        effs.push_back(fmt::format("{:.2f} from {}", e, config::format_bytes(s.min_bytes)));
      }
      const std::string range =
          lo == hi ? fmt::format("{:.2f}", lo) : fmt::format("{:.2f}-{:.2f}", lo, hi);
      return fmt::format(
          "flow network x efficiency {} derived from the {} n={} curve{} (bus bandwidth per "
          "message size / NVLink {:.0f} GB/s: {}), plus the curve's latency at that size ({}: "
          "{}; NVLink: {}){}",
          range, to_string(c->op), c->ranks,
          as_alltoall ? " (NCCL's all-to-all is grouped send/recv; read at the all-to-all "
                        "whose piece per peer is the send)"
                      : "",
          options_.nvlink_Bps / 1e9, fmt::join(effs, ", "), to_string(c->source.kind),
          c->source.citation, options_.nvlink_citation, loop_factor_text(*c));
    }
    default: {
      const std::string base =
          intra_host ? "flow network, cluster links (cited; the profile has no curve for this op)"
                     : "flow network, cluster links (cited)";
      if (!options_.nccl_costs) return base;
      const std::string nvlink =
          intra_host && nccl_nvlink_stretch() > 1
              ? fmt::format(", NVLink at the {:.0f} GB/s NCCL reaches ({}) of {:.0f} GB/s",
                            options_.nccl_nvlink_Bps / 1e9, options_.nccl_nvlink_citation,
                            options_.nvlink_Bps / 1e9)
              : "";
      return base +
             ", plus NCCL's latency and protocol efficiency by algorithm and protocol "
             "(NCCL 2.30.7 src/graph/tuning.cc; docs/collectives.md)" +
             (op == CollectiveOp::AllToAll && !intra_host ? ", all-to-all through PXN" : "") +
             nvlink;
    }
  }
}

void CollectiveCostModel::set_measured_times(MeasuredTimes measured) {
  std::sort(measured.begin(), measured.end());
  measured_ = std::move(measured);
  comm_infos_.clear();  // the paths change
  comm_slots_.clear();
}

double CollectiveCostModel::measured_time_s(std::uint64_t bytes) const {
  const MeasuredTimes& pts = measured_;
  const double x = static_cast<double>(bytes);
  if (pts.size() == 1 || x <= static_cast<double>(pts.front().first))
    return pts.front().second * x / static_cast<double>(pts.front().first);
  for (std::size_t i = 1; i < pts.size(); ++i) {
    if (x <= static_cast<double>(pts[i].first) || i + 1 == pts.size()) {
      const double x0 = static_cast<double>(pts[i - 1].first), y0 = pts[i - 1].second;
      const double x1 = static_cast<double>(pts[i].first), y1 = pts[i].second;
      return y0 + (x - x0) / (x1 - x0) * (y1 - y0);
    }
  }
  return pts.back().second;
}

std::optional<double> CollectiveCostModel::call_time_s(CollectiveOp op, std::uint64_t bytes,
                                                       int ranks, bool intra_host) const {
  if (path(op, ranks, intra_host) != CollectivePath::Curve) return std::nullopt;
  return curve_path_time_s(op, bytes, ranks);
}

double CollectiveCostModel::curve_path_time_s(CollectiveOp op, std::uint64_t bytes,
                                              int ranks) const {
  if (!measured_.empty()) return measured_time_s(bytes);
  const CollectiveCurve* c = exact_curve(op, ranks);
  return c->time_s(bytes, ranks) * loop_factor(*c);
}

std::optional<double> CollectiveCostModel::cta_limited_stretch(CollectiveOp op, std::uint64_t bytes,
                                                               int ranks, int ctas) const {
  // Measured curves of NCCL on `ctas` CTAs and on its default, where the profile has both
  // for this op (intra-node, the communicator's size or any): the first of each.
  const CollectiveCurve* limited = nullptr;
  const CollectiveCurve* free_run = nullptr;
  for (const auto& c : profile_.curves) {
    if (c.op != op || c.scope != CommScope::IntraNode || (c.ranks != 0 && c.ranks != ranks))
      continue;
    if (c.ctas == ctas && !limited) limited = &c;
    if (c.ctas == 0 && !free_run) free_run = &c;
  }
  if (!limited || !free_run || bytes == 0) return std::nullopt;
  return std::max(1.0, limited->time_s(bytes, ranks) / free_run->time_s(bytes, ranks));
}

CollectiveLauncher CollectiveCostModel::launcher() {
  return [this](const CollectiveRequest& req, std::function<void()> on_done) {
    launch(req, std::move(on_done));
  };
}

namespace {
// Bounds on what comm_info keeps (communicators, and calls per communicator); past them the
// table (or the list) starts over.
constexpr std::size_t kMaxCommInfos = std::size_t{1} << 14;
constexpr std::size_t kMaxCallsPerComm = 64;

// splitmix64's finaliser (Steele, Lea, Flood, OOPSLA 2014).
std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

std::uint64_t comm_hash(const CollectiveRequest& req) {
  std::uint64_t h = mix(static_cast<std::uint64_t>(req.op) << 32 | req.ranks.size());
  for (int r : req.ranks) h = mix(h ^ static_cast<std::uint32_t>(r));
  return h;
}
}  // namespace

bool CollectiveCostModel::CommInfo::same_comm(const CollectiveRequest& req) const {
  if (op != req.op || num_ranks != req.ranks.size()) return false;
  if (num_ranks <= kFewRanks)
    return std::equal(req.ranks.begin(), req.ranks.end(), few_ranks.begin());
  return ranks == req.ranks;
}

CollectiveCostModel::CommInfo& CollectiveCostModel::comm_info(const CollectiveRequest& req) {
  const std::uint64_t hash = comm_hash(req);
  if (comm_slots_.empty()) comm_slots_.resize(1024);
  std::size_t mask = comm_slots_.size() - 1;
  for (std::size_t i = hash & mask; comm_slots_[i].record != 0; i = (i + 1) & mask) {
    const CommSlot& slot = comm_slots_[i];
    if (slot.hash == hash && comm_infos_[slot.record - 1].same_comm(req))
      return comm_infos_[slot.record - 1];
  }

  CommInfo info;
  info.op = req.op;
  info.num_ranks = static_cast<std::uint32_t>(req.ranks.size());
  if (req.ranks.size() <= CommInfo::kFewRanks)
    std::copy(req.ranks.begin(), req.ranks.end(), info.few_ranks.begin());
  else
    info.ranks = req.ranks;
  const int n = static_cast<int>(req.ranks.size());
  const bool one_host = intra_host(req.ranks);
  info.path = path(req.op, n, one_host);
  const auto class_key = std::make_tuple(static_cast<int>(req.op), n, one_host);
  auto it = class_index_.find(class_key);
  if (it == class_index_.end()) {
    it = class_index_.emplace(class_key, classes_.size()).first;
    CollectiveClassUse use;
    use.op = req.op;
    use.ranks = n;
    use.intra_host = one_host;
    use.path = info.path;
    use.label =
        fmt::format("{} n={} {}", to_string(req.op), n, one_host ? "intra-host" : "inter-host");
    use.how = describe(req.op, n, one_host);
    classes_.push_back(std::move(use));
  }
  info.class_index = it->second;

  if (comm_infos_.size() >= kMaxCommInfos) {
    comm_infos_.clear();
    comm_slots_.assign(comm_slots_.size(), CommSlot{});
  } else if (2 * (comm_infos_.size() + 1) > comm_slots_.size()) {
    std::vector<CommSlot> old(comm_slots_.size() * 2);
    old.swap(comm_slots_);
    mask = comm_slots_.size() - 1;
    for (const CommSlot& slot : old) {
      if (slot.record == 0) continue;
      std::size_t i = slot.hash & mask;
      while (comm_slots_[i].record != 0) i = (i + 1) & mask;
      comm_slots_[i] = slot;
    }
  }
  mask = comm_slots_.size() - 1;
  std::size_t i = hash & mask;
  while (comm_slots_[i].record != 0) i = (i + 1) & mask;
  comm_infos_.push_back(std::move(info));
  comm_slots_[i] = CommSlot{hash, static_cast<std::uint32_t>(comm_infos_.size())};
  return comm_infos_.back();
}

CollectiveCostModel::CommInfo::Call& CollectiveCostModel::call_of(CommInfo& info,
                                                                  const CollectiveRequest& req) {
  if (info.has_first_call && info.first_call.same(req)) return info.first_call;
  for (CommInfo::Call& c : info.more_calls)
    if (c.same(req)) return c;
  CommInfo::Call call{req.algo,
                      req.bytes,
                      req.root,
                      req.peer,
                      detail::nccl_call_cost(req, net_),
                      std::make_shared<PlanSlot>()};
  if (!info.has_first_call) {
    info.first_call = std::move(call);
    info.has_first_call = true;
    return info.first_call;
  }
  if (info.more_calls.size() >= kMaxCallsPerComm) info.more_calls.clear();
  info.more_calls.push_back(std::move(call));
  return info.more_calls.back();
}

void CollectiveCostModel::launch(const CollectiveRequest& req, std::function<void()> on_done) {
  const int n = static_cast<int>(req.ranks.size());
  CommInfo& info = comm_info(req);
  const CollectivePath p = info.path;
  ++launches_[static_cast<int>(p)];
  ++classes_[info.class_index].launches;

  Simulator& clock = net_.simulator();
  switch (p) {
    case CollectivePath::Curve:
      if (info.curve_time_s < 0 || info.curve_bytes != req.bytes) {
        info.curve_time_s = curve_path_time_s(req.op, req.bytes, n);
        info.curve_bytes = req.bytes;
      }
      clock.schedule(info.curve_time_s, std::move(on_done));
      return;
    case CollectivePath::Efficiency: {
      bool as_alltoall = false;
      const CollectiveCurve* c = efficiency_curve(req.op, n, &as_alltoall);
      // A send read off the all-to-all curve: the all-to-all (nccl-tests' size, its own
      // piece included) whose piece per peer is this send.
      const std::uint64_t curve_bytes =
          as_alltoall ? req.bytes * static_cast<std::uint64_t>(std::max(2, c->ranks)) : req.bytes;
      const CollectiveSegment& seg = c->segment_for(curve_bytes);
      // Measured busbw above the link rate (NVLS, say) is not a reason to run faster than
      // the network allows: no stretch then.
      const double stretch = std::max(1.0, options_.nvlink_Bps / seg.bus_bandwidth_Bps);
      // Between compute kernels the whole collective, latency and transfer, takes the
      // measured curve's factor.
      const double factor = loop_factor(*c);
      clock.schedule(seg.latency_s * factor, [this, req, stretch, factor,
                                              done = std::move(on_done)]() mutable {
        const double t0 = net_.simulator().now();
        start_collective(
            net_, req,
            [this, t0, stretch, factor, done = std::move(done)]() mutable {
              const double extra = (net_.simulator().now() - t0) * (stretch * factor - 1);
              if (extra > 0)
                net_.simulator().schedule(extra, std::move(done));
              else
                done();
            },
            options_.tuning);
      });
      return;
    }
    default:
      if (options_.nccl_costs)
        launch_with_nccl_costs(req, call_of(info, req), std::move(on_done),
                               classes_[info.class_index].intra_host ? nccl_nvlink_stretch() : 1);
      else
        start_collective(net_, req, std::move(on_done), options_.tuning);
  }
}

void CollectiveCostModel::launch_background(std::span<const CollectiveRequest> requests) {
  struct Batch {
    double latency_s = 0;
    std::vector<Transfer> transfers;
  };
  std::vector<Batch> batches;
  for (const CollectiveRequest& req : requests) {
    if (req.op != CollectiveOp::SendRecv || !options_.nccl_costs || req.bytes == 0 ||
        req.ranks.size() != 2 || req.peer != 1) {
      launch(req, [] {});
      continue;
    }
    validate(req, net_);  // as start_collective would, before anything is counted
    CommInfo& info = comm_info(req);
    if (info.path != CollectivePath::Cluster) {
      launch(req, [] {});
      continue;
    }
    ++launches_[static_cast<int>(info.path)];
    ++classes_[info.class_index].launches;
    // What launch_with_nccl_costs waits before the flow starts; the stretch it adds after
    // the transfer only delays a completion nobody waits for.
    const double latency_s = call_of(info, req).cost.latency_s;
    auto batch = std::find_if(batches.begin(), batches.end(),
                              [&](const Batch& b) { return b.latency_s == latency_s; });
    if (batch == batches.end()) batch = batches.insert(batches.end(), Batch{latency_s, {}});
    batch->transfers.push_back(Transfer{req.ranks[0], req.ranks[1], req.bytes});
  }
  for (Batch& b : batches) {
    net_.simulator().schedule(b.latency_s, [this, transfers = std::move(b.transfers)] {
      net_.transfer_background(transfers);
    });
  }
}

double CollectiveCostModel::nccl_nvlink_stretch() const {
  if (!(options_.nvlink_Bps > 0) || !(options_.nccl_nvlink_Bps > 0)) return 1;
  return std::max(1.0, options_.nvlink_Bps / options_.nccl_nvlink_Bps);
}

void CollectiveCostModel::launch_with_nccl_costs(const CollectiveRequest& req, CommInfo::Call& call,
                                                 std::function<void()> on_done,
                                                 double nvlink_stretch) {
  const detail::NcclCallCost& cost = call.cost;
  const double stretch = cost.pipeline_stretch / cost.efficiency * nvlink_stretch;
  const double wire_s = cost.wire_latency_s;
  // After the latency the plan runs; `done` after its groups, stretched. Only the transfer
  // part is stretched: hop latencies do not depend on the protocol.
  auto start = [this, stretch, wire_s](std::shared_ptr<const detail::Plan> plan,
                                       std::function<void()> done) {
    const double t0 = net_.simulator().now();
    detail::run_plan(net_, std::move(plan),
                     [this, t0, stretch, wire_s, done = std::move(done)]() mutable {
                       const double moving_s = std::max(0.0, net_.simulator().now() - t0 - wire_s);
                       const double extra = moving_s * (stretch - 1);
                       if (extra > 0)
                         net_.simulator().schedule(extra, std::move(done));
                       else
                         done();
                     });
  };
  if (call.plan->plan) {
    net_.simulator().schedule(cost.latency_s,
                              [start, plan = call.plan->plan, done = std::move(on_done)]() mutable {
                                start(std::move(plan), std::move(done));
                              });
    return;
  }
  // The first launch of this call builds its plan when it starts, as start_collective does.
  CollectiveRequest run = req;
  run.algo = cost.algo;
  CollectiveTuning tuning = options_.tuning;
  tuning.pxn = cost.pxn;
  net_.simulator().schedule(cost.latency_s, [this, start, run, tuning, slot = call.plan,
                                             done = std::move(on_done)]() mutable {
    auto plan = std::make_shared<const detail::Plan>(detail::collective_plan(net_, run, tuning));
    slot->plan = plan;
    start(std::move(plan), std::move(done));
  });
}

std::vector<CollectiveClassUse> CollectiveCostModel::uses() const { return classes_; }

}  // namespace overlapsim::sim
