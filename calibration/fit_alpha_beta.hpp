#pragma once
// Piecewise latency-bandwidth (alpha-beta) fits of collective times over message size:
// time = alpha + beta * bytes in each size band, least squares on the *relative* error
// (what the validator judges), the bands chosen by dynamic programming over the sorted
// sizes with a penalty per extra band.
#include <cstdint>
#include <vector>

namespace overlapsim::calibration {

struct SizedTime {
  std::uint64_t bytes = 0;
  double time_s = 0;
};

struct AlphaBetaSegment {
  std::uint64_t min_bytes = 0;  // the band starts here (the first at 0)
  double alpha_s = 0;           // latency, >= 0
  double beta_s_per_byte = 0;   // > 0
};

struct AlphaBetaOptions {
  int min_points = 2;  // distinct sizes per band
  int max_segments = 4;
  double segment_penalty = 2.5e-3;  // added squared relative error a new band must save
};

// `points` are one time per distinct size (e.g. the median of repeats), any order.
// Returns bands with increasing min_bytes; between the last size of one band and the first
// of the next, the switch is placed where the faster of the two lines changes (their
// crossing, or an end of the gap), as NCCL's tuner picks the fastest protocol per size. Empty when fewer than
// min_points distinct sizes or no band admits alpha >= 0, beta > 0.
std::vector<AlphaBetaSegment> fit_alpha_beta(std::vector<SizedTime> points,
                                             const AlphaBetaOptions& options = {});

// The time the bands give for `bytes` (the band whose min_bytes is the largest <= bytes).
double alpha_beta_time_s(const std::vector<AlphaBetaSegment>& segments, std::uint64_t bytes);

}  // namespace overlapsim::calibration
