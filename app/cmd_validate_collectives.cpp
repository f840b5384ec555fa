// `overlapsim validate-collectives DIR`: published multi-node nccl-tests tables against the
// simulator's collective cost model (sim/collectives/reference_eval.hpp); prints per point
// the published and predicted time and the error, and per table and overall the median
// |error| over 64 KiB - 4 GiB.
#include <fmt/format.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "app/commands.hpp"
#include "app/output.hpp"
#include "config/error.hpp"
#include "config/units.hpp"
#include "sim/collectives/reference_eval.hpp"
#include "workloads/cluster.hpp"

namespace overlapsim::app {
namespace {

struct Options {
  std::string dir;
  std::string format = "table";
  std::string output;
  bool bare_flows = false;
};

sim::Topology load_machine(const std::string& cluster_file, int nodes) {
  workloads::ClusterSpec spec = workloads::load_cluster(cluster_file);
  spec.nodes = nodes;
  try {
    return workloads::build_topology(spec);
  } catch (const std::invalid_argument& e) {
    throw config::ConfigError(fmt::format("{}: with {} nodes: {}", cluster_file, nodes, e.what()));
  }
}

std::string percent(double e) { return fmt::format("{:+.1f}%", 100 * e); }

std::string to_table(const sim::ReferenceValidation& v) {
  std::string s;
  for (const auto& t : v.tables) {
    const auto& tab = t.table;
    s += fmt::format("{}: {} on {} nodes x {} GPUs ({}, {} column)\n", tab.name,
                     sim::to_string(tab.op), tab.nodes, tab.ranks_per_node, tab.source.date,
                     tab.column);
    s += fmt::format("  {}\n  {}\n", tab.source.title, tab.source.url);
    s += fmt::format("  {:>12} {:>12} {:>12} {:>8}  {}\n", "size", "published", "predicted",
                     "error", "model");
    for (const auto& p : t.points)
      s += fmt::format("  {:>12} {:>12} {:>12} {:>8}{} {}\n", config::format_bytes(p.bytes),
                       config::format_duration(p.published_s),
                       config::format_duration(p.predicted_s), percent(p.rel_err),
                       p.in_range ? " " : "*", p.how);
    s += fmt::format("  median |error| {:.1f}% over {} points\n\n", 100 * t.median_abs_err,
                     t.in_range);
  }
  s += fmt::format("{:<40} {:>7} {:>14}\n", "table", "points", "median|error|");
  for (const auto& t : v.tables)
    s += fmt::format("{:<40} {:>7} {:>13.1f}%\n", t.table.name, t.in_range, 100 * t.median_abs_err);
  s += fmt::format("{:<40} {:>7} {:>13.1f}%\n", "overall", v.in_range, 100 * v.median_abs_err);
  s += fmt::format("(medians over sizes {} - {}; * outside that range)\n",
                   config::format_bytes(v.min_bytes), config::format_bytes(v.max_bytes));
  return s;
}

std::string to_json(const sim::ReferenceValidation& v) {
  nlohmann::ordered_json j;
  j["min_bytes"] = v.min_bytes;
  j["max_bytes"] = v.max_bytes;
  j["points"] = v.in_range;
  j["median_abs_err"] = v.median_abs_err;
  j["tables"] = nlohmann::ordered_json::array();
  for (const auto& t : v.tables) {
    nlohmann::ordered_json jt;
    jt["name"] = t.table.name;
    jt["op"] = sim::to_string(t.table.op);
    jt["nodes"] = t.table.nodes;
    jt["ranks_per_node"] = t.table.ranks_per_node;
    jt["cluster"] = t.table.cluster_file;
    jt["source"] = {{"title", t.table.source.title},
                    {"url", t.table.source.url},
                    {"date", t.table.source.date},
                    {"system", t.table.source.system}};
    jt["points_in_range"] = t.in_range;
    jt["median_abs_err"] = t.median_abs_err;
    jt["points"] = nlohmann::ordered_json::array();
    for (const auto& p : t.points)
      jt["points"].push_back({{"bytes", p.bytes},
                              {"published_s", p.published_s},
                              {"predicted_s", p.predicted_s},
                              {"rel_err", p.rel_err},
                              {"in_range", p.in_range},
                              {"model", p.how}});
    j["tables"].push_back(std::move(jt));
  }
  return j.dump(2) + "\n";
}

}  // namespace

void add_validate_collectives_command(CLI::App& app, Runner& selected) {
  auto opts = std::make_shared<Options>();
  auto* sub = app.add_subcommand(
      "validate-collectives",
      "published multi-node nccl-tests tables against the collective cost model");
  sub->add_option("dir", opts->dir, "folder of reference tables (workloads/reference/collectives)")
      ->required();
  sub->add_option("--format", opts->format, "table|json (default table)");
  sub->add_option("-o,--output", opts->output, "write the report to FILE (atomically)");
  sub->add_flag("--bare-flows", opts->bare_flows,
                "time the flows without NCCL's costs (the uncalibrated network), for comparison");
  sub->callback([opts, &selected] {
    selected = [opts] {
      if (opts->format != "table" && opts->format != "json")
        throw config::ConfigError(
            fmt::format("--format: '{}' (expected table or json)", opts->format));
      check_output(opts->output, "--output");
      const auto tables = sim::load_reference_tables(opts->dir);
      const auto result = sim::validate_references(tables, load_machine, sim::kReferenceMinBytes,
                                                   sim::kReferenceMaxBytes, !opts->bare_flows);
      print_or_write(opts->format == "json" ? to_json(result) : to_table(result), opts->output);
      return kExitOk;
    };
  });
}

}  // namespace overlapsim::app
