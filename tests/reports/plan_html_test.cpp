// index.html as text: structure, escaping of hostile strings, tolerance of missing sections,
// and the vendored scripts' fitness for inlining. tests/reports/plan_html_browser_test.cpp
// checks what a browser makes of it.
#include "reports/plan_html.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>

#include "reports/plan_charts.hpp"
#include "reports/vega_assets.hpp"
#include "tests/reports/fixture.hpp"

namespace overlapsim::reports {
namespace {

using test::count;
using test::plan_fixture;

const char* kChartIds[] = {"chart-step-vs-nodes", "chart-breakdown", "chart-pareto", "chart-memory",
                           "chart-bands"};

// The document inside <script type="application/json" id="overlapsim-charts">.
nlohmann::json chart_data(const std::string& html) {
  const std::string open = R"(<script type="application/json" id="overlapsim-charts">)";
  const std::size_t from = html.find(open);
  if (from == std::string::npos) return nullptr;
  const std::size_t start = from + open.size();
  return nlohmann::json::parse(html.substr(start, html.find("</script>", start) - start));
}

TEST(PlanHtml, FixtureHasEveryChartAndEveryConfigurationRow) {
  const std::string html = render_plan_html(plan_fixture());
  for (const char* id : kChartIds)
    EXPECT_EQ(count(html, std::string("<div class=\"chart\" id=\"") + id + "\">"), 1u) << id;
  EXPECT_EQ(count(html, "<tr class=\"status-feasible\""), 4u);
  EXPECT_EQ(count(html, "<tr class=\"status-rejected\""), 1u);
  EXPECT_EQ(count(html, "<tr class=\"status-pruned\""), 1u);
  // The rejected configuration carries its memory breakdown (GiB, the fixture's terms).
  EXPECT_NE(html.find("weights 20.0; gradients 20.0; optimizer 40.0; activations 10.0"),
            std::string::npos);
  // Provenance: one row per entry, the kinds kept.
  EXPECT_EQ(count(html, "<tr class=\"kind-"), 6u);
  EXPECT_NE(html.find("<tr class=\"kind-measured\">"), std::string::npos);
  EXPECT_NE(html.find("<tr class=\"kind-assumed\">"), std::string::npos);
  const nlohmann::json charts = chart_data(html);
  ASSERT_TRUE(charts.is_array());
  EXPECT_EQ(charts.size(), 5u);
}

TEST(PlanHtml, ChartDataFollowTheResults) {
  const std::vector<PlanChart> charts = plan_charts(plan_fixture());
  ASSERT_EQ(charts.size(), 5u);
  // Step time vs nodes: the fastest per (cluster, design, nodes), 2 x 2 x 2 rows.
  const nlohmann::json& steps = charts[0].spec["data"]["values"];
  ASSERT_EQ(steps.size(), 8u);
  // The breakdown: 8 runs x 3 parts, fastest first (c0 n2 tilewise, 0.95 s).
  const nlohmann::json& parts = charts[1].spec["data"]["values"];
  ASSERT_EQ(parts.size(), 24u);
  EXPECT_EQ(parts[0]["step_time_s"], 0.95);
  EXPECT_EQ(parts[0]["part"], "compute");
  EXPECT_EQ(parts[0]["seconds"], 0.8);
  // The Pareto front marks exactly the three pairs results.json lists.
  const nlohmann::json& cost = charts[2].spec["data"]["values"];
  ASSERT_EQ(cost.size(), 8u);
  EXPECT_EQ(
      std::count_if(cost.begin(), cost.end(), [](const auto& v) { return v["front"] == true; }), 3);
  // Memory: 6 configurations x 5 terms, and the capacity of each (rejected one included).
  EXPECT_EQ(charts[3].spec["layer"][0]["data"]["values"].size(), 30u);
  const nlohmann::json& capacity = charts[3].spec["layer"][1]["data"]["values"];
  ASSERT_EQ(capacity.size(), 6u);
  EXPECT_NEAR(capacity[5]["capacity_GiB"].get<double>(), 80e9 / (1u << 30), 1e-9);
  // Bands: the 4 fastest entries with their low/high.
  const nlohmann::json& bands = charts[4].spec["data"]["values"];
  ASSERT_EQ(bands.size(), 4u);
  EXPECT_NEAR(bands[0]["band_low_s"].get<double>(), 1.1 * 0.92, 1e-9);
  EXPECT_NEAR(bands[0]["band_high_s"].get<double>(), 1.1 * 1.08, 1e-9);
}

TEST(PlanHtml, HostileStringsRenderInert) {
  const std::string html = render_plan_html(plan_fixture());
  EXPECT_EQ(html.find("<script>alert(1)</script>"), std::string::npos);
  EXPECT_NE(html.find("<title>Capacity plan: &lt;script&gt;alert(1)&lt;/script&gt;</title>"),
            std::string::npos);
  EXPECT_EQ(html.find("<script>document.body"), std::string::npos);
  // The body (past the inlined libraries, whose code holds tags in strings) has no tag
  // from the document.
  const std::string body = html.substr(html.find("</head>"));
  EXPECT_EQ(body.find("<img"), std::string::npos);
  EXPECT_EQ(body.find("<b>"), std::string::npos);
  EXPECT_NE(html.find("tiny &lt;b&gt;&amp;&lt;/b&gt;.yaml"), std::string::npos);
  // Only our five script elements: three libraries, the chart data, the drawing code.
  EXPECT_EQ(count(html, "<script"), 5u);
  EXPECT_EQ(count(html, "</script>"), 5u);
  // The chart data still hold the names verbatim once parsed.
  const std::string dumped = chart_data(html).dump();
  EXPECT_NE(dumped.find("h100 </script><script>document.body.dataset.pwned=1</script>"),
            std::string::npos);
}

// The cheapest configuration comes with the command that simulates it alone: the plan's
// model file, the cluster file its key names, the key as --configuration; all escaped. A
// configuration --include asked for says so in the table.
TEST(PlanHtml, CheapestComesWithItsSimulateCommandAndRequestedRowsSaySo) {
  const std::string html = render_plan_html(plan_fixture());
  EXPECT_NE(html.find("<code>overlapsim simulate -w workloads/models/tiny &lt;b&gt;&amp;&lt;/b&gt;"
                      ".yaml -c workloads/clusters/h200-8gpu.yaml --configuration 'c0 n1 tp8 pp1 "
                      "v1 cp1 ep1 dp1 mb1 sp1 none' --design tilewise --trace step.json</code>"),
            std::string::npos);
  // The rejected point was asked for by --include.
  EXPECT_NE(html.find("<td>rejected (requested)</td>"), std::string::npos);
  EXPECT_EQ(count(html, "(requested)"), 1u);
  nlohmann::json other = plan_fixture();
  other["cheapest"]["configuration"] = "c7 n1 tp8 pp1 v1 cp1 ep1 dp1 mb1 sp1 none";
  EXPECT_EQ(render_plan_html(other).find("<code>overlapsim simulate"), std::string::npos)
      << "a key naming no cluster of the plan gets no command";
}

TEST(PlanHtml, MissingSectionsLeaveNotesNotCrashes) {
  for (const nlohmann::json& doc :
       {nlohmann::json(), nlohmann::json::object(), nlohmann::json::array({1, 2}),
        nlohmann::json({{"points", 5}, {"clusters", "x"}, {"pareto", nullptr}})}) {
    std::string html;
    ASSERT_NO_THROW(html = render_plan_html(doc)) << doc.dump();
    EXPECT_EQ(count(html, "<div class=\"chart\""), 0u) << doc.dump();
    EXPECT_NE(html.find("Not drawn: results.json has no simulated runs"), std::string::npos);
    EXPECT_NE(html.find("results.json lists no configurations."), std::string::npos);
    EXPECT_NE(html.find("</html>"), std::string::npos);
  }
}

TEST(PlanHtml, MistypedPointsBecomeRowsWithoutCharts) {
  const nlohmann::json doc = {
      {"points", {{{"status", "feasible"}, {"runs", {{{"step_time_s", "fast"}}}}}, 7, nullptr}}};
  std::string html;
  ASSERT_NO_THROW(html = render_plan_html(doc));
  EXPECT_EQ(count(html, "<div class=\"chart\""), 0u);
  EXPECT_EQ(count(html, "<tr class=\"status-"), 3u);
}

TEST(PlanHtml, AnOptionalSectionMissingOmitsOnlyItsChart) {
  nlohmann::json doc = plan_fixture();
  doc.erase("fastest");
  doc.erase("pareto");
  for (auto& p : doc["points"]) p["memory"].erase("gpu_memory_bytes");
  const std::string html = render_plan_html(doc);
  EXPECT_EQ(count(html, "<div class=\"chart\""), 4u);
  EXPECT_EQ(html.find("id=\"chart-bands\""), std::string::npos);
  EXPECT_NE(html.find("Not drawn: results.json names no fastest configuration"), std::string::npos);
  EXPECT_NE(html.find("results.json lists no Pareto front"), std::string::npos);
  EXPECT_NE(html.find("results.json gives no GPU capacity."), std::string::npos);
  EXPECT_EQ(count(html, "<tr class=\"status-"), 6u);
}

TEST(PlanHtml, SameResultsSamePage) {
  // A plan run on MPI ranks must write the bytes a local run writes.
  EXPECT_EQ(render_plan_html(plan_fixture()), render_plan_html(plan_fixture()));
}

TEST(PlanHtml, CostChartFollowsTheCostAxis) {
  nlohmann::json doc = plan_fixture();
  doc["cost_axis"] = "gpu_hours_per_step";
  const PlanChart cost = plan_charts(doc)[2];
  ASSERT_FALSE(cost.spec.is_null());
  EXPECT_EQ(cost.spec["layer"][0]["encoding"]["y"]["title"], "GPU-hours per step");
  // The fastest pair: c0 n2 tilewise, 16 GPUs x 0.95 s.
  double fastest_cost = 0;
  for (const auto& v : cost.spec["data"]["values"])
    if (v["step_time_s"] == 0.95) fastest_cost = v["cost"].get<double>();
  EXPECT_NEAR(fastest_cost, 16 * 0.95 / 3600, 1e-12);
}

TEST(VegaAssets, EmbeddedAndSafeToInline) {
  for (const std::string_view js : {vega_js(), vega_lite_js(), vega_embed_js()}) {
    EXPECT_GT(js.size(), 10000u);
    EXPECT_EQ(js.substr(0, 9), "!function");
    std::string lower(js);
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
    EXPECT_EQ(lower.find("</script"), std::string::npos);
    EXPECT_EQ(lower.find("<script"), std::string::npos);
    EXPECT_EQ(lower.find("<!--"), std::string::npos);
  }
  // The pinned versions (third_party/vega/README.md).
  EXPECT_NE(vega_js().find("\"6.4.0\""), std::string_view::npos);
  EXPECT_NE(vega_lite_js().find("\"6.5.0\""), std::string_view::npos);
}

}  // namespace
}  // namespace overlapsim::reports
