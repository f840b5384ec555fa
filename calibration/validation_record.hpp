#pragma once
// `overlapsim validate --record`: writes the held-out errors of a validation into the
// profile it validated, as its `validation` section (sim/profile/heldout_errors.hpp), so
// that projections made with the profile can say how uncertain each class of numbers is.
// Only that section changes; the rest of the file, comments included, stays as it was.
#include <string>
#include <vector>

#include "calibration/validate.hpp"

namespace overlapsim::calibration {

// The profile's text with its `validation` section replaced by (or, where it has none,
// followed by) one holding every kind of `report`. `measurements` (the held-out CSVs whose
// rows the report predicted) and `cluster` are the paths recorded with it
// (repository-relative).
std::string with_validation_section(const std::string& profile_text, const ValidationReport& report,
                                    const std::vector<std::string>& measurements,
                                    const std::string& cluster);

}  // namespace overlapsim::calibration
