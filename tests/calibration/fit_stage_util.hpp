#pragma once
// One fit stage run alone on hand-made rows, for the stages' tests.
#include <map>
#include <string>
#include <vector>

#include "calibration/fit.hpp"

namespace overlapsim::calibration::testing {

// What a stage wrote: the profile, its comments and its notes.
struct StageOutput {
  sim::Profile profile;
  std::map<std::string, std::string> comments;
  std::vector<std::string> notes;
};

template <class Stage>
StageOutput run_stage(Stage stage, const FitData& data) {
  StageOutput f;
  FitOutput out{f.profile, f.comments, f.notes};
  stage(data, out);
  return f;
}

}  // namespace overlapsim::calibration::testing
