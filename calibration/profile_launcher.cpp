#include "calibration/profile_launcher.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "config/units.hpp"
#include "sim/engine/simulator.hpp"

namespace overlapsim::calibration {

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

ProfileCollectiveTimer::ProfileCollectiveTimer(const sim::CollectiveProfile& profile,
                                               sim::NetworkApi& net,
                                               CollectiveTimingOptions options)
    : profile_(profile), net_(net), options_(std::move(options)) {}

const sim::CollectiveCurve* ProfileCollectiveTimer::exact_curve(sim::CollectiveOp op,
                                                                int ranks) const {
  const sim::CollectiveCurve* c =
      profile_.find(op, sim::Algorithm::Auto, sim::CommScope::IntraNode, ranks, options_.ctas);
  // Only a curve measured at this communicator size (or for any size) stands for it.
  if (c && (c->ranks == ranks || c->ranks == 0) && c->ctas == options_.ctas) return c;
  return nullptr;
}

const sim::CollectiveCurve* ProfileCollectiveTimer::nearest_curve(sim::CollectiveOp op,
                                                                  int ranks) const {
  // The curve measured at the communicator size closest to `ranks`, at this CTA limit.
  const sim::CollectiveCurve* c =
      profile_.find(op, sim::Algorithm::Auto, sim::CommScope::IntraNode, ranks, options_.ctas);
  return c && c->ctas == options_.ctas && !c->segments.empty() ? c : nullptr;
}

bool ProfileCollectiveTimer::intra_host(const std::vector<int>& ranks) const {
  if (ranks.empty()) return false;
  const int host = net_.host_of(ranks.front());
  for (int r : ranks)
    if (net_.host_of(r) != host) return false;
  return true;
}

CollectivePath ProfileCollectiveTimer::path(sim::CollectiveOp op, int ranks,
                                            bool intra_host) const {
  if (!intra_host) return CollectivePath::Cluster;
  if (exact_curve(op, ranks)) return CollectivePath::Curve;
  if (options_.nvlink_Bps > 0 && nearest_curve(op, ranks)) return CollectivePath::Efficiency;
  return CollectivePath::Cluster;
}

double ProfileCollectiveTimer::loop_factor(const sim::CollectiveCurve& c) const {
  return options_.in_compute_loop ? c.in_loop_factor() : 1.0;
}

std::string ProfileCollectiveTimer::loop_factor_text(const sim::CollectiveCurve& c) const {
  const double f = loop_factor(c);
  if (f == 1.0) return "";
  return fmt::format(", x {:.4g} between compute kernels ({}: {})", f,
                     sim::to_string(c.in_compute_loop_factor->source.kind),
                     c.in_compute_loop_factor->source.citation);
}

std::string ProfileCollectiveTimer::describe(sim::CollectiveOp op, int ranks,
                                             bool intra_host) const {
  switch (path(op, ranks, intra_host)) {
    case CollectivePath::Curve: {
      const sim::CollectiveCurve* c = exact_curve(op, ranks);
      return fmt::format("profile curve n={} ({}: {}){}", c->ranks == 0 ? ranks : c->ranks,
                         sim::to_string(c->source.kind), c->source.citation, loop_factor_text(*c));
    }
    case CollectivePath::Efficiency: {
      const sim::CollectiveCurve* c = nearest_curve(op, ranks);
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
          "flow network x efficiency {} derived from the {} n={} curve (bus bandwidth per message "
          "size / NVLink {:.0f} GB/s: {}), plus the curve's latency at that size ({}: {}; "
          "NVLink: {}){}",
          range, sim::to_string(op), c->ranks, options_.nvlink_Bps / 1e9, fmt::join(effs, ", "),
          sim::to_string(c->source.kind), c->source.citation, options_.nvlink_citation,
          loop_factor_text(*c));
    }
    default:
      return intra_host
                 ? "flow network, cluster links (cited; the profile has no curve for this op)"
                 : "flow network, cluster links (cited)";
  }
}

sim::CollectiveLauncher ProfileCollectiveTimer::launcher() {
  return [this](const sim::CollectiveRequest& req, std::function<void()> on_done) {
    launch(req, std::move(on_done));
  };
}

void ProfileCollectiveTimer::launch(const sim::CollectiveRequest& req,
                                    std::function<void()> on_done) {
  const int n = static_cast<int>(req.ranks.size());
  const bool one_host = intra_host(req.ranks);
  const CollectivePath p = path(req.op, n, one_host);
  ++launches_[static_cast<int>(p)];
  const auto key = std::make_tuple(static_cast<int>(req.op), n, one_host);
  auto it = class_index_.find(key);
  if (it == class_index_.end()) {
    it = class_index_.emplace(key, classes_.size()).first;
    CollectiveClassUse use;
    use.op = req.op;
    use.ranks = n;
    use.intra_host = one_host;
    use.path = p;
    use.label = fmt::format("{} n={} {}", sim::to_string(req.op), n,
                            one_host ? "intra-host" : "inter-host");
    use.how = describe(req.op, n, one_host);
    classes_.push_back(std::move(use));
  }
  ++classes_[it->second].launches;

  sim::Simulator& clock = net_.simulator();
  switch (p) {
    case CollectivePath::Curve: {
      const sim::CollectiveCurve* c = exact_curve(req.op, n);
      clock.schedule(c->time_s(req.bytes, n) * loop_factor(*c), std::move(on_done));
      return;
    }
    case CollectivePath::Efficiency: {
      const sim::CollectiveCurve* c = nearest_curve(req.op, n);
      const sim::CollectiveSegment& seg = c->segment_for(req.bytes);
      // Measured busbw above the link rate (NVLS, say) is not a reason to run faster than
      // the network allows: no stretch then.
      const double stretch = std::max(1.0, options_.nvlink_Bps / seg.bus_bandwidth_Bps);
      // Between compute kernels the whole collective, latency and transfer, takes the
      // measured curve's factor.
      const double factor = loop_factor(*c);
      clock.schedule(seg.latency_s * factor, [this, req, stretch, factor,
                                              done = std::move(on_done)]() mutable {
        const double t0 = net_.simulator().now();
        sim::start_collective(
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
      sim::start_collective(net_, req, std::move(on_done), options_.tuning);
  }
}

std::vector<CollectiveClassUse> ProfileCollectiveTimer::uses() const { return classes_; }

sim::CollectiveLauncher profile_collective_launcher(const sim::CollectiveProfile& profile,
                                                    sim::NetworkApi& net, int ctas,
                                                    sim::CollectiveTuning tuning,
                                                    ProfileLauncherStats* stats, bool alone) {
  return [&profile, &net, ctas, tuning, stats, alone](const sim::CollectiveRequest& req,
                                                      std::function<void()> on_done) {
    bool one_host = !req.ranks.empty();
    for (int r : req.ranks) one_host = one_host && net.host_of(r) == net.host_of(req.ranks[0]);
    const int n = static_cast<int>(req.ranks.size());
    const sim::CollectiveCurve* curve =
        one_host ? profile.find(req.op, sim::Algorithm::Auto, sim::CommScope::IntraNode, n, ctas)
                 : nullptr;
    // Only a curve measured at this communicator size (or for any size) stands for it.
    if (curve && (curve->ranks == n || curve->ranks == 0) && (curve->ctas == ctas)) {
      if (stats) ++stats->by_curve;
      net.simulator().schedule(
          alone ? curve->time_s(req.bytes, n) : curve->time_in_compute_loop_s(req.bytes, n),
          std::move(on_done));
      return;
    }
    if (stats) ++stats->by_network;
    sim::start_collective(net, req, std::move(on_done), tuning);
  };
}

}  // namespace overlapsim::calibration
