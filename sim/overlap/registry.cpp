#include "sim/overlap/registry.hpp"

#include <fmt/format.h>

#include <stdexcept>

#include "sim/overlap/designs.hpp"

namespace overlapsim::sim {

std::unique_ptr<OverlapDesign> make_design(const std::string& name, const Profile& profile) {
  if (name == "sequential") return std::make_unique<SequentialDesign>();
  if (name == "decomposed") return std::make_unique<DecomposedDesign>(profile);
  if (name == "tilewise") return std::make_unique<TilewiseDesign>(profile);
  if (name == "fused") return std::make_unique<FusedDesign>(profile);
  if (name == "shaped") return std::make_unique<ShapedDesign>(profile);
  throw std::invalid_argument(fmt::format(
      "design '{}' is not one of sequential, decomposed, tilewise, fused, shaped", name));
}

const PairedDesign* as_paired(const OverlapDesign& design) {
  return dynamic_cast<const PairedDesign*>(&design);
}
PairedDesign* as_paired(OverlapDesign& design) { return dynamic_cast<PairedDesign*>(&design); }

}  // namespace overlapsim::sim
