#pragma once
// The hand-written results.json of a tiny plan (tests/reports/data/plan_results.json):
// 2 clusters x 2 node counts x 2 designs; 4 feasible configurations (8 runs), 1 rejected
// for memory, 1 pruned; hostile strings in the model name, a cluster name, a file path and
// a reason. Its field names follow planning/report_json.cpp.
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

namespace overlapsim::reports::test {

inline nlohmann::json plan_fixture() {
  std::ifstream in(std::string(OVERLAPSIM_SOURCE_DIR) + "/tests/reports/data/plan_results.json");
  return nlohmann::json::parse(in);
}

inline std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace overlapsim::reports::test
