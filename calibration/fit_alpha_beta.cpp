#include "calibration/fit_alpha_beta.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace overlapsim::calibration {
namespace {

struct BandFit {
  bool ok = false;
  double alpha = 0, beta = 0, cost = 0;  // cost: sum of squared relative errors
};

// min sum ((alpha + beta x_i - t_i) / t_i)^2 over alpha >= 0, beta > 0: with u_i = 1/t_i the
// residual is alpha u_i + beta x_i u_i - 1, a 2-parameter linear least squares.
BandFit fit_band(const std::vector<SizedTime>& p, std::size_t a, std::size_t b) {
  double suu = 0, sux = 0, sxx = 0, su = 0, sx = 0;
  for (std::size_t i = a; i <= b; ++i) {
    const double u = 1.0 / p[i].time_s, xu = static_cast<double>(p[i].bytes) * u;
    suu += u * u;
    sux += u * xu;
    sxx += xu * xu;
    su += u;
    sx += xu;
  }
  BandFit f;
  const double det = suu * sxx - sux * sux;
  if (det > 1e-12 * suu * sxx) {
    f.alpha = (su * sxx - sx * sux) / det;
    f.beta = (suu * sx - sux * su) / det;
  }
  if (!(f.alpha >= 0) || !(det > 1e-12 * suu * sxx)) {  // latency pinned at 0
    f.alpha = 0;
    f.beta = sxx > 0 ? sx / sxx : 0;
  }
  if (!(f.beta > 0)) return f;
  f.ok = true;
  for (std::size_t i = a; i <= b; ++i) {
    const double r =
        (f.alpha + f.beta * static_cast<double>(p[i].bytes) - p[i].time_s) / p[i].time_s;
    f.cost += r * r;
  }
  return f;
}

// Where band `upper` takes over from `lower` between the last size measured in `lower`
// (lo) and the first in `upper` (hi); nothing was measured in between, so this is a guess
// of one of two kinds (SwitchRule in the header):
//   GeometricMean: the middle of the gap in log size;
//   FasterLine: where the faster of the two lines changes (their crossing, or an end of the
//     gap when one line is below the other throughout), as if NCCL's tuner picked the
//     measured-fastest protocol per size. Lines crossing the other way (lower below at hi
//     only) have no single such switch; the geometric mean stands in there.
std::uint64_t band_start_bytes(const AlphaBetaSegment& lower, const AlphaBetaSegment& upper,
                               std::uint64_t lo, std::uint64_t hi, SwitchRule rule) {
  const auto middle = static_cast<std::uint64_t>(
      std::llround(std::sqrt(static_cast<double>(lo) * static_cast<double>(hi))));
  if (rule == SwitchRule::GeometricMean) return middle;
  const auto excess = [&](std::uint64_t x) {  // lower's line minus upper's at x
    const double b = static_cast<double>(x);
    return (lower.alpha_s + lower.beta_s_per_byte * b) -
           (upper.alpha_s + upper.beta_s_per_byte * b);
  };
  const double at_lo = excess(lo), at_hi = excess(hi);
  if (at_lo <= 0 && at_hi <= 0) return hi;
  if (at_lo >= 0 && at_hi >= 0) return lo + 1;
  if (at_lo < 0 && at_hi > 0) {
    const double cross =
        (upper.alpha_s - lower.alpha_s) / (lower.beta_s_per_byte - upper.beta_s_per_byte);
    const auto c = static_cast<std::uint64_t>(std::ceil(cross));
    return std::clamp(c, lo + 1, hi);
  }
  return middle;
}

std::vector<AlphaBetaSegment> fit_with_rule(std::vector<SizedTime> points,
                                            const AlphaBetaOptions& options, SwitchRule rule) {
  std::sort(points.begin(), points.end(), [](const SizedTime& x, const SizedTime& y) {
    return x.bytes != y.bytes ? x.bytes < y.bytes : x.time_s < y.time_s;
  });
  const std::size_t n = points.size();
  const std::size_t min_pts = static_cast<std::size_t>(std::max(options.min_points, 2));
  if (n < min_pts) return {};
  const double inf = std::numeric_limits<double>::infinity();
  const std::size_t max_seg = static_cast<std::size_t>(std::max(options.max_segments, 1));
  // best[s][j]: least cost of covering points [0, j) with s bands; from[s][j]: where the
  // last band starts.
  std::vector<std::vector<double>> best(max_seg + 1, std::vector<double>(n + 1, inf));
  std::vector<std::vector<std::size_t>> from(max_seg + 1, std::vector<std::size_t>(n + 1, 0));
  std::vector<std::vector<BandFit>> band(n, std::vector<BandFit>(n));
  for (std::size_t a = 0; a < n; ++a)
    for (std::size_t b = a + min_pts - 1; b < n; ++b) band[a][b] = fit_band(points, a, b);
  best[0][0] = 0;
  for (std::size_t s = 1; s <= max_seg; ++s)
    for (std::size_t j = min_pts; j <= n; ++j)
      for (std::size_t a = 0; a + min_pts <= j; ++a) {
        if (best[s - 1][a] == inf || !band[a][j - 1].ok) continue;
        const double c = best[s - 1][a] + band[a][j - 1].cost;
        if (c < best[s][j]) {
          best[s][j] = c;
          from[s][j] = a;
        }
      }
  std::size_t chosen = 0;
  double chosen_cost = inf;
  for (std::size_t s = 1; s <= max_seg; ++s) {
    const double c = best[s][n] + options.segment_penalty * static_cast<double>(s - 1);
    if (c < chosen_cost) {  // strict: ties keep fewer bands
      chosen_cost = c;
      chosen = s;
    }
  }
  if (chosen == 0) return {};
  std::vector<std::size_t> starts;
  for (std::size_t s = chosen, j = n; s > 0; --s) {
    starts.push_back(from[s][j]);
    j = from[s][j];
  }
  std::reverse(starts.begin(), starts.end());
  std::vector<AlphaBetaSegment> out;
  for (std::size_t s = 0; s < starts.size(); ++s) {
    const std::size_t a = starts[s];
    const std::size_t b = s + 1 < starts.size() ? starts[s + 1] - 1 : n - 1;
    AlphaBetaSegment seg;
    seg.alpha_s = band[a][b].alpha;
    seg.beta_s_per_byte = band[a][b].beta;
    seg.min_bytes =
        s == 0 ? 0 : band_start_bytes(out.back(), seg, points[a - 1].bytes, points[a].bytes, rule);
    out.push_back(seg);
  }
  return out;
}

// Sum of squared relative errors predicting each interior size from a fit without it.
double leave_one_size_out(const std::vector<SizedTime>& sorted, const AlphaBetaOptions& options,
                          SwitchRule rule) {
  double cost = 0;
  for (std::size_t i = 1; i + 1 < sorted.size(); ++i) {
    std::vector<SizedTime> rest = sorted;
    rest.erase(rest.begin() + static_cast<std::ptrdiff_t>(i));
    const auto bands = fit_with_rule(rest, options, rule);
    if (bands.empty()) continue;
    const double r =
        (alpha_beta_time_s(bands, sorted[i].bytes) - sorted[i].time_s) / sorted[i].time_s;
    cost += r * r;
  }
  return cost;
}

}  // namespace

const char* to_string(SwitchRule rule) {
  return rule == SwitchRule::GeometricMean ? "geometric mean of the gap" : "faster line in the gap";
}

std::vector<AlphaBetaSegment> fit_alpha_beta(std::vector<SizedTime> points,
                                             const AlphaBetaOptions& options,
                                             AlphaBetaChoice* choice) {
  std::sort(points.begin(), points.end(), [](const SizedTime& x, const SizedTime& y) {
    return x.bytes != y.bytes ? x.bytes < y.bytes : x.time_s < y.time_s;
  });
  AlphaBetaChoice c;
  if (options.switch_rule) {
    c.rule = *options.switch_rule;
  } else {
    c.geometric_mean_cost = leave_one_size_out(points, options, SwitchRule::GeometricMean);
    c.faster_line_cost = leave_one_size_out(points, options, SwitchRule::FasterLine);
    // Ties keep the neutral guess.
    c.rule = c.faster_line_cost < c.geometric_mean_cost ? SwitchRule::FasterLine
                                                        : SwitchRule::GeometricMean;
  }
  if (choice) *choice = c;
  return fit_with_rule(std::move(points), options, c.rule);
}

double alpha_beta_time_s(const std::vector<AlphaBetaSegment>& segments, std::uint64_t bytes) {
  const AlphaBetaSegment* seg = &segments.front();
  for (const auto& s : segments)
    if (s.min_bytes <= bytes) seg = &s;
  return seg->alpha_s + seg->beta_s_per_byte * static_cast<double>(bytes);
}

}  // namespace overlapsim::calibration
