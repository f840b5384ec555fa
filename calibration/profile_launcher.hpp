#pragma once
// Times collectives by a profile's measured curves inside a simulation: a
// sim::CollectiveLauncher for StepExecutor::set_collective_launcher (and for the
// validator). A collective whose communicator lies within one host and for which the
// profile has an intra-node curve (op, `auto`, ranks, CTA limit: CollectiveProfile::find)
// finishes latency + bytes * busbw_factor / bus_bandwidth after it starts, on the
// simulator's clock; anything else (inter-node communicators, ops without a curve) runs
// on the network through sim::start_collective. The curve path moves no bytes on the
// network's links, so concurrent traffic does not see it: use it where the profile's
// measurement conditions hold (one collective at a time within a node).
#include "sim/collectives/collective.hpp"
#include "sim/compute/collective_profile.hpp"
#include "sim/exec/step_executor.hpp"
#include "sim/network/network_api.hpp"

namespace overlapsim::calibration {

struct ProfileLauncherStats {
  int by_curve = 0;    // collectives timed by a profile curve
  int by_network = 0;  // collectives handed to sim::start_collective
};

// Keeps references to `profile`, `net` and `stats` (may be null): they must outlive it.
sim::CollectiveLauncher profile_collective_launcher(const sim::CollectiveProfile& profile,
                                                    sim::NetworkApi& net, int ctas = 0,
                                                    sim::CollectiveTuning tuning = {},
                                                    ProfileLauncherStats* stats = nullptr);

}  // namespace overlapsim::calibration
