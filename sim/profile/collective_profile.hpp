#pragma once
// Collective cost tables of a profile (NCCL tuning.cc style: latency + bytes / bandwidth,
// piecewise over message size), per op, algorithm, scope and optionally NCCL CTA count.
// Calibrated profiles fill these from nccl-tests-style sweeps; the flow-level network
// does not need them, an analytical backend and the overlap-design models do.
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "sim/collectives/collective.hpp"
#include "sim/profile/provenance.hpp"

namespace overlapsim::sim {

enum class CommScope { IntraNode, InterNode };
const char* to_string(CommScope scope);
std::optional<CommScope> parse_comm_scope(std::string_view text);  // "intra_node", "inter_node"

// From min_bytes up to the next segment's min_bytes: time = latency_s + bytes * busbw_factor
// / bus_bandwidth_Bps (nccl-tests bus bandwidth, so one table serves every group size).
struct CollectiveSegment {
  std::uint64_t min_bytes = 0;
  double latency_s = 0;
  double bus_bandwidth_Bps = 0;
};

struct CollectiveCurve {
  CollectiveOp op = CollectiveOp::AllReduce;
  Algorithm algo = Algorithm::Auto;
  CommScope scope = CommScope::IntraNode;
  int ranks = 0;  // communicator size it was measured at; 0: any
  int ctas = 0;   // NCCL CTAs (NCCL_MAX_CTAS) it was measured with; 0: NCCL's default
  std::vector<CollectiveSegment> segments;  // min_bytes strictly increasing, first is 0
  Provenance source;
  // The segments time the collective as nccl-tests does, back to back with itself. Timed
  // between GEMMs (a pair loop, a training step) the same collective ran slower on H200
  // (clock, power and L2 state: 1.4-14 % on 2 GPUs), by this factor. Absent: 1.
  std::optional<Sourced> in_compute_loop_factor;

  double time_s(std::uint64_t bytes, int n) const;
  double in_loop_factor() const {
    return in_compute_loop_factor ? in_compute_loop_factor->value : 1.0;
  }
  // time_s x in_loop_factor(): the collective where it runs between compute kernels.
  double time_in_compute_loop_s(std::uint64_t bytes, int n) const {
    return time_s(bytes, n) * in_loop_factor();
  }
  // The segment that times a message of `bytes`.
  const CollectiveSegment& segment_for(std::uint64_t bytes) const;
};

struct CollectiveProfile {
  std::vector<CollectiveCurve> curves;

  // The curve for (op, algo, scope) measured closest to `ranks` and `ctas` (exact match
  // first, then 0 = any/default); nullptr when the profile has none.
  const CollectiveCurve* find(CollectiveOp op, Algorithm algo, CommScope scope, int ranks = 0,
                              int ctas = 0) const;
};

}  // namespace overlapsim::sim
