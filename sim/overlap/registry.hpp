#pragma once
// The overlap designs by name: one table (name, one-line description, factory) that the
// CLI's help, design_names(), the profile's `designs:` keys and the scenario library all
// read, so the list is spelled in one place.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sim/exec/overlap_design.hpp"
#include "sim/overlap/designs.hpp"
#include "sim/overlap/paired_design.hpp"
#include "sim/profile/profile.hpp"

namespace overlapsim::sim {

// Choices that select a variant of a design rather than a profile parameter.
struct DesignOptions {
  TilewiseDesign::Transport tilewise_transport = TilewiseDesign::Transport::Nccl;
};

struct DesignEntry {
  const char* name;         // as in the CLI, YAML, CSV and reports
  const char* description;  // one line
  std::unique_ptr<OverlapDesign> (*make)(const Profile& profile, const DesignOptions& options);
};

// Per class of pair the design a tuner found fastest (sim/overlap/best_design.hpp); not a
// row of the table (it has no profile parameters of its own): the scenario builds it.
inline constexpr const char* kBestDesign = "best";

// sequential, decomposed, tilewise, fused, shaped: in the order reports list them.
const std::vector<DesignEntry>& design_table();
const std::vector<std::string>& design_names();
bool is_design_name(std::string_view name);
// "sequential, decomposed, tilewise, fused, shaped"
std::string design_list(std::string_view separator = ", ");

// Throws std::invalid_argument for an unknown name or a parameter the profile lacks.
std::unique_ptr<OverlapDesign> make_design(const std::string& name, const Profile& profile,
                                           const DesignOptions& options = {});

// The design's pair statistics and parameters; nullptr for sequential.
const PairedDesign* as_paired(const OverlapDesign& design);
PairedDesign* as_paired(OverlapDesign& design);

// "nccl" / "copy_engine", the transport's one name; nullopt-like false for others.
const char* to_string(TilewiseDesign::Transport transport);
bool parse_tilewise_transport(std::string_view text, TilewiseDesign::Transport& out);

}  // namespace overlapsim::sim
