#include "sim/profile/heldout_errors.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "config/config_node.hpp"

namespace overlapsim::sim {

std::optional<HeldOutError> HeldOutErrors::find(const std::string& kind) const {
  const auto it = by_kind.find(kind);
  if (it == by_kind.end() || it->second.rows <= 0) return std::nullopt;
  return it->second;
}

std::string HeldOutErrors::citation(const std::string& kind) const {
  const auto e = find(kind);
  return fmt::format("{}, {}: {} rows held out", fmt::join(measurements, " + "), kind,
                     e ? e->rows : 0);
}

HeldOutErrors parse_heldout_errors(const config::ConfigNode& node) {
  if (!node.is_map()) node.fail("expected a map with measurements, cluster and kinds");
  node.check_keys(std::vector<std::string>{"measurements", "cluster", "kinds"});
  HeldOutErrors out;
  const config::ConfigNode files = node.child("measurements");
  if (files.is_sequence()) {
    if (files.size() == 0)
      node.fail_key("measurements", "empty list (expected one or more CSV paths)");
    for (std::size_t i = 0; i < files.size(); ++i)
      out.measurements.push_back(files.at(i).as_string());
  } else {
    out.measurements.push_back(node.get_string("measurements"));
  }
  out.cluster = node.get_string("cluster", "");
  const config::ConfigNode kinds = node.child("kinds");
  for (const auto& kind : kinds.keys()) {
    const config::ConfigNode k = kinds.child(kind);
    k.check_keys(std::vector<std::string>{"rows", "median_abs_err", "p90_abs_err"});
    HeldOutError e;
    e.rows = k.get_positive_int32("rows");
    e.median_abs_err = k.get_double("median_abs_err");
    e.p90_abs_err = k.get_double("p90_abs_err");
    if (e.median_abs_err < 0)
      k.fail_key("median_abs_err", "negative (expected a fraction >= 0, 0.05 = 5%)");
    if (e.p90_abs_err < e.median_abs_err)
      k.fail_key("p90_abs_err", "below median_abs_err (expected a fraction >= the median)");
    out.by_kind[kind] = e;
  }
  return out;
}

}  // namespace overlapsim::sim
