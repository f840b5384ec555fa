#include "reports/plan_tables.hpp"

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <vector>

#include "config/units.hpp"
#include "reports/html_escape.hpp"
#include "reports/json_fields.hpp"

namespace overlapsim::reports {

namespace {

using nlohmann::json;

std::string num(double v, const char* format = "%.4g") {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

std::string num(const std::optional<double>& v, const char* format = "%.4g") {
  return v ? num(*v, format) : std::string("–");
}

std::string esc_text(const json& j, const char* key) { return html_escape(text(j, key)); }

std::string note(const std::string& what) {
  return "<p class=\"note\">" + html_escape(what) + "</p>\n";
}

// <tr> of cells already escaped (or built from numbers).
std::string row(const std::vector<std::string>& cells, const std::string& attrs = "") {
  std::string out = "<tr" + attrs + ">";
  for (const std::string& c : cells) out += "<td>" + c + "</td>";
  return out + "</tr>\n";
}

std::string header(const std::vector<const char*>& names) {
  std::string out = "<thead><tr>";
  for (const char* n : names) out += std::string("<th>") + n + "</th>";
  return out + "</tr></thead>\n";
}

std::string sourced(const json& j, const char* key, const char* unit) {
  const json* v = field(j, key);
  if (v == nullptr) return "unknown";
  std::string out = num(number(*v, "value")) + " " + unit;
  const std::string kind = text(*v, "kind");
  const std::string source = text(*v, "source");
  if (!kind.empty() || !source.empty())
    out += " <span class=\"source\">(" + html_escape(kind) +
           (source.empty() ? "" : ": " + html_escape(source)) + ")</span>";
  return out;
}

// "c0 n16 ... · design, 12.3 s" for a choice of results.json ({configuration, design,
// step_time_s}).
std::string choice_text(const json& c) {
  return html_escape(text(c, "configuration")) + " · " + esc_text(c, "design") + ", " +
         num(number(c, "step_time_s")) + " s";
}

// The command that simulates a choice alone (`simulate --configuration` takes its key), on
// the plan's model file and the cluster file its key's "c<i>" names.
std::string simulate_command(const json& results, const json& choice) {
  const std::string key = text(choice, "configuration");
  const json& clusters = list(results, "clusters");
  std::size_t index = clusters.size();
  if (key.size() > 1 && key[0] == 'c') index = std::strtoul(key.c_str() + 1, nullptr, 10);
  if (index >= clusters.size()) return "";
  return "<code>overlapsim simulate -w " + esc_text(results, "model_file") + " -c " +
         esc_text(clusters[index], "file") + " --configuration '" + html_escape(key) +
         "' --design " + esc_text(choice, "design") + " --trace step.json</code>";
}

std::string memory_breakdown(const json& mem) {
  std::string out;
  for (const json& t : list(mem, "terms")) {
    if (!out.empty()) out += "; ";
    out += esc_text(t, "name") + " " +
           num(number(t, "bytes").value_or(0) / config::kBytesPerGiB, "%.1f");
  }
  return out.empty() ? out : out + " GiB";
}

}  // namespace

std::string summary_table(const json& results) {
  std::string out = "<table class=\"summary\">\n<tbody>\n";
  const auto add = [&](const char* name, const std::string& value) {
    out += std::string("<tr><th>") + name + "</th><td>" + value + "</td></tr>\n";
  };
  add("model", esc_text(results, "model"));
  add("model file", "<code>" + esc_text(results, "model_file") + "</code>");
  add("global batch", esc_text(results, "global_batch"));
  add("sequence length", esc_text(results, "seq_len"));
  std::string nodes;
  for (const json& n : list(results, "nodes"))
    nodes += (nodes.empty() ? "" : ", ") + html_escape(n.dump());
  add("node counts", nodes);
  std::string designs;
  for (const json& d : list(results, "designs"))
    designs +=
        (designs.empty() ? "" : ", ") + (d.is_string() ? html_escape(d.get<std::string>()) : "");
  add("designs", designs);
  add("target", esc_text(results, "target"));
  add("cost axis", esc_text(results, "cost_axis"));
  if (const json* n = field(results, "counts")) {
    std::string counts;
    for (const char* k : {"enumerated", "invalid", "rejected", "pruned", "simulated", "runs"})
      if (const auto v = number(*n, k))
        counts += (counts.empty() ? "" : ", ") + std::string(k) + " " + num(*v, "%.0f");
    add("configurations", counts);
  }
  return out + "</tbody>\n</table>\n";
}

std::string clusters_table(const json& results) {
  const json& clusters = list(results, "clusters");
  if (clusters.empty()) return note("results.json lists no clusters.");
  std::string out = "<table class=\"clusters\">\n" +
                    header({"key", "cluster", "file", "GPU", "GPUs per node", "GPU memory (GiB)",
                            "price per GPU-hour", "power per GPU"}) +
                    "<tbody>\n";
  for (std::size_t i = 0; i < clusters.size(); ++i) {
    const json& c = clusters[i];
    const auto mem = number(c, "gpu_memory_bytes");
    // Configuration keys name their cluster by index ("c0 n16 ...").
    out += row({"c" + std::to_string(i), esc_text(c, "name"),
                "<code>" + esc_text(c, "file") + "</code>", esc_text(c, "gpu"),
                esc_text(c, "gpus_per_node"),
                mem ? num(*mem / config::kBytesPerGiB, "%.1f") : "unknown",
                sourced(c, "price_per_gpu_hour_usd", "USD"), sourced(c, "power_W", "W")});
  }
  return out + "</tbody>\n</table>\n";
}

std::string choices_table(const json& results) {
  std::string out;
  const json& fastest = list(results, "fastest");
  if (fastest.empty()) {
    out += note("results.json lists no fastest configurations.");
  } else {
    out += "<table class=\"fastest\">\n" + header({"cluster", "design", "fastest configuration"}) +
           "<tbody>\n";
    for (const json& f : fastest) {
      const json* c = field(f, "choice");
      out += row({esc_text(f, "cluster"), esc_text(f, "design"),
                  c != nullptr ? choice_text(*c) : std::string("nothing simulated")});
    }
    out += "</tbody>\n</table>\n";
  }
  if (const json* c = field(results, "cheapest")) {
    out += "<p><strong>Cheapest meeting the target:</strong> " + choice_text(*c) + "</p>\n";
    const std::string command = simulate_command(results, *c);
    if (!command.empty())
      out +=
          "<p class=\"command\">Alone, as one whole step with its timeline: " + command + "</p>\n";
  } else
    out += note("No configuration meets the target (or none was given).");
  const json& front = list(results, "pareto");
  if (!front.empty()) {
    out +=
        "<p><strong>Pareto front (cost vs time), fastest first:</strong></p>\n<ol "
        "class=\"pareto\">\n";
    for (const json& c : front) out += "<li>" + choice_text(c) + "</li>\n";
    out += "</ol>\n";
  }
  return out;
}

std::string configurations_table(const json& results) {
  const json& points = list(results, "points");
  if (points.empty()) return note("results.json lists no configurations.");
  std::string out =
      "<table class=\"configurations\" id=\"configurations\">\n" +
      header({"configuration", "cluster", "nodes", "GPUs", "TP", "PP", "virtual", "CP", "EP", "DP",
              "micro-batch", "SP", "recompute", "status", "peak memory (GiB)", "GPU memory (GiB)",
              "step time per design (s)", "reason / memory breakdown"}) +
      "<tbody>\n";
  for (const json& p : points) {
    const std::string status = text(p, "status");
    const json* mem = field(p, "memory");
    const json empty = json::object();
    const json& m = mem != nullptr ? *mem : empty;
    std::string peak = num(number(m, "peak_bytes").value_or(0) / config::kBytesPerGiB, "%.1f");
    if (const auto stage = number(m, "peak_stage")) peak += " (stage " + num(*stage, "%.0f") + ")";
    const auto cap = number(m, "gpu_memory_bytes");
    std::string runs;
    for (const json& r : list(p, "runs")) {
      runs += (runs.empty() ? "" : "<br>") + esc_text(r, "design") + " " +
              num(number(r, "step_time_s"));
      if (const auto lo = number(r, "band_low_s"), hi = number(r, "band_high_s"); lo && hi)
        runs += " [" + num(*lo) + "–" + num(*hi) + "]";
    }
    std::string why = esc_text(p, "reason");
    if (status == "rejected") {
      const std::string terms = memory_breakdown(m);
      if (!terms.empty()) why += (why.empty() ? "" : "<br>") + terms;
    }
    out += row(
        {"<code>" + esc_text(p, "key") + "</code>", esc_text(p, "cluster"), esc_text(p, "nodes"),
         esc_text(p, "gpus"), esc_text(p, "tp"), esc_text(p, "pp"), esc_text(p, "virtual_stages"),
         esc_text(p, "cp"), esc_text(p, "ep"), esc_text(p, "dp"), esc_text(p, "micro_batch"),
         flag(p, "sequence_parallel") ? "yes" : "no", esc_text(p, "recompute"),
         html_escape(status) + (flag(p, "requested") ? " (requested)" : ""), peak,
         cap ? num(*cap / config::kBytesPerGiB, "%.1f") : "unknown", runs, why},
        " class=\"status-" + html_escape(status) + "\" data-status=\"" + html_escape(status) +
            "\"");
  }
  return out + "</tbody>\n</table>\n";
}

std::string provenance_table(const json& results) {
  const json& entries = list(results, "provenance");
  if (entries.empty()) return note("results.json lists no provenance.");
  std::string out =
      "<table class=\"provenance\">\n" + header({"number", "kind", "source"}) + "<tbody>\n";
  for (const json& e : entries)
    out += row({esc_text(e, "what"), esc_text(e, "kind"), esc_text(e, "source")},
               " class=\"kind-" + esc_text(e, "kind") + "\"");
  return out + "</tbody>\n</table>\n";
}

std::string caveats_list(const json& results) {
  const json& entries = list(results, "caveats");
  if (entries.empty()) return "";
  std::string out = "<ul class=\"caveats\">\n";
  for (const json& e : entries)
    out += "<li><strong>" + esc_text(e, "topic") + "</strong>: " + esc_text(e, "text") + "</li>\n";
  return out + "</ul>\n";
}

}  // namespace overlapsim::reports
