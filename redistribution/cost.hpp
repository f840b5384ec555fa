#pragma once
// A plan's time on a cluster: each step is the collective it names, run by every group of the
// mesh at once on the simulator's flow network and timed by the one collective cost model
// (sim/collectives/collective_cost_model.hpp), with mesh device d on cluster rank d (mesh.hpp:
// the innermost axis on neighbouring ranks, within a host). Steps run one after another.
// A permute or an all-to-allv is its send/recv pairs, all at once (an NCCL group of
// ncclSend/ncclRecv); an all-to-all, all-gather, reduce-scatter or all-reduce is that
// collective with nccl-tests' sizes.
// Local slices are not charged (a copy at HBM rate, the same in both plans' last step).
#include <string>
#include <vector>

#include "redistribution/plan.hpp"
#include "sim/collectives/collective_cost_model.hpp"
#include "sim/profile/collective_profile.hpp"
#include "sim/topology/topology.hpp"

namespace overlapsim::redistribution {

struct StepTiming {
  double time_s = 0;
  std::string collective;  // "alltoall x 128 groups of 8", "" for a local step
};

struct PlanTiming {
  double time_s = 0;
  std::vector<StepTiming> steps;
};

// Throws config::ConfigError when the mesh's device count differs from the topology's GPUs.
PlanTiming time_plan(const Plan& plan, const sim::Topology& topology,
                     const sim::CollectiveProfile& profile,
                     const sim::CollectiveTimingOptions& options);

}  // namespace overlapsim::redistribution
