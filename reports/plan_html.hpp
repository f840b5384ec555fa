#pragma once
// index.html of a capacity plan: one self-contained, offline page (the vendored Vega,
// Vega-Lite and vega-embed inlined) with the plan's charts and tables, rendered from the
// planner's results.json document. Fields read and what is drawn: docs/plan-report.md.
#include <nlohmann/json.hpp>
#include <string>

namespace overlapsim::reports {

// Never throws on the document's shape: a missing or mistyped section leaves its chart or
// table out with a note. Every string from the document is escaped (HTML text, or JSON
// inside a <script type="application/json"> element).
std::string render_plan_html(const nlohmann::json& results);

}  // namespace overlapsim::reports
