#include "sim/compute/design_params.hpp"

namespace overlapsim::sim {

const std::vector<std::string>& design_names() {
  static const std::vector<std::string> names = {"sequential", "decomposed", "tilewise", "fused",
                                                 "shaped"};
  return names;
}

bool is_design_name(std::string_view name) {
  for (const auto& n : design_names())
    if (n == name) return true;
  return false;
}

const Sourced* DesignParams::find(const std::string& design, const std::string& key) const {
  auto d = by_design.find(design);
  if (d == by_design.end()) return nullptr;
  auto p = d->second.find(key);
  return p == d->second.end() ? nullptr : &p->second;
}

}  // namespace overlapsim::sim
