#include "reports/plan_charts.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <utility>

#include "config/units.hpp"
#include "reports/json_fields.hpp"

namespace overlapsim::reports {

namespace {

using nlohmann::json;

// Bars per chart: more would not be readable; the tables list everything.
constexpr std::size_t kBreakdownBars = 25;
constexpr std::size_t kMemoryBarsPerStatus = 15;

// Pixels of a configuration's label on a bar chart's axis (the key is about 45 characters,
// the memory chart adds the stage and "rejected").
constexpr int kLabelLimit = 400;

const char* kSchema = "https://vega.github.io/schema/vega-lite/v6.json";

// One simulated (configuration, design) pair of results.json.
struct RunRef {
  std::size_t point = 0;
  const json* p = nullptr;
  const json* r = nullptr;
  double step_time_s = 0;
};

std::string point_key(const json& p, std::size_t index) {
  std::string key = text(p, "key");
  return key.empty() ? "point " + std::to_string(index) : key;
}

std::vector<RunRef> simulated_runs(const json& results) {
  std::vector<RunRef> out;
  const json& points = list(results, "points");
  for (std::size_t i = 0; i < points.size(); ++i)
    for (const json& r : list(points[i], "runs"))
      if (const auto t = number(r, "step_time_s"); t && *t > 0)
        out.push_back({i, &points[i], &r, *t});
  return out;
}

json base_spec(const std::string& description) {
  return {{"$schema", kSchema},
          {"description", description},
          {"width", "container"},
          // Fit the page's width only: bar charts take their height from their rows.
          {"autosize", {{"type", "fit-x"}, {"contains", "padding"}}},
          {"config", {{"font", "sans-serif"}, {"view", {{"stroke", nullptr}}}}}};
}

// A fixed height for charts with one row per category: Vega-Lite's default (a step per
// row) would make it drop the fit-to-width sizing with a console warning.
std::size_t bar_chart_height(std::size_t rows) { return std::max<std::size_t>(60, 20 * rows); }

json tooltip(std::initializer_list<std::pair<const char*, const char*>> fields) {
  json out = json::array();
  for (const auto& [name, type] : fields) out.push_back({{"field", name}, {"type", type}});
  return out;
}

// The fastest configuration per (cluster, design, node count), with its band.
PlanChart step_vs_nodes(const std::vector<RunRef>& runs) {
  PlanChart c{"chart-step-vs-nodes", "Step time vs nodes",
              "The fastest feasible configuration per cluster, design and node count; the "
              "shaded area is the step time's uncertainty band.",
              nullptr, ""};
  std::map<std::tuple<std::string, std::string, double>, RunRef> best;
  for (const RunRef& run : runs) {
    const auto nodes = number(*run.p, "nodes");
    if (!nodes) continue;
    const auto k = std::make_tuple(text(*run.p, "cluster"), text(*run.r, "design"), *nodes);
    const auto it = best.find(k);
    if (it == best.end() || run.step_time_s < it->second.step_time_s) best[k] = run;
  }
  if (best.empty()) {
    c.note = "Not drawn: results.json has no simulated runs with a node count.";
    return c;
  }
  json values = json::array();
  std::set<double> node_counts;
  for (const auto& [k, run] : best) {
    node_counts.insert(std::get<2>(k));
    const double lo = number(*run.r, "band_low_s").value_or(run.step_time_s);
    const double hi = number(*run.r, "band_high_s").value_or(run.step_time_s);
    values.push_back({{"cluster", std::get<0>(k)},
                      {"design", std::get<1>(k)},
                      {"nodes", std::get<2>(k)},
                      {"step_time_s", run.step_time_s},
                      {"band_low_s", lo},
                      {"band_high_s", hi},
                      {"configuration", point_key(*run.p, run.point)}});
  }
  json spec = base_spec(c.title);
  spec["height"] = 300;
  spec["data"] = {{"values", values}};
  const json x = {{"field", "nodes"},
                  {"type", "quantitative"},
                  {"scale", {{"type", "log"}, {"base", 2}}},
                  {"axis", {{"values", node_counts}, {"format", "d"}}},
                  {"title", "nodes"}};
  const json color = {{"field", "design"}, {"type", "nominal"}, {"title", "design"}};
  spec["layer"] = json::array(
      {{{"mark", {{"type", "errorband"}, {"opacity", 0.2}}},
        {"encoding",
         {{"x", x},
          {"y", {{"field", "band_low_s"}, {"type", "quantitative"}, {"title", "step time (s)"}}},
          {"y2", {{"field", "band_high_s"}}},
          {"color", color},
          {"detail", {{"field", "cluster"}, {"type", "nominal"}}}}}},
       {{"mark", {{"type", "line"}, {"point", true}}},
        {"encoding",
         {{"x", x},
          {"y", {{"field", "step_time_s"}, {"type", "quantitative"}}},
          {"color", color},
          {"strokeDash", {{"field", "cluster"}, {"type", "nominal"}, {"title", "cluster"}}},
          {"tooltip", tooltip({{"cluster", "nominal"},
                               {"design", "nominal"},
                               {"nodes", "quantitative"},
                               {"configuration", "nominal"},
                               {"step_time_s", "quantitative"},
                               {"band_low_s", "quantitative"},
                               {"band_high_s", "quantitative"}})}}}}});
  c.spec = std::move(spec);
  return c;
}

// Compute, exposed communication and bubble of the fastest runs, stacked.
PlanChart breakdown(const std::vector<RunRef>& runs) {
  PlanChart c{"chart-breakdown", "Where the step time goes",
              "Compute, exposed (not overlapped) communication and pipeline bubble of the "
              "fastest simulated (configuration, design) pairs.",
              nullptr, ""};
  if (runs.empty()) {
    c.note = "Not drawn: results.json has no simulated runs.";
    return c;
  }
  std::vector<RunRef> sorted = runs;
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const RunRef& a, const RunRef& b) { return a.step_time_s < b.step_time_s; });
  if (sorted.size() > kBreakdownBars) {
    c.note = "Showing the " + std::to_string(kBreakdownBars) + " fastest of " +
             std::to_string(sorted.size()) + " simulated pairs; the table lists all.";
    sorted.resize(kBreakdownBars);
  }
  const std::pair<const char*, const char*> parts[] = {{"compute", "compute_s"},
                                                       {"exposed communication", "exposed_comm_s"},
                                                       {"bubble", "bubble_s"}};
  json values = json::array();
  for (std::size_t rank = 0; rank < sorted.size(); ++rank) {
    const RunRef& run = sorted[rank];
    const std::string label = point_key(*run.p, run.point) + " · " + text(*run.r, "design");
    for (std::size_t order = 0; order < 3; ++order)
      values.push_back({{"configuration", label},
                        {"rank", rank},
                        {"part", parts[order].first},
                        {"order", order},
                        {"seconds", number(*run.r, parts[order].second).value_or(0.0)},
                        {"step_time_s", run.step_time_s}});
  }
  json spec = base_spec(c.title);
  spec["height"] = bar_chart_height(sorted.size());
  spec["data"] = {{"values", values}};
  spec["mark"] = "bar";
  spec["encoding"] = {
      {"y",
       {{"field", "configuration"},
        {"type", "nominal"},
        {"sort", {{"field", "rank"}, {"op", "min"}}},
        {"axis", {{"labelLimit", kLabelLimit}}},
        {"title", nullptr}}},
      {"x", {{"field", "seconds"}, {"type", "quantitative"}, {"stack", "zero"}, {"title", "s"}}},
      {"color",
       {{"field", "part"},
        {"type", "nominal"},
        {"scale", {{"domain", {"compute", "exposed communication", "bubble"}}}},
        {"title", nullptr}}},
      {"order", {{"field", "order"}, {"type", "quantitative"}}},
      {"tooltip", tooltip({{"configuration", "nominal"},
                           {"part", "nominal"},
                           {"seconds", "quantitative"},
                           {"step_time_s", "quantitative"}})}};
  c.spec = std::move(spec);
  return c;
}

// Every simulated pair by cost and step time; the Pareto front joined by a line.
PlanChart pareto(const json& results, const std::vector<RunRef>& runs) {
  std::string axis = text(results, "cost_axis");
  if (axis.empty()) axis = "usd_per_step";
  const std::string axis_title = axis == "usd_per_step"         ? "$ per step"
                                 : axis == "gpu_hours_per_step" ? "GPU-hours per step"
                                                                : axis;
  PlanChart c{"chart-pareto", "Cost vs step time",
              "Every simulated (configuration, design) pair by " + axis_title +
                  " and step time; the line joins the Pareto front (no pair is both cheaper "
                  "and faster).",
              nullptr, ""};
  std::set<std::pair<std::size_t, std::string>> front;
  for (const json& f : list(results, "pareto"))
    if (const auto p = number(f, "point"))
      front.insert({static_cast<std::size_t>(*p), text(f, "design")});
  json values = json::array();
  for (const RunRef& run : runs) {
    const auto cost = number(*run.r, axis.c_str());
    if (!cost) continue;
    const std::string design = text(*run.r, "design");
    values.push_back({{"configuration", point_key(*run.p, run.point)},
                      {"cluster", text(*run.p, "cluster")},
                      {"design", design},
                      {"cost", *cost},
                      {"step_time_s", run.step_time_s},
                      {"front", front.count({run.point, design}) > 0}});
  }
  if (values.empty()) {
    c.note = "Not drawn: no simulated run has a " + axis + " in results.json.";
    return c;
  }
  if (front.empty()) c.note = "results.json lists no Pareto front; the points are drawn alone.";
  json spec = base_spec(c.title);
  spec["height"] = 300;
  spec["data"] = {{"values", values}};
  const json x = {{"field", "step_time_s"},
                  {"type", "quantitative"},
                  {"scale", {{"zero", false}}},
                  {"title", "step time (s)"}};
  const json y = {{"field", "cost"},
                  {"type", "quantitative"},
                  {"scale", {{"zero", false}}},
                  {"title", axis_title}};
  spec["layer"] = json::array(
      {{{"mark", {{"type", "point"}, {"filled", true}, {"size", 50}, {"opacity", 0.6}}},
        {"encoding",
         {{"x", x},
          {"y", y},
          {"color", {{"field", "design"}, {"type", "nominal"}}},
          {"tooltip", tooltip({{"configuration", "nominal"},
                               {"cluster", "nominal"},
                               {"design", "nominal"},
                               {"cost", "quantitative"},
                               {"step_time_s", "quantitative"}})}}}},
       {{"transform", json::array({{{"filter", "datum.front"}}})},
        {"mark",
         {{"type", "line"},
          {"point", {{"shape", "diamond"}, {"size", 60}, {"color", "black"}}},
          {"color", "black"}}},
        {"encoding",
         {{"x", x}, {"y", y}, {"order", {{"field", "step_time_s"}, {"type", "quantitative"}}}}}}});
  c.spec = std::move(spec);
  return c;
}

// The most loaded stage's memory terms per configuration, against the GPU's capacity.
PlanChart memory(const json& results) {
  PlanChart c{"chart-memory", "Memory per stage vs GPU capacity",
              "Memory of each configuration's most loaded pipeline stage by term; the black "
              "tick is the GPU's capacity. Rejected configurations are those past it.",
              nullptr, ""};
  const json& points = list(results, "points");
  struct Candidate {
    std::size_t index;
    double peak_bytes;
    double order;  // feasible: the fastest run's step time; rejected: the peak memory
  };
  std::vector<Candidate> fits, rejected;
  for (std::size_t i = 0; i < points.size(); ++i) {
    const json* mem = field(points[i], "memory");
    if (mem == nullptr || list(*mem, "terms").empty()) continue;
    const double peak = number(*mem, "peak_bytes").value_or(0.0);
    if (text(points[i], "status") == "rejected") {
      rejected.push_back({i, peak, peak});
    } else {
      double fastest = 1e300;
      for (const json& r : list(points[i], "runs"))
        fastest = std::min(fastest, number(r, "step_time_s").value_or(1e300));
      fits.push_back({i, peak, fastest});
    }
  }
  if (fits.empty() && rejected.empty()) {
    c.note = "Not drawn: no configuration in results.json has memory terms.";
    return c;
  }
  const auto by_order = [](const Candidate& a, const Candidate& b) { return a.order < b.order; };
  std::stable_sort(fits.begin(), fits.end(), by_order);
  std::stable_sort(rejected.begin(), rejected.end(), by_order);
  const std::size_t total = fits.size() + rejected.size();
  if (fits.size() > kMemoryBarsPerStatus) fits.resize(kMemoryBarsPerStatus);
  if (rejected.size() > kMemoryBarsPerStatus) rejected.resize(kMemoryBarsPerStatus);
  if (fits.size() + rejected.size() < total)
    c.note = "Showing the " + std::to_string(fits.size()) +
             " fastest configurations that fit and the " + std::to_string(rejected.size()) +
             " rejected ones closest to fitting, of " + std::to_string(total) +
             "; the table lists all.";
  json bars = json::array();
  json capacity = json::array();
  std::size_t rank = 0;
  for (const auto* group : {&fits, &rejected}) {
    for (const Candidate& cand : *group) {
      const json& p = points[cand.index];
      const json& mem = *field(p, "memory");
      const std::string status = text(p, "status");
      std::string label = point_key(p, cand.index);
      if (const auto stage = number(mem, "peak_stage"))
        label += " · stage " + std::to_string(static_cast<long long>(*stage));
      if (status == "rejected") label += " · rejected";
      for (const json& t : list(mem, "terms"))
        bars.push_back({{"configuration", label},
                        {"rank", rank},
                        {"term", text(t, "name")},
                        {"GiB", number(t, "bytes").value_or(0.0) / config::kBytesPerGiB},
                        {"status", status}});
      if (const auto cap = number(mem, "gpu_memory_bytes"))
        capacity.push_back({{"configuration", label},
                            {"rank", rank},
                            {"capacity_GiB", *cap / config::kBytesPerGiB}});
      ++rank;
    }
  }
  json spec = base_spec(c.title);
  spec["height"] = bar_chart_height(rank);
  const json y = {{"field", "configuration"},
                  {"type", "nominal"},
                  {"sort", {{"field", "rank"}, {"op", "min"}}},
                  {"axis", {{"labelLimit", kLabelLimit}}},
                  {"title", nullptr}};
  json layers = json::array(
      {{{"data", {{"values", bars}}},
        {"mark", "bar"},
        {"encoding",
         {{"y", y},
          {"x", {{"field", "GiB"}, {"type", "quantitative"}, {"stack", "zero"}, {"title", "GiB"}}},
          {"color", {{"field", "term"}, {"type", "nominal"}, {"title", "term"}}},
          {"tooltip",
           tooltip(
               {{"configuration", "nominal"}, {"term", "nominal"}, {"GiB", "quantitative"}})}}}}});
  if (!capacity.empty())
    layers.push_back({{"data", {{"values", capacity}}},
                      {"mark", {{"type", "tick"}, {"color", "black"}, {"thickness", 3}}},
                      {"encoding",
                       {{"y", y},
                        {"x", {{"field", "capacity_GiB"}, {"type", "quantitative"}}},
                        {"tooltip", tooltip({{"configuration", "nominal"},
                                             {"capacity_GiB", "quantitative"}})}}}});
  else
    c.note += (c.note.empty() ? "" : " ") + std::string("results.json gives no GPU capacity.");
  spec["layer"] = std::move(layers);
  c.spec = std::move(spec);
  return c;
}

// The fastest configuration per cluster and design with its band as an error bar.
PlanChart bands(const json& results) {
  PlanChart c{"chart-bands", "Uncertainty bands of the fastest configurations",
              "The fastest configuration per cluster and design: its predicted step time "
              "(dot) and the band (bar) from the profiles' validation errors.",
              nullptr, ""};
  const json& points = list(results, "points");
  json values = json::array();
  for (const json& f : list(results, "fastest")) {
    const json* choice = field(f, "choice");
    if (choice == nullptr) continue;
    const auto index = number(*choice, "point");
    if (!index || *index < 0 || *index >= static_cast<double>(points.size())) continue;
    const json& p = points[static_cast<std::size_t>(*index)];
    const std::string design = text(*choice, "design");
    for (const json& r : list(p, "runs")) {
      if (text(r, "design") != design) continue;
      const auto t = number(r, "step_time_s");
      if (!t) continue;
      values.push_back({{"label", text(f, "cluster") + " · " + design},
                        {"configuration", point_key(p, static_cast<std::size_t>(*index))},
                        {"step_time_s", *t},
                        {"band_low_s", number(r, "band_low_s").value_or(*t)},
                        {"band_high_s", number(r, "band_high_s").value_or(*t)}});
    }
  }
  if (values.empty()) {
    c.note = "Not drawn: results.json names no fastest configuration with a simulated run.";
    return c;
  }
  json spec = base_spec(c.title);
  spec["height"] = bar_chart_height(values.size());
  spec["data"] = {{"values", values}};
  const json y = {{"field", "label"},
                  {"type", "nominal"},
                  {"axis", {{"labelLimit", kLabelLimit}}},
                  {"title", nullptr}};
  const json tip = tooltip({{"label", "nominal"},
                            {"configuration", "nominal"},
                            {"step_time_s", "quantitative"},
                            {"band_low_s", "quantitative"},
                            {"band_high_s", "quantitative"}});
  spec["layer"] = json::array({{{"mark", {{"type", "rule"}, {"strokeWidth", 2}}},
                                {"encoding",
                                 {{"y", y},
                                  {"x",
                                   {{"field", "band_low_s"},
                                    {"type", "quantitative"},
                                    {"scale", {{"zero", false}}},
                                    {"title", "step time (s)"}}},
                                  {"x2", {{"field", "band_high_s"}}},
                                  {"tooltip", tip}}}},
                               {{"mark", {{"type", "point"}, {"filled", true}, {"size", 70}}},
                                {"encoding",
                                 {{"y", y},
                                  {"x", {{"field", "step_time_s"}, {"type", "quantitative"}}},
                                  {"tooltip", tip}}}}});
  c.spec = std::move(spec);
  return c;
}

}  // namespace

std::vector<PlanChart> plan_charts(const json& results) {
  const std::vector<RunRef> runs = simulated_runs(results);
  std::vector<PlanChart> out;
  out.push_back(step_vs_nodes(runs));
  out.push_back(breakdown(runs));
  out.push_back(pareto(results, runs));
  out.push_back(memory(results));
  out.push_back(bands(results));
  return out;
}

}  // namespace overlapsim::reports
