#include "kernels/tilewise/group_predictor.hpp"

#include <algorithm>
#include <limits>
#include <numeric>
#include <set>

namespace overlapsim::kernels::tilewise {

void CommCurve::add_point(double bytes, double time_s) {
  const auto at = std::lower_bound(bytes_.begin(), bytes_.end(), bytes);
  const auto i = at - bytes_.begin();
  if (at != bytes_.end() && *at == bytes) {
    times_s_[static_cast<std::size_t>(i)] = time_s;
    return;
  }
  bytes_.insert(at, bytes);
  times_s_.insert(times_s_.begin() + i, time_s);
}

double CommCurve::time_s(double bytes) const {
  if (bytes_.empty()) return 0;
  if (bytes_.size() == 1) return times_s_[0] * std::max(1.0, bytes / bytes_[0]);
  std::size_t hi = static_cast<std::size_t>(
      std::lower_bound(bytes_.begin(), bytes_.end(), bytes) - bytes_.begin());
  hi = std::clamp<std::size_t>(hi, 1, bytes_.size() - 1);
  const std::size_t lo = hi - 1;
  const double slope = (times_s_[hi] - times_s_[lo]) / (bytes_[hi] - bytes_[lo]);
  // Below the smallest point a call never gets cheaper than that point's latency share.
  const double t = times_s_[lo] + slope * (bytes - bytes_[lo]);
  return std::max(t, bytes < bytes_[0] ? times_s_[0] * 0.5 : 0.0);
}

double predict_time_s(const PredictorInputs& in, const std::vector<int>& waves) {
  double stored_s = 0;   // A_g
  double finished_s = 0; // E_g
  std::size_t wave = 0;
  for (int w : waves) {
    double bytes = 0;
    for (int i = 0; i < w && wave < in.wave_bytes.size(); ++i, ++wave) bytes += in.wave_bytes[wave];
    stored_s += w * in.wave_time_s;
    finished_s = std::max(stored_s, finished_s) + in.comm.time_s(bytes);
  }
  return finished_s;
}

std::vector<int> best_partition(const PredictorInputs& in, double* predicted_s) {
  const int waves = static_cast<int>(in.wave_bytes.size());
  std::vector<double> prefix_bytes(static_cast<std::size_t>(waves) + 1, 0);
  for (int w = 0; w < waves; ++w)
    prefix_bytes[static_cast<std::size_t>(w) + 1] = prefix_bytes[static_cast<std::size_t>(w)] +
                                                     in.wave_bytes[static_cast<std::size_t>(w)];
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> best(static_cast<std::size_t>(waves) + 1, inf);
  std::vector<int> from(static_cast<std::size_t>(waves) + 1, 0);
  best[0] = 0;
  for (int end = 1; end <= waves; ++end) {
    const double stored_s = end * in.wave_time_s;
    for (int start = 0; start < end; ++start) {
      const double bytes = prefix_bytes[static_cast<std::size_t>(end)] -
                           prefix_bytes[static_cast<std::size_t>(start)];
      const double t = std::max(stored_s, best[static_cast<std::size_t>(start)]) +
                       in.comm.time_s(bytes);
      if (t < best[static_cast<std::size_t>(end)]) {
        best[static_cast<std::size_t>(end)] = t;
        from[static_cast<std::size_t>(end)] = start;
      }
    }
  }
  std::vector<int> partition;
  for (int end = waves; end > 0; end = from[static_cast<std::size_t>(end)])
    partition.push_back(end - from[static_cast<std::size_t>(end)]);
  std::reverse(partition.begin(), partition.end());
  if (predicted_s) *predicted_s = best[static_cast<std::size_t>(waves)];
  return partition;
}

std::vector<std::vector<int>> all_partitions(int waves) {
  std::vector<std::vector<int>> out;
  if (waves < 1 || waves > 20) return out;
  const std::uint32_t cuts = waves - 1;
  for (std::uint32_t mask = 0; mask < (1u << cuts); ++mask) {
    std::vector<int> p;
    int run = 1;
    for (std::uint32_t i = 0; i < cuts; ++i) {
      if (mask & (1u << i)) {
        p.push_back(run);
        run = 1;
      } else {
        ++run;
      }
    }
    p.push_back(run);
    out.push_back(std::move(p));
  }
  return out;
}

namespace {

std::vector<std::vector<int>> simple_families(int waves) {
  std::vector<std::vector<int>> out;
  out.push_back({waves});
  for (int groups : {2, 3, 4, 6, 8, 12, 16}) {
    if (groups > waves) break;
    std::vector<int> p(static_cast<std::size_t>(groups), waves / groups);
    for (int i = 0; i < waves % groups; ++i) p[static_cast<std::size_t>(groups - 1 - i)] += 1;
    out.push_back(p);
  }
  // Doubling: a small first group starts communication early, later ones grow.
  for (int first : {1, 2}) {
    std::vector<int> p;
    int left = waves;
    for (int size = first; left > 0; size *= 2) {
      const int take = std::min(size, left);
      p.push_back(take);
      left -= take;
    }
    out.push_back(p);
  }
  return out;
}

}  // namespace

std::vector<std::vector<int>> candidate_partitions(const PredictorInputs& in,
                                                   int exhaustive_limit, int keep,
                                                   bool* exhaustive) {
  const int waves = static_cast<int>(in.wave_bytes.size());
  std::vector<std::vector<int>> pool =
      waves <= 16 ? all_partitions(waves) : simple_families(waves);
  *exhaustive = static_cast<int>(pool.size()) <= exhaustive_limit && waves <= 16;
  if (waves > 16) pool.push_back(best_partition(in));
  std::vector<std::pair<double, std::vector<int>>> ranked;
  std::set<std::vector<int>> seen;
  for (auto& p : pool)
    if (seen.insert(p).second) ranked.emplace_back(predict_time_s(in, p), p);
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::vector<int>> out;
  const std::size_t limit =
      *exhaustive ? ranked.size() : std::min<std::size_t>(ranked.size(), static_cast<std::size_t>(keep));
  for (std::size_t i = 0; i < limit; ++i) out.push_back(ranked[i].second);
  return out;
}

}  // namespace overlapsim::kernels::tilewise
