#include "calibration/validation_record.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>
#include <vector>

namespace overlapsim::calibration {
namespace {

bool starts_top_level_key(const std::string& line) {
  return !line.empty() && line[0] != ' ' && line[0] != '\t' && line[0] != '#' && line[0] != '-';
}

}  // namespace

std::string with_validation_section(const std::string& profile_text, const ValidationReport& report,
                                    const std::vector<std::string>& measurements,
                                    const std::string& cluster) {
  // Drop the old section: from its key to the next top-level key.
  std::istringstream in(profile_text);
  std::vector<std::string> kept;
  bool skipping = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("validation:", 0) == 0) {
      skipping = true;
      continue;
    }
    if (skipping && starts_top_level_key(line)) skipping = false;
    if (!skipping) kept.push_back(line);
  }
  while (!kept.empty() && kept.back().empty()) kept.pop_back();

  std::string out;
  for (const auto& line : kept) out += line + "\n";
  out += "validation:\n";
  std::string flags;
  for (const std::string& m : measurements) flags += " --measurements " + m;
  out += fmt::format(
      "  # overlapsim validate --profile {}{}{} --record\n"
      "  # |predicted - measured| / measured per kind (docs/calibration.md lists the kinds)\n",
      report.profile_path, flags, cluster.empty() ? "" : " --cluster " + cluster);
  // One file as a plain path (as every profile recorded before lists), several as a list.
  if (measurements.size() == 1)
    out += fmt::format("  measurements: {}\n", measurements.front());
  else
    out += fmt::format("  measurements: [{}]\n", fmt::join(measurements, ", "));
  if (!cluster.empty()) out += fmt::format("  cluster: {}\n", cluster);
  out += "  kinds:\n";
  // Compute rows per input type even where only one type was measured, so a projection in
  // another precision does not borrow their error.
  std::vector<KindStats> kinds = report.kinds;
  std::map<std::string, std::vector<double>> by_dtype;
  for (const auto& row : report.rows)
    if (row.kind == "compute" && row.sub_kind.rfind("compute_", 0) == 0)
      by_dtype[row.sub_kind].push_back(std::fabs(row.rel_err));
  for (auto& [kind, errors] : by_dtype)
    if (std::none_of(kinds.begin(), kinds.end(),
                     [&name = kind](const KindStats& k) { return k.kind == name; }))
      kinds.push_back(kind_stats(kind, std::move(errors)));
  for (const KindStats& k : kinds)
    out += fmt::format("    {}: {{rows: {}, median_abs_err: {:.4g}, p90_abs_err: {:.4g}}}\n",
                       k.kind, k.count, k.median_abs_err, k.p90_abs_err);
  return out;
}

}  // namespace overlapsim::calibration
