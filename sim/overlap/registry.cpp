#include "sim/overlap/registry.hpp"

#include <fmt/format.h>

#include <stdexcept>

namespace overlapsim::sim {
namespace {

template <class Design>
std::unique_ptr<OverlapDesign> make_paired(const Profile& profile, const DesignOptions&) {
  return std::make_unique<Design>(profile);
}

std::unique_ptr<OverlapDesign> make_sequential(const Profile&, const DesignOptions&) {
  return std::make_unique<SequentialDesign>();
}

std::unique_ptr<OverlapDesign> make_tilewise(const Profile& profile, const DesignOptions& o) {
  return std::make_unique<TilewiseDesign>(profile, o.tilewise_transport);
}

}  // namespace

const std::vector<DesignEntry>& design_table() {
  static const std::vector<DesignEntry> table = {
      {"sequential", "the op, then its collective on the same stream (cuBLAS, then NCCL)",
       &make_sequential},
      {"decomposed", "the op in k chunks, chunk i's collective on a second stream after chunk i",
       &make_paired<DecomposedDesign>},
      {"tilewise", "one GEMM signalling per tile; wave groups leave by NCCL or by the copy engines",
       &make_tilewise},
      {"fused", "one kernel: each CTA computes its tile and pushes it to its peers itself",
       &make_paired<FusedDesign>},
      {"shaped", "op and collective concurrently, the op's SMs limited, comm at high priority",
       &make_paired<ShapedDesign>},
  };
  return table;
}

const std::vector<std::string>& design_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const DesignEntry& e : design_table()) out.emplace_back(e.name);
    return out;
  }();
  return names;
}

bool is_design_name(std::string_view name) {
  for (const auto& n : design_names())
    if (n == name) return true;
  return false;
}

std::string design_list(std::string_view separator) {
  return fmt::format("{}", fmt::join(design_names(), separator));
}

std::unique_ptr<OverlapDesign> make_design(const std::string& name, const Profile& profile,
                                           const DesignOptions& options) {
  for (const DesignEntry& e : design_table())
    if (name == e.name) return e.make(profile, options);
  throw std::invalid_argument(fmt::format("design '{}' is not one of {}", name, design_list()));
}

const PairedDesign* as_paired(const OverlapDesign& design) {
  return dynamic_cast<const PairedDesign*>(&design);
}
PairedDesign* as_paired(OverlapDesign& design) { return dynamic_cast<PairedDesign*>(&design); }

const char* to_string(TilewiseDesign::Transport transport) {
  return transport == TilewiseDesign::Transport::CopyEngine ? "copy_engine" : "nccl";
}

bool parse_tilewise_transport(std::string_view text, TilewiseDesign::Transport& out) {
  if (text == "nccl")
    out = TilewiseDesign::Transport::Nccl;
  else if (text == "copy_engine")
    out = TilewiseDesign::Transport::CopyEngine;
  else
    return false;
  return true;
}

}  // namespace overlapsim::sim
