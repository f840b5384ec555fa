#pragma once
// A plan's time on a cluster: each step is the collective it names, run by every group of the
// mesh at once on the simulator's flow network and timed by the one collective cost model
// (sim/collectives/collective_cost_model.hpp), with mesh device d on cluster rank d (mesh.hpp:
// the innermost axis on neighbouring ranks, within a host). Steps run one after another.
// A permute or an all-to-allv is its send/recv pairs, all at once (an NCCL group of
// ncclSend/ncclRecv), each on one NVLink host at the rate of the profile's all-to-all curve
// (CollectiveTimingOptions::sendrecv_from_alltoall, which workloads::collective_timing sets
// for NVLink-class hosts: NCCL's all-to-all is the same grouped send/recv, about two thirds
// of the links' rate on the measured 4 x H200); an all-to-all, all-gather, reduce-scatter or
// all-reduce is that collective with nccl-tests' sizes.
// Around each step the local copies of its recipe (recipe.hpp: packing into send buffers,
// unpacking from receive buffers, the device's own piece, slices that are not a view) are
// charged as memory-bound ops of the profile's compute model: bytes read + written over
// (HBM bandwidth x the measured memory efficiency at that size) + the launch overhead, each
// copy one launch. A step lasts the slowest device's copies before the call, the call, then
// the slowest device's copies after it.
#include <string>
#include <vector>

#include "redistribution/plan.hpp"
#include "sim/collectives/collective_cost_model.hpp"
#include "sim/profile/profile.hpp"
#include "sim/topology/topology.hpp"

namespace overlapsim::redistribution {

struct StepTiming {
  double time_s = 0;  // copies + collective
  double copy_s = 0;  // the local copies' share of time_s
  std::string collective;  // "alltoall x 128 groups of 8", "" for a local step
};

struct PlanTiming {
  double time_s = 0;
  std::vector<StepTiming> steps;
};

// Throws config::ConfigError when the mesh's device count differs from the topology's GPUs.
PlanTiming time_plan(const Plan& plan, const sim::Topology& topology,
                     const sim::Profile& profile,
                     const sim::CollectiveTimingOptions& options);

}  // namespace overlapsim::redistribution
