#include "sim/exec/comm_images.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>

namespace overlapsim::sim {

std::optional<BackgroundImages> background_images_named(std::string_view name) {
  if (name == "none") return BackgroundImages::None;
  if (name == "inter-host") return BackgroundImages::InterHost;
  if (name == "all") return BackgroundImages::All;
  return std::nullopt;
}

CommImagePlans plan_comm_images(const StepGraph& step, const NetworkApi& net, BackgroundImages mode) {
  CommImagePlans plans;
  const int world = step.world_size;
  plans.program_of_rank.assign(static_cast<std::size_t>(world), -1);
  for (std::size_t p = 0; p < step.ranks.size(); ++p) {
    const int r = step.ranks[p].rank;
    if (r < 0 || r >= world)
      throw std::invalid_argument(
          fmt::format("step: simulated rank {} outside world size {}", r, world));
    if (plans.program_of_rank[r] != -1)
      throw std::invalid_argument(fmt::format("step: rank {} is simulated twice", r));
    plans.program_of_rank[r] = static_cast<int>(p);
  }
  if (!step.representative.empty() && static_cast<int>(step.representative.size()) != world)
    throw std::invalid_argument(fmt::format("step: representative map has {} entries for {} ranks",
                                            step.representative.size(), world));

  plans.groups.resize(step.groups.size());
  for (std::size_t g = 0; g < step.groups.size(); ++g)
    for (int r : step.groups[g].ranks) {
      if (r < 0 || r >= world)
        throw std::invalid_argument(
            fmt::format("step: group {} ({}) has rank {} outside world size {}", g,
                        step.groups[g].family, r, world));
      if (plans.program_of_rank[r] >= 0)
        plans.groups[g].simulated.push_back(plans.program_of_rank[r]);
    }

  if (mode == BackgroundImages::None || step.representative.empty()) return plans;
  // Groups keyed by (family, sorted representatives): the one with simulated members is
  // the primary, the others its images.
  using Key = std::pair<std::string, std::vector<int>>;
  std::map<Key, int> primary;
  std::vector<Key> keys(step.groups.size());
  for (std::size_t g = 0; g < step.groups.size(); ++g) {
    std::vector<int> reps;
    reps.reserve(step.groups[g].ranks.size());
    for (int r : step.groups[g].ranks) reps.push_back(step.representative[r]);
    std::sort(reps.begin(), reps.end());
    keys[g] = {step.groups[g].family, std::move(reps)};
    if (!plans.groups[g].simulated.empty()) primary.emplace(keys[g], static_cast<int>(g));
  }
  for (std::size_t g = 0; g < step.groups.size(); ++g) {
    if (!plans.groups[g].simulated.empty()) continue;
    auto it = primary.find(keys[g]);
    if (it == primary.end()) continue;
    if (mode == BackgroundImages::InterHost) {
      const auto& ranks = step.groups[g].ranks;
      const int host = net.host_of(ranks.front());
      bool spans = false;
      for (int r : ranks) spans = spans || net.host_of(r) != host;
      if (!spans) continue;
    }
    plans.groups[it->second].images.push_back(static_cast<int>(g));
  }
  return plans;
}

}  // namespace overlapsim::sim
