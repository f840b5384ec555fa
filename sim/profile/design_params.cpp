#include "sim/profile/design_params.hpp"

namespace overlapsim::sim {

const Sourced* DesignParams::find(const std::string& design, const std::string& key) const {
  auto d = by_design.find(design);
  if (d == by_design.end()) return nullptr;
  auto p = d->second.find(key);
  return p == d->second.end() ? nullptr : &p->second;
}

}  // namespace overlapsim::sim
