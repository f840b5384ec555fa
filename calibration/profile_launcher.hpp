#pragma once
// Times collectives by a profile's measurements inside a simulation: a sim::CollectiveLauncher
// for StepExecutor::set_collective_launcher (sim/ does not know calibration/; the app and
// the validator compose them). Each collective takes one of three paths (docs/simulate.md,
// "How collectives are timed"):
//
//   curve      the communicator lies within one host and the profile has an intra-node curve
//              for the op measured at this communicator size (or for any size) and CTA
//              limit: it finishes latency + bytes * busbw_factor / bus_bandwidth after it
//              starts (CollectiveCurve::time_s), times the curve's in_compute_loop_factor
//              unless the options say it runs alone. No bytes cross the network's links.
//   efficiency the communicator lies within one host of NVLink-class links (nvlink_Bps > 0)
//              and the profile measured the op at another size: after the measured curve's
//              latency for that message size the collective runs on the flow network, and
//              its network time is stretched by nvlink_Bps / the curve's bus bandwidth at
//              that size (the efficiency NCCL achieved on the measured machine's links,
//              which the cluster names as this profile's GPUs), and by the curve's
//              in_compute_loop_factor unless it runs alone.
//   cluster    everything else (communicators across hosts, ops the profile never measured,
//              hosts that are not NVLink-class): the flow network on the cluster's cited links.
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "sim/collectives/collective.hpp"
#include "sim/compute/collective_profile.hpp"
#include "sim/exec/step_executor.hpp"
#include "sim/network/network_api.hpp"

namespace overlapsim::calibration {

enum class CollectivePath { Curve, Efficiency, Cluster };
const char* to_string(CollectivePath path);  // "profile_curve", "flow_efficiency", "flow_cluster"

struct CollectiveTimingOptions {
  int ctas = 0;                  // NCCL CTA limit of the curves to use (0: NCCL's default)
  sim::CollectiveTuning tuning;  // for the network paths
  // Per-direction NVLink rate of one GPU of the cluster; 0: hosts without NVLink-class
  // links (no efficiency path). Its citation goes into the labels.
  double nvlink_Bps = 0;
  std::string nvlink_citation;
  // The collectives run between compute kernels, as in a training step or a pair loop: the
  // measured paths take the curve's in_compute_loop_factor. False: timed as nccl-tests
  // times them, back to back with themselves (validate's rows of collectives alone).
  bool in_compute_loop = true;
};

// One class of collectives (op, communicator size, within one host or not) and how it was
// timed, for reports.
struct CollectiveClassUse {
  sim::CollectiveOp op = sim::CollectiveOp::AllReduce;
  int ranks = 0;
  bool intra_host = true;
  CollectivePath path = CollectivePath::Cluster;
  std::string label;  // "allreduce n=8 intra-host"
  std::string how;    // "flow network x efficiency 0.58-0.76 (...)"
  long launches = 0;  // includes folded ranks' background images
};

class ProfileCollectiveTimer {
 public:
  // Keeps references to `profile` and `net`: they must outlive the timer and its launcher.
  ProfileCollectiveTimer(const sim::CollectiveProfile& profile, sim::NetworkApi& net,
                         CollectiveTimingOptions options = {});

  // A launcher bound to this timer (which must outlive it).
  sim::CollectiveLauncher launcher();
  void launch(const sim::CollectiveRequest& req, std::function<void()> on_done);

  // The path a collective of `op` over `ranks` ranks takes.
  CollectivePath path(sim::CollectiveOp op, int ranks, bool intra_host) const;
  bool intra_host(const std::vector<int>& ranks) const;
  // Whether the collective's time includes NCCL's fixed cost per call (the measured paths do).
  bool charges_call_latency(sim::CollectiveOp op, int ranks, bool intra_host) const {
    return path(op, ranks, intra_host) != CollectivePath::Cluster;
  }
  // How the path of a class is computed, in words with its sources.
  std::string describe(sim::CollectiveOp op, int ranks, bool intra_host) const;

  // Classes launched so far, in first-launch order.
  std::vector<CollectiveClassUse> uses() const;
  long launches(CollectivePath path) const { return launches_[static_cast<int>(path)]; }

 private:
  const sim::CollectiveCurve* exact_curve(sim::CollectiveOp op, int ranks) const;
  const sim::CollectiveCurve* nearest_curve(sim::CollectiveOp op, int ranks) const;
  // The curve's in_compute_loop_factor where the options put the collectives between
  // compute kernels, else 1; and how describe() names it ("" for 1).
  double loop_factor(const sim::CollectiveCurve& c) const;
  std::string loop_factor_text(const sim::CollectiveCurve& c) const;

  const sim::CollectiveProfile& profile_;
  sim::NetworkApi& net_;
  CollectiveTimingOptions options_;
  long launches_[3] = {0, 0, 0};
  std::map<std::tuple<int, int, bool>, std::size_t> class_index_;
  std::vector<CollectiveClassUse> classes_;
};

// For validation: a profile curve where one exists at this size and CTA limit, else the
// cluster's flow network (no efficiency path). Kept for the validator's rows.
struct ProfileLauncherStats {
  int by_curve = 0;    // collectives timed by a profile curve
  int by_network = 0;  // collectives handed to sim::start_collective
};

// Keeps references to `profile`, `net` and `stats` (may be null): they must outlive it.
// Curves are timed between compute kernels (in_compute_loop_factor) unless `alone`.
sim::CollectiveLauncher profile_collective_launcher(const sim::CollectiveProfile& profile,
                                                    sim::NetworkApi& net, int ctas = 0,
                                                    sim::CollectiveTuning tuning = {},
                                                    ProfileLauncherStats* stats = nullptr,
                                                    bool alone = false);

}  // namespace overlapsim::calibration
