#pragma once
// The one place that answers "how long does this collective take" inside a simulation:
// the profile's measured curves where they apply, else the flow network (docs/simulate.md,
// "How collectives are timed"). The step executor launches every collective through it,
// the overlap designs ask it their planning questions (time of a call, per-call latency,
// intra- or inter-host, the rate on a CTA limit), and reports list how each class of
// collective was timed. Each collective takes one of three paths:
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
//              hosts that are not NVLink-class): the flow network on the cluster's cited links,
//              plus NCCL's own costs on top (nccl_call_cost.hpp, docs/collectives.md): after
//              the software latency of the (algorithm, protocol) NCCL would pick (launch and
//              per-step, beyond the wire the flows pay; for all-to-all a proxy post per
//              network peer) the collective runs on the flow network, all-to-all across
//              hosts routed through PXN, and its network time is stretched by 1 / the
//              protocol's and the NIC path's bandwidth efficiency and, for NVLSTree, by its
//              pipeline fill. `nccl_costs = false` in the options gives the bare flows.
//
// A model may instead be given measured (bytes, seconds) points for every collective
// (validate replays a measured pair with the collective's own alone times): those take the
// curve path, linear between the points and in proportion beyond them.
#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "sim/collectives/collective.hpp"
#include "sim/collectives/nccl_call_cost.hpp"
#include "sim/network/network_api.hpp"
#include "sim/profile/collective_profile.hpp"

namespace overlapsim::sim::detail {
struct Plan;
}  // namespace overlapsim::sim::detail

namespace overlapsim::sim {

// Starts a collective (or a SendRecv as a 2-rank request, ranks[0] -> ranks[1]) and calls
// on_done once it has completed.
using CollectiveLauncher =
    std::function<void(const CollectiveRequest& request, std::function<void()> on_done)>;

enum class CollectivePath { Curve, Efficiency, Cluster };
const char* to_string(CollectivePath path);  // "profile_curve", "flow_efficiency", "flow_cluster"

struct CollectiveTimingOptions {
  int ctas = 0;             // NCCL CTA limit of the curves to use (0: NCCL's default)
  CollectiveTuning tuning;  // for the network paths
  // Per-direction NVLink rate of one GPU of the cluster; 0: hosts without NVLink-class
  // links (no efficiency path). Its citation goes into the labels.
  double nvlink_Bps = 0;
  std::string nvlink_citation;
  // The per-direction NVLink rate NCCL's kernels reach (the profile's
  // device.nccl_nvlink_bandwidth_Bps); 0: nvlink_Bps. The cluster path stretches the
  // transfer of a collective inside one NVLink host by nvlink_Bps / this, on top of the
  // protocol's efficiency, as NCCL's own model rates NVLink below its line rate.
  double nccl_nvlink_Bps = 0;
  std::string nccl_nvlink_citation;
  // The collectives run between compute kernels, as in a training step or a pair loop: the
  // measured paths take the curve's in_compute_loop_factor. False: timed as nccl-tests
  // times them, back to back with themselves (validate's rows of collectives alone).
  bool in_compute_loop = true;
  // The cluster path adds NCCL's latency, protocol efficiency and PXN routing to the flows
  // (see above); false: bare flows at link rate (the uncalibrated network, for comparison).
  bool nccl_costs = true;
  // A send/recv inside one NVLink host whose op the profile never measured takes the
  // efficiency path of the profile's all-to-all curve (nearest to 2 ranks), at the size of
  // the all-to-all whose piece per peer is the send: NCCL runs an all-to-all as grouped
  // ncclSend/ncclRecv, so its curve is the rate NCCL's point-to-point reaches on these links,
  // which is well below the link rate (checked against measured permutes and all-to-allv on
  // 4 GPUs). Off: the cluster path. workloads::collective_timing turns it on for NVLink-class
  // hosts, so training steps and redistribution plans both time their sends so.
  bool sendrecv_from_alltoall = false;
};

// One class of collectives (op, communicator size, within one host or not) and how it was
// timed, for reports.
struct CollectiveClassUse {
  CollectiveOp op = CollectiveOp::AllReduce;
  int ranks = 0;
  bool intra_host = true;
  CollectivePath path = CollectivePath::Cluster;
  std::string label;  // "allreduce n=8 intra-host"
  std::string how;    // "flow network x efficiency 0.58-0.76 (...)"
  long launches = 0;  // includes folded ranks' background images
};

// Measured alone times of one collective: (bytes, seconds), sorted by bytes.
using MeasuredTimes = std::vector<std::pair<std::uint64_t, double>>;

class CollectiveCostModel {
 public:
  // Keeps references to `profile` and `net`: they must outlive the model and its launcher.
  CollectiveCostModel(const CollectiveProfile& profile, NetworkApi& net,
                      CollectiveTimingOptions options = {});
  // Every collective takes the time interpolated in `measured` (see above).
  void set_measured_times(MeasuredTimes measured);

  // A launcher bound to this model (which must outlive it).
  CollectiveLauncher launcher();
  void launch(const CollectiveRequest& req, std::function<void()> on_done);
  // Collectives nobody waits for (folded ranks' background images), charged and counted as
  // launch() would. Sends on the cluster path with NCCL's costs that start at the same
  // instant go to the network together as background transfers
  // (NetworkApi::transfer_background): one solver flow per class of same-shaped sends
  // instead of one per send. Everything else goes through launch().
  void launch_background(std::span<const CollectiveRequest> requests);

  // The path a collective of `op` over `ranks` ranks takes.
  CollectivePath path(CollectiveOp op, int ranks, bool intra_host) const;
  bool intra_host(const std::vector<int>& ranks) const;
  // Whether the collective's time includes NCCL's fixed cost per call (the measured paths
  // do, and the cluster path with NCCL's costs on).
  bool charges_call_latency(CollectiveOp op, int ranks, bool intra_host) const {
    return options_.nccl_costs || path(op, ranks, intra_host) != CollectivePath::Cluster;
  }
  // The time of one call of `bytes` known ahead of running it (the curve path: the measured
  // curve or points, between compute kernels unless the options say alone); nullopt where
  // only the network can tell.
  std::optional<double> call_time_s(CollectiveOp op, std::uint64_t bytes, int ranks,
                                    bool intra_host) const;
  // NCCL's slowdown on `ctas` CTAs against its default for a message of `bytes`, where the
  // profile measured both intra-node curves of the op (at this communicator size or any);
  // nullopt otherwise.
  std::optional<double> cta_limited_stretch(CollectiveOp op, std::uint64_t bytes, int ranks,
                                            int ctas) const;
  // How the path of a class is computed, in words with its sources.
  std::string describe(CollectiveOp op, int ranks, bool intra_host) const;

  // Classes launched so far, in first-launch order.
  std::vector<CollectiveClassUse> uses() const;
  long launches(CollectivePath path) const { return launches_[static_cast<int>(path)]; }

 private:
  const CollectiveCurve* exact_curve(CollectiveOp op, int ranks) const;
  // exact_curve's answers so far: it is asked on every launch and every pair a design plans
  // (a path, a call's time), and the profile's search compares every curve. Mutable: a
  // model serves one simulation, on one thread, like its launch counters.
  struct ExactCurve {
    CollectiveOp op;
    int ranks;
    const CollectiveCurve* curve;
  };
  mutable std::vector<ExactCurve> exact_curves_;
  const CollectiveCurve* nearest_curve(CollectiveOp op, int ranks) const;
  // The curve the efficiency path reads for `op`: its own nearest curve, or for a send/recv
  // with sendrecv_from_alltoall the all-to-all's (then *as_alltoall is set).
  const CollectiveCurve* efficiency_curve(CollectiveOp op, int ranks,
                                          bool* as_alltoall = nullptr) const;
  // The curve's in_compute_loop_factor where the options put the collectives between
  // compute kernels, else 1; and how describe() names it ("" for 1).
  double loop_factor(const CollectiveCurve& c) const;
  std::string loop_factor_text(const CollectiveCurve& c) const;
  double measured_time_s(std::uint64_t bytes) const;
  // What launch() derives from a communicator before timing a call on it: pure in the op
  // and the ranks (the profile, the options and the topology are fixed), so kept per
  // communicator. The same few communicators launch millions of times (each pipeline
  // send's folded images), and grouping ranks by host, path estimates and NCCL's cost
  // model per launch were a tenth of a GPT-3 step's simulation. Kept in a flat table (a
  // node-based hash map cost about as much as what it saved): one slot and one record per
  // lookup, the ranks of small communicators and the first call's cost inline.
  struct PlanSlot;  // a call's plan, below
  struct CommInfo {
    static constexpr std::size_t kFewRanks = 4;
    CollectiveOp op = CollectiveOp::AllReduce;
    std::uint32_t num_ranks = 0;
    std::array<int, kFewRanks> few_ranks{};  // the ranks, when at most kFewRanks
    std::vector<int> ranks;                  // the ranks, when more
    CollectivePath path = CollectivePath::Cluster;
    std::size_t class_index = 0;
    // The cluster path with NCCL's costs: the cost of each call seen on the communicator.
    struct Call {
      Algorithm algo = Algorithm::Auto;
      std::uint64_t bytes = 0;
      int root = 0, peer = 0;
      detail::NcclCallCost cost;
      // The call's plan, built by its first launch and run again by the later ones (a plan
      // depends only on the request, the tuning and the network's fixed layout; building
      // it, ring orders and hop latencies, was a twentieth of a step where tensor-parallel
      // collectives run as flows). Shared with launches still waiting for their latency.
      std::shared_ptr<PlanSlot> plan;
      bool same(const CollectiveRequest& req) const {
        return algo == req.algo && bytes == req.bytes && root == req.root && peer == req.peer;
      }
    };
    bool has_first_call = false;
    Call first_call;
    // The curve path: the time of the last size launched (a pure function of the size on
    // this communicator; a step launches the same few sizes over and over).
    std::uint64_t curve_bytes = 0;
    double curve_time_s = -1;  // < 0: none yet
    std::vector<Call> more_calls;
    bool same_comm(const CollectiveRequest& req) const;
  };
  struct PlanSlot {
    std::shared_ptr<const detail::Plan> plan;
  };
  struct CommSlot {
    std::uint64_t hash = 0;
    std::uint32_t record = 0;  // index into comm_infos_ + 1; 0: empty
  };
  CommInfo& comm_info(const CollectiveRequest& req);
  CommInfo::Call& call_of(CommInfo& info, const CollectiveRequest& req);
  // The cluster path with NCCL's costs (nccl_call_cost.hpp).
  // nvlink_stretch: the transfer's stretch for NCCL's NVLink rate (nccl_nvlink_stretch()
  // inside one host, 1 across hosts).
  void launch_with_nccl_costs(const CollectiveRequest& req, CommInfo::Call& call,
                              std::function<void()> on_done, double nvlink_stretch = 1);
  // options_.nvlink_Bps / options_.nccl_nvlink_Bps, at least 1; 1 without either.
  double nccl_nvlink_stretch() const;
  // The time of a call on the curve path (the caller knows the path is Curve).
  double curve_path_time_s(CollectiveOp op, std::uint64_t bytes, int ranks) const;

  const CollectiveProfile& profile_;
  NetworkApi& net_;
  CollectiveTimingOptions options_;
  MeasuredTimes measured_;
  long launches_[3] = {0, 0, 0};
  std::map<std::tuple<int, int, bool>, std::size_t> class_index_;
  std::vector<CollectiveClassUse> classes_;
  std::vector<CommSlot> comm_slots_;  // power of two, at most half full, linear probing
  std::vector<CommInfo> comm_infos_;
};

}  // namespace overlapsim::sim
