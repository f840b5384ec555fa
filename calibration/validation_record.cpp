#include "calibration/validation_record.hpp"

#include <fmt/format.h>

#include <sstream>
#include <vector>

namespace overlapsim::calibration {
namespace {

bool starts_top_level_key(const std::string& line) {
  return !line.empty() && line[0] != ' ' && line[0] != '\t' && line[0] != '#' && line[0] != '-';
}

}  // namespace

std::string with_validation_section(const std::string& profile_text,
                                    const ValidationReport& report,
                                    const std::string& measurements, const std::string& cluster) {
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
  out += fmt::format(
      "  # overlapsim validate --profile {} --measurements {}{} --record\n"
      "  # |predicted - measured| / measured per kind (docs/calibration.md lists the kinds)\n",
      report.profile_path, measurements, cluster.empty() ? "" : " --cluster " + cluster);
  out += fmt::format("  measurements: {}\n", measurements);
  if (!cluster.empty()) out += fmt::format("  cluster: {}\n", cluster);
  out += "  kinds:\n";
  for (const KindStats& k : report.kinds)
    out += fmt::format("    {}: {{rows: {}, median_abs_err: {:.4g}, p90_abs_err: {:.4g}}}\n",
                       k.kind, k.count, k.median_abs_err, k.p90_abs_err);
  return out;
}

}  // namespace overlapsim::calibration
