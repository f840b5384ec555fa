#pragma once
// The plan report's charts as Vega-Lite specifications, data inlined, built from the
// planner's results.json (fields read: docs/plan-report.md). A chart whose data is missing
// comes back without a spec and with a note saying why.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace overlapsim::reports {

struct PlanChart {
  std::string id;  // the element id of its container, e.g. "chart-step-vs-nodes"
  std::string title;
  std::string caption;  // what it shows
  nlohmann::json spec;  // Vega-Lite; null when the chart is not drawn
  std::string note;     // why it is not drawn, or what it leaves out; may be empty
};

// In order: step time vs nodes, time breakdown, cost-time Pareto front, memory against
// capacity, error bands of the fastest configurations.
std::vector<PlanChart> plan_charts(const nlohmann::json& results);

}  // namespace overlapsim::reports
