#include <filesystem>

#include "config/atomic_file.hpp"
#include "planning/reports.hpp"

namespace overlapsim::planning {

void write_plan_reports(const std::string& dir, const PlanResult& result) {
  config::make_directories(dir, "--out");
  const std::filesystem::path d(dir);
  config::write_file_atomic((d / "report.md").string(), plan_markdown(result));
  config::write_file_atomic((d / "results.csv").string(), plan_csv(result));
  config::write_file_atomic((d / "results.json").string(), plan_json(result));
}

}  // namespace overlapsim::planning
