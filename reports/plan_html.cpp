#include "reports/plan_html.hpp"

#include "reports/html_escape.hpp"
#include "reports/json_fields.hpp"
#include "reports/plan_charts.hpp"
#include "reports/plan_tables.hpp"
#include "reports/vega_assets.hpp"

namespace overlapsim::reports {

namespace {

const char* kStyle = R"(
body { font-family: sans-serif; margin: 1.5em auto; max-width: 1200px; padding: 0 1em; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; font-size: 0.85em; margin: 0.5em 0; }
th, td { border: 1px solid #ddd; padding: 0.2em 0.5em; text-align: left; vertical-align: top; }
thead th { background: #f3f3f3; position: sticky; top: 0; }
.summary th { background: #f3f3f3; }
tr.status-rejected { background: #fdecea; } tr.status-pruned { background: #f5f5f5; color: #666; }
.chart { width: 100%; min-height: 60px; } .note { color: #666; font-style: italic; }
.source { color: #666; } figure { margin: 1em 0; } figcaption { color: #444; font-size: 0.9em; }
.scroll { max-height: 40em; overflow: auto; } td code { white-space: nowrap; }
)";

// Draws every chart of the JSON element #overlapsim-charts; a failure goes to the console
// (where the browser test looks) and into the chart's container.
const char* kDrawScript = R"(
(function () {
  var charts = JSON.parse(document.getElementById('overlapsim-charts').textContent);
  charts.forEach(function (chart) {
    var el = document.getElementById(chart.id);
    vegaEmbed(el, chart.spec, { mode: 'vega-lite', renderer: 'svg', actions: false })
      .catch(function (err) {
        console.error('chart ' + chart.id + ' failed: ' + err);
        el.textContent = 'This chart failed to draw: ' + err;
        el.setAttribute('data-failed', 'true');
      });
  });
})();
)";

std::string inline_script(std::string_view code) {
  std::string out = "<script>";
  out += code;
  out += "</script>\n";
  return out;
}

}  // namespace

std::string render_plan_html(const nlohmann::json& results) {
  const std::string model = text(results, "model");
  const std::vector<PlanChart> charts = plan_charts(results);

  std::string html = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  html += "<meta name=\"generator\" content=\"overlapsim plan\">\n";
  html += "<title>Capacity plan: " + html_escape(model.empty() ? "unnamed model" : model) +
          "</title>\n";
  html += "<style>" + std::string(kStyle) + "</style>\n";
  html += inline_script(vega_js());
  html += inline_script(vega_lite_js());
  html += inline_script(vega_embed_js());
  html += "</head>\n<body>\n";
  html += "<h1>Capacity plan: " + html_escape(model.empty() ? "unnamed model" : model) + "</h1>\n";
  html += summary_table(results);

  html += "<h2>Clusters</h2>\n" + clusters_table(results);
  html += "<h2>Best configurations</h2>\n" + choices_table(results);

  html += "<h2>Charts</h2>\n";
  nlohmann::json drawn = nlohmann::json::array();
  for (const PlanChart& c : charts) {
    html += "<figure>\n<h3>" + html_escape(c.title) + "</h3>\n";
    if (!c.spec.is_null()) {
      html += "<div class=\"chart\" id=\"" + html_escape(c.id) + "\"></div>\n";
      drawn.push_back({{"id", c.id}, {"spec", c.spec}});
    }
    html += "<figcaption>" + html_escape(c.caption) + "</figcaption>\n";
    if (!c.note.empty()) html += "<p class=\"note\">" + html_escape(c.note) + "</p>\n";
    html += "</figure>\n";
  }

  html +=
      "<h2>Every configuration</h2>\n<p>Feasible configurations were simulated; rejected "
      "ones do not fit in the GPU's memory (their breakdown is given); pruned ones fit "
      "but the analytic pre-screen ranked them out before simulation.</p>\n";
  html += "<div class=\"scroll\">\n" + configurations_table(results) + "</div>\n";
  html +=
      "<h2>Provenance</h2>\n<p>Where each number the plan rests on comes from: measured, "
      "fitted, cited (datasheet or paper) or assumed.</p>\n" +
      provenance_table(results);
  if (const std::string caveats = caveats_list(results); !caveats.empty())
    html +=
        "<h2>Caveats from the validation</h2>\n<p>What the comparison with published runs "
        "says these projections get wrong (docs/validation.md).</p>\n" +
        caveats;

  html += "<script type=\"application/json\" id=\"overlapsim-charts\">" + script_json(drawn) +
          "</script>\n";
  html += inline_script(kDrawScript);
  html += "</body>\n</html>\n";
  return html;
}

}  // namespace overlapsim::reports
