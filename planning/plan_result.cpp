#include "planning/plan_result.hpp"

#include <fmt/format.h>

#include "planning/configuration_text.hpp"

namespace overlapsim::planning {

std::string PlanConfig::key() const {
  return fmt::format("c{} {}", cluster, configuration_text(*this));
}

const char* to_string(PointStatus s) {
  switch (s) {
    case PointStatus::Feasible:
      return "feasible";
    case PointStatus::Rejected:
      return "rejected";
    case PointStatus::Pruned:
      return "pruned";
  }
  return "?";
}

std::string PlanTarget::describe() const {
  switch (kind) {
    case TargetKind::None:
      return "none";
    case TargetKind::StepTime:
      return fmt::format("step time <= {:.6g} s", value);
    case TargetKind::TokensPerDay:
      return fmt::format(">= {:.6g} tokens per day", value);
    case TargetKind::Tokens:
      return deadline_s > 0
                 ? fmt::format("{:.6g} tokens within {:.6g} days", value, deadline_s / 86400)
                 : fmt::format("{:.6g} tokens (time and cost to train)", value);
  }
  return "?";
}

}  // namespace overlapsim::planning
