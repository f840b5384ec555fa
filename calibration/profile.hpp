#pragma once
// The profile YAML format (docs/profile-format.md): loading with checked keys and units,
// and printing a loaded profile as a readable table (NCCL tuning.cc style: the cost
// model is data anyone can print).
#include <string>
#include <vector>

#include "config/config_node.hpp"
#include "sim/compute/profile.hpp"

namespace overlapsim::calibration {

// Throws config::ConfigError ("file:line:col: key: what was wrong (expected ...)") for
// unknown keys, wrong units, missing sources and inconsistent tables.
sim::Profile load_profile(const std::string& path);
sim::Profile load_profile_string(const std::string& yaml, const std::string& name);
sim::Profile load_profile_node(const config::ConfigNode& root, const std::string& name);

// The documented top-level and per-section keys, for `overlapsim profile --keys` and docs.
const std::vector<config::ParamDoc>& profile_params();

// Human-readable dump of every number with its unit and source.
std::string format_profile(const sim::Profile& profile);

}  // namespace overlapsim::calibration
