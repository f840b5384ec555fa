#include "planning/configuration_text.hpp"

#include <fmt/format.h>

#include <array>
#include <sstream>
#include <vector>

#include "config/error.hpp"
#include "config/integers.hpp"
#include "planning/search_space.hpp"

namespace overlapsim::planning {

namespace {

constexpr std::string_view kForm =
    "'n<nodes> tp<n> pp<n> v<n> cp<n> ep<n> dp<n> mb<n> sp<0|1> none|selective|full', as a "
    "plan's report lists it";

config::ConfigError bad(std::string_view flag, std::string_view text, std::string_view why) {
  return config::ConfigError(fmt::format("{}: '{}' {} (expected {})", flag, text, why, kForm));
}

// "tp8" -> 8 where the token starts with `prefix` and the rest is a positive int.
int field(const std::string& token, std::string_view prefix, std::string_view flag, int least) {
  if (token.rfind(prefix, 0) != 0)
    throw bad(flag, token, fmt::format("is not the {} field", prefix));
  const auto v = config::parse_int(std::string_view(token).substr(prefix.size()));
  if (!v || *v < least || !config::narrow_int<int>(*v))
    throw bad(flag, token, fmt::format("is not {}<integer >= {}>", prefix, least));
  return static_cast<int>(*v);
}

}  // namespace

std::string configuration_text(const PlanConfig& c) {
  return fmt::format("n{} tp{} pp{} v{} cp{} ep{} dp{} mb{} sp{} {}", c.nodes, c.tp, c.pp,
                     c.virtual_stages, c.cp, c.ep, c.dp, c.micro_batch, c.sequence_parallel ? 1 : 0,
                     workloads::to_string(c.recompute));
}

PlanConfig parse_configuration_text(std::string_view text, std::string_view flag) {
  std::vector<std::string> tokens;
  std::istringstream in{std::string(text)};
  for (std::string t; in >> t;) tokens.push_back(t);
  int cluster = -1;
  // results.json's keys lead with the plan's cluster index.
  if (!tokens.empty() && tokens.front().size() > 1 && tokens.front()[0] == 'c' &&
      tokens.front().find_first_not_of("0123456789", 1) == std::string::npos) {
    cluster = field(tokens.front(), "c", flag, 0);
    tokens.erase(tokens.begin());
  }
  constexpr std::size_t kFields = 10;
  if (tokens.size() != kFields)
    throw bad(flag, text, fmt::format("has {} fields, not {}", tokens.size(), kFields));
  PlanConfig c;
  c.cluster = cluster;
  c.nodes = field(tokens[0], "n", flag, 1);
  c.tp = field(tokens[1], "tp", flag, 1);
  c.pp = field(tokens[2], "pp", flag, 1);
  c.virtual_stages = field(tokens[3], "v", flag, 1);
  c.cp = field(tokens[4], "cp", flag, 1);
  c.ep = field(tokens[5], "ep", flag, 1);
  c.dp = field(tokens[6], "dp", flag, 1);
  c.micro_batch = field(tokens[7], "mb", flag, 0);  // 0: a DLRM step (one batch)
  const int sp = field(tokens[8], "sp", flag, 0);
  if (sp > 1) throw bad(flag, tokens[8], "is not sp0 or sp1");
  c.sequence_parallel = sp == 1;
  constexpr std::array kModes = {workloads::Recompute::None, workloads::Recompute::Selective,
                                 workloads::Recompute::Full};
  bool known = false;
  for (workloads::Recompute r : kModes)
    if (tokens[9] == workloads::to_string(r)) c.recompute = r, known = true;
  if (!known) throw bad(flag, tokens[9], "is not a recompute mode");
  return c;
}

ConfiguredSpecs configure(const workloads::ModelSpec& model, const workloads::ClusterSpec& cluster,
                          PlanConfig& c, std::string_view flag) {
  ConfiguredSpecs out{model, configured_cluster(cluster, c.nodes)};
  c.gpus = out.cluster.num_gpus();
  const int dp = c.dp;
  try {
    out.model = configured_model(model, c, out.cluster.gpus_per_node);
  } catch (const config::ConfigError& e) {
    throw config::ConfigError(fmt::format("{}: {}", flag, e.what()));
  }
  if (out.model.parallelism.dp != dp)
    throw config::ConfigError(
        fmt::format("{}: dp{} does not fit {} GPUs (expected dp{}: the GPUs tp x pp x cp leave)",
                    flag, dp, c.gpus, out.model.parallelism.dp));
  return out;
}

}  // namespace overlapsim::planning
