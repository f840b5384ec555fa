#pragma once
// overlap-bench's pair loops time a GEMM alone, its collective alone and the pair under
// each design in turn, so every row of such a loop runs at the clock that loop's mix of
// compute and communication leaves the power-limited GPU (compute.idle_clock_boost). This
// finds each row's loop collective and the fraction of the loop the GPU spends without
// compute, in the profile's own terms (so fit and validate agree on it).
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "calibration/measurement.hpp"
#include "sim/profile/profile.hpp"

namespace overlapsim::calibration {

// The collective a pair loop alternates its compute op with.
struct LoopCollective {
  std::string compute;     // gemm, gemv, embedding
  std::string collective;  // allreduce, ...
  std::uint64_t bytes = 0;
  int world = 1;
};

class PairLoops {
 public:
  // Indexes the pair rows (op "a+b") of `rows` by calibrate case and shape.
  explicit PairLoops(const std::vector<Measurement>& rows);
  // The loop collective of a pair row, or of a compute/collective row timed inside a pair
  // loop (measured_in_pair_loop, found by its case and shape); nullopt otherwise.
  std::optional<LoopCollective> of(const Measurement& m) const;

 private:
  std::map<std::tuple<std::string, std::int64_t, std::int64_t, std::int64_t>, LoopCollective>
      by_case_;
};

// A collective row timed inside a pair loop, between the loop's compute kernels, at NCCL's
// default CTAs: a row of calibrate's pair cases (measured_in_pair_loop), or in plain
// overlap-bench pair runs without a case key, a collective row that carries its pair's
// compute shape (m > 0). Such rows are timed by a curve's in_compute_loop_factor.
bool collective_in_compute_loop(const Measurement& m);

// T_coll / (T_op + T_coll): the op at the profile's back-to-back rate, the collective by
// the profile's intra-node curve at the loop's GPU count (NCCL's default CTAs), as it runs
// between compute kernels (the curve's in_compute_loop_factor). 0 when the
// profile has no curve at exactly that GPU count.
double loop_idle_fraction(const sim::Profile& profile, const Measurement& m,
                          const LoopCollective& loop);

}  // namespace overlapsim::calibration
