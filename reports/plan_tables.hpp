#pragma once
// The plan report's HTML tables, built from the planner's results.json (fields read:
// docs/plan-report.md). Every string from the document is HTML-escaped; a missing section
// becomes a one-line note instead of a table.
#include <nlohmann/json.hpp>
#include <string>

namespace overlapsim::reports {

std::string summary_table(const nlohmann::json& results);         // model, target, counts
std::string clusters_table(const nlohmann::json& results);        // GPUs, prices, power
std::string choices_table(const nlohmann::json& results);         // fastest, cheapest, Pareto
std::string configurations_table(const nlohmann::json& results);  // every configuration
std::string provenance_table(const nlohmann::json& results);      // measured ... assumed
// What the validation says the simulator gets wrong for this model: "" where nothing.
std::string caveats_list(const nlohmann::json& results);

}  // namespace overlapsim::reports
