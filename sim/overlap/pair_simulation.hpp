#pragma once
// Simulates one (compute op, collective) pair under one design on a small cluster: the
// pair is built into a step graph (one program per rank, all ranks simulated) and run by
// the same StepExecutor and design code as a full step. For `overlapsim validate` and
// the design tests: measured component times (the op alone, NCCL alone) may be given, so
// the comparison with a measured pair isolates what the design model adds.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sim/collectives/collective_cost_model.hpp"
#include "sim/graph/op_graph.hpp"
#include "sim/overlap/designs.hpp"
#include "sim/profile/profile.hpp"
#include "sim/topology/topology.hpp"

namespace overlapsim::sim {

struct PairCase {
  OpNode compute;  // the op (kind, shape, precision; flops/bytes derived from the shape if 0)
  CollectiveOp collective = CollectiveOp::AllReduce;
  std::uint64_t comm_bytes = 0;  // nccl-tests convention
  bool producer = true;          // op -> collective (false: collective -> op)
  int world = 2;                 // ranks 0..world-1 of the topology
  // Where set, the communicator's global ranks instead (world is their count): a pair of a
  // step simulated alone on the step's topology (`--design best`'s tuner).
  std::vector<int> ranks;
  // How the cost model times the collective (the cluster's NVLink rate: docs/simulate.md).
  CollectiveTimingOptions timing;
  // PairPlanning::scaled_parts_min_ranks for the run (0: every part on the network).
  int scaled_parts_min_ranks = 0;

  // > 0: the op alone takes this long (the profile's rates are scaled to match).
  double op_time_s = 0;
  // NCCL alone: (bytes, seconds) points, linear between them and in proportion beyond;
  // empty: the profile's collective curve for the op if it has one (times its
  // in_compute_loop_factor: the pair's collective runs between compute kernels), else the
  // network.
  std::vector<std::pair<std::uint64_t, double>> comm_time_points;

  // Replay a measured configuration (0 / empty: the profile's parameters).
  int chunks = 0;                    // decomposed
  int comm_sms = 0;                  // tilewise
  double comm_stretch = 0;           // tilewise: NCCL's slowdown on comm_sms CTAs
  std::vector<int> waves_per_group;  // tilewise
  int max_groups = 0;                // tilewise: at most this many groups (a measured count)
  bool copy_engine = false;          // tilewise: the copy-engine transport (no NCCL)
  // tilewise copy_engine all-reduce: its phase 2 (Auto: the faster the profile allows).
  TilewiseDesign::AllReducePhase2 phase2 = TilewiseDesign::AllReducePhase2::Auto;
  // tilewise copy_engine on > 2 ranks: the route (Auto: the faster of direct and ring).
  TilewiseDesign::Route route = TilewiseDesign::Route::Auto;
  // tilewise copy_engine: a measured ring configuration to replay (sets the route).
  std::optional<TilewiseDesign::RingReplay> ring;
};

struct PairOutcome {
  double time_s = 0;        // from the first op starting to the last finishing
  double op_alone_s = 0;    // the op under the compute model (after scaling)
  double compute_s = 0;     // the slowest rank's time with compute running (its step breakdown)
  bool overlapped = false;  // false: the design does not apply; time_s is sequential's
  std::string why_not;
};

// The pair as a step: on each of ranks 0..world-1 (or `ranks`) the op and its collective (in
// the order `producer` says, paired), the collective on one "tp" communicator of all of them.
StepGraph pair_step(const PairCase& pair);

// Throws std::invalid_argument for an unknown design, a missing parameter or a world
// larger than the topology.
PairOutcome simulate_pair(const PairCase& pair, const std::string& design, const Profile& profile,
                          const Topology& topology);

}  // namespace overlapsim::sim
