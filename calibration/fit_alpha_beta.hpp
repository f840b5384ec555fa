#pragma once
// Piecewise latency-bandwidth (alpha-beta) fits of collective times over message size:
// time = alpha + beta * bytes in each size band, least squares on the *relative* error
// (what the validator judges), the bands chosen by dynamic programming over the sorted
// sizes with a penalty per extra band.
#include <cstdint>
#include <optional>
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

// Where a band takes over from the one before, inside the unmeasured gap between them
// (fit_alpha_beta.cpp says what each guesses).
enum class SwitchRule { GeometricMean, FasterLine };
const char* to_string(SwitchRule rule);

struct AlphaBetaOptions {
  int min_points = 2;  // distinct sizes per band
  int max_segments = 4;
  double segment_penalty = 2.5e-3;  // added squared relative error a new band must save
  // Unset: chosen per curve by leave-one-size-out cross-validation over the points.
  std::optional<SwitchRule> switch_rule;
};

// The switch rule used, and the leave-one-size-out costs (sums of squared relative errors
// over the interior sizes) behind the choice (0 when the rule was given).
struct AlphaBetaChoice {
  SwitchRule rule = SwitchRule::GeometricMean;
  double geometric_mean_cost = 0, faster_line_cost = 0;
};

// `points` are one time per distinct size (e.g. the median of repeats), any order.
// Returns bands with increasing min_bytes, each switch placed by the switch rule (given, or
// the one that predicts left-out sizes better: neither guess of where NCCL changes protocol
// between two measured sizes held on both 2 x H200 runs). Empty when fewer than min_points
// distinct sizes or no band admits alpha >= 0, beta > 0.
std::vector<AlphaBetaSegment> fit_alpha_beta(std::vector<SizedTime> points,
                                             const AlphaBetaOptions& options = {},
                                             AlphaBetaChoice* choice = nullptr);

// The time the bands give for `bytes` (the band whose min_bytes is the largest <= bytes).
double alpha_beta_time_s(const std::vector<AlphaBetaSegment>& segments, std::uint64_t bytes);

}  // namespace overlapsim::calibration
