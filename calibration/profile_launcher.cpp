#include "calibration/profile_launcher.hpp"

#include "sim/engine/simulator.hpp"

namespace overlapsim::calibration {

sim::CollectiveLauncher profile_collective_launcher(const sim::CollectiveProfile& profile,
                                                    sim::NetworkApi& net, int ctas,
                                                    sim::CollectiveTuning tuning,
                                                    ProfileLauncherStats* stats) {
  return [&profile, &net, ctas, tuning, stats](const sim::CollectiveRequest& req,
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
      net.simulator().schedule(curve->time_s(req.bytes, n), std::move(on_done));
      return;
    }
    if (stats) ++stats->by_network;
    sim::start_collective(net, req, std::move(on_done), tuning);
  };
}

}  // namespace overlapsim::calibration
