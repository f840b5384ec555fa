#pragma once
// The plan's report files, each rendered from PlanResult alone: report.md (for people),
// results.csv (one row per (configuration, design); tag columns first), results.json (the
// same plus the summaries and the provenance list). Formats: docs/plan.md.
#include <string>

#include "planning/plan_result.hpp"

namespace overlapsim::planning {

std::string plan_markdown(const PlanResult& result);
std::string plan_csv(const PlanResult& result);
std::string plan_json(const PlanResult& result);

// Writes the three files into `dir` (created if missing), each atomically (a temporary file
// beside it, then rename).
void write_plan_reports(const std::string& dir, const PlanResult& result);

}  // namespace overlapsim::planning
