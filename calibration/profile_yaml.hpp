#pragma once
// Writes a sim::Profile as profile YAML (docs/profile-format.md) that loads back through
// sim::load_profile: plain numbers in the unit of each key (shortest round-trip
// form, so a written profile reloads to the same doubles), keys in a fixed order, comments
// where the writer is told to put them. Deterministic: the same profile gives the same
// bytes.
#include <map>
#include <string>

#include "sim/profile/profile.hpp"

namespace overlapsim::calibration {

struct ProfileYamlOptions {
  std::string header;  // comment lines at the top (without '#')
  std::string kind = "measured";
  std::string description;
  sim::Provenance device_source;  // DeviceInfo does not keep its provenance
  // Comment lines put before an item, keyed by "compute.gemm_tables.bf16",
  // "compute.efficiency.memory", "collectives.<index>",
  // "collectives.<index>.in_compute_loop_factor", "interference",
  // "designs.<design>.<key>", "measurements".
  std::map<std::string, std::string> comments;
};

std::string format_profile_yaml(const sim::Profile& profile, const ProfileYamlOptions& options);

// Shortest decimal that reads back to the same double ("1.03e-06", "0.5").
std::string yaml_number(double value);
// A YAML double-quoted string.
std::string yaml_quoted(const std::string& text);

}  // namespace overlapsim::calibration
