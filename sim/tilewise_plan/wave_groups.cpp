#include "sim/tilewise_plan/wave_groups.hpp"

#include <algorithm>
#include <cstdint>
#include <set>
#include <utility>

namespace overlapsim::tilewise_plan {
namespace {

// A one-wave head, then near-equal groups (when the communication time is not known).
std::vector<int> head_and_equal(int waves, int max_groups) {
  if (max_groups <= 1 || waves <= 1) return {waves};
  std::vector<int> sizes = {1};
  const int rest = waves - 1, groups = std::min(max_groups - 1, rest);
  for (int g = 0; g < groups; ++g) sizes.push_back(rest / groups + (g < rest % groups ? 1 : 0));
  return sizes;
}

// A_g: the GEMM's end of group g (1-based) covering `waves` waves.
double compute_end_s(const WaveGroupProblem& w, int waves, int g) {
  return waves * w.wave_s * (g == 1 ? 1.0 : w.compute_slowdown);
}

double group_call_s(const WaveGroupProblem& w, int first_wave, int end_wave) {
  return w.wait_s + w.comm_s(w.group_bytes(first_wave, end_wave));
}

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

double WaveGroupProblem::group_bytes(int first_wave, int end_wave) const {
  return (share_through[static_cast<std::size_t>(end_wave)] -
          share_through[static_cast<std::size_t>(first_wave)]) /
         share_total * bytes;
}

std::vector<double> tiles_through(int waves, double tiles, int sms) {
  std::vector<double> out;
  for (int w = 0; w <= waves; ++w) out.push_back(std::min(tiles, static_cast<double>(w) * sms));
  return out;
}

std::vector<double> running_sums(const std::vector<double>& per_wave) {
  std::vector<double> out(per_wave.size() + 1, 0.0);
  for (std::size_t w = 0; w < per_wave.size(); ++w) out[w + 1] = out[w] + per_wave[w];
  return out;
}

WaveGroupPlan plan_wave_groups(const WaveGroupProblem& w) {
  const int waves = w.waves();
  const int max_groups = w.max_groups > 0 ? w.max_groups : waves;
  if (!w.comm_s) return {head_and_equal(waves, max_groups), -1};
  if (waves < 1) return {{}, 0};
  const int unit = w.max_units > 0 ? (waves + w.max_units - 1) / w.max_units : 1;
  const int units = (waves + unit - 1) / unit;
  auto waves_of = [&](int u) { return std::min(waves, u * unit); };
  const int groups = std::max(1, std::min(max_groups, units));
  constexpr double kInf = 1e300;
  // end[g][u]: earliest end of the g-th group's collective when g groups cover u units.
  std::vector<std::vector<double>> end(groups + 1, std::vector<double>(units + 1, kInf));
  std::vector<std::vector<int>> from(groups + 1, std::vector<int>(units + 1, -1));
  end[0][0] = 0;
  for (int g = 1; g <= groups; ++g)
    for (int u = g; u <= units; ++u) {
      const double compute_end = compute_end_s(w, waves_of(u), g);
      for (int v = g - 1; v < u; ++v) {
        if (end[g - 1][v] >= kInf) continue;
        const double e =
            std::max(compute_end, end[g - 1][v]) + group_call_s(w, waves_of(v), waves_of(u));
        if (e < end[g][u]) {
          end[g][u] = e;
          from[g][u] = v;
        }
      }
    }
  int best = 1;
  for (int g = 2; g <= groups; ++g)
    if (end[g][units] < end[best][units]) best = g;
  std::vector<int> sizes;
  for (int g = best, u = units; g > 0; --g) {
    const int v = from[g][u];
    sizes.push_back(waves_of(u) - waves_of(v));
    u = v;
  }
  std::reverse(sizes.begin(), sizes.end());
  return {sizes, end[best][units]};
}

double predict_end_s(const WaveGroupProblem& w, const std::vector<int>& sizes) {
  if (!w.comm_s) return -1;
  double finished = 0;  // E_g
  int done = 0, g = 0;
  for (int size : sizes) {
    const int end = std::min(w.waves(), done + size);
    finished = std::max(compute_end_s(w, end, ++g), finished) + group_call_s(w, done, end);
    done = end;
  }
  return finished;
}

std::vector<std::vector<int>> all_partitions(int waves) {
  std::vector<std::vector<int>> out;
  if (waves < 1 || waves > 20) return out;
  const std::uint32_t cuts = static_cast<std::uint32_t>(waves - 1);
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

std::vector<std::vector<int>> candidate_partitions(const WaveGroupProblem& in,
                                                   int exhaustive_limit, int keep,
                                                   bool* exhaustive) {
  const int waves = in.waves();
  std::vector<std::vector<int>> pool =
      waves <= 16 ? all_partitions(waves) : simple_families(waves);
  *exhaustive = static_cast<int>(pool.size()) <= exhaustive_limit && waves <= 16;
  if (waves > 16) pool.push_back(plan_wave_groups(in).sizes);
  std::vector<std::pair<double, std::vector<int>>> ranked;
  std::set<std::vector<int>> seen;
  for (auto& p : pool)
    if (seen.insert(p).second) ranked.emplace_back(predict_end_s(in, p), p);
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::vector<int>> out;
  const std::size_t limit = *exhaustive ? ranked.size()
                                        : std::min<std::size_t>(ranked.size(),
                                                                static_cast<std::size_t>(keep));
  for (std::size_t i = 0; i < limit; ++i) out.push_back(ranked[i].second);
  return out;
}

}  // namespace overlapsim::tilewise_plan
