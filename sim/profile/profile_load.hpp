#pragma once
// The profile YAML format (docs/profile-format.md): loading with checked keys and units,
// and printing a loaded profile as a readable table (NCCL tuning.cc style: the cost
// model is data anyone can print).
#include <string>
#include <vector>

#include "config/config_node.hpp"
#include "sim/profile/profile.hpp"

namespace overlapsim::sim {

// Throws config::ConfigError ("file:line:col: key: what was wrong (expected ...)") for
// unknown keys, wrong units, missing sources and inconsistent tables.
Profile load_profile(const std::string& path);
Profile load_profile_string(const std::string& yaml, const std::string& name);
Profile load_profile_node(const config::ConfigNode& root, const std::string& name);

// The documented top-level and per-section keys, for `overlapsim profile --keys` and docs.
const std::vector<config::ParamDoc>& profile_params();

// Reads the software a measurement ran on, the optional keys a calibration manifest and a
// profile's device section share ("" when absent): driver, cuda, nccl, host, date.
void read_software(const config::ConfigNode& node, std::string& driver, std::string& cuda,
                   std::string& nccl, std::string& host, std::string& date);

// Human-readable dump of every number with its unit and source.
std::string format_profile(const Profile& profile);

}  // namespace overlapsim::sim
