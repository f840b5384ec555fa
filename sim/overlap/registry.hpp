#pragma once
// Overlap designs by name (design_names(): sequential, decomposed, tilewise, fused,
// shaped), built with the parameters of a profile.
#include <memory>
#include <string>

#include "sim/compute/profile.hpp"
#include "sim/exec/overlap_design.hpp"
#include "sim/overlap/paired_design.hpp"

namespace overlapsim::sim {

// Throws std::invalid_argument for an unknown name or a parameter the profile lacks.
std::unique_ptr<OverlapDesign> make_design(const std::string& name, const Profile& profile);

// The design's pair statistics and parameters; nullptr for sequential.
const PairedDesign* as_paired(const OverlapDesign& design);
PairedDesign* as_paired(OverlapDesign& design);

}  // namespace overlapsim::sim
