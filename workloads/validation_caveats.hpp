#pragma once
// What the validation against published runs says the simulator does not get right for a
// model (docs/validation.md): printed beside a projection so that its band is not read as
// the whole uncertainty.
#include <string>
#include <vector>

#include "workloads/model.hpp"

namespace overlapsim::workloads {

struct ValidationCaveat {
  std::string topic;  // e.g. "moe layers"
  std::string text;   // what is off, by how much, and where the evidence is
};

// The caveats that apply to `model` (any resolution); empty where the validation found none.
std::vector<ValidationCaveat> validation_caveats(const ModelSpec& model);

}  // namespace overlapsim::workloads
