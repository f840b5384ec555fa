// report.md: the plan for people. Every user string goes through markdown_escape.
#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "config/units.hpp"
#include "planning/configuration_text.hpp"
#include "planning/escape.hpp"
#include "planning/reports.hpp"

namespace overlapsim::planning {

namespace {

// Rejected and pruned configurations listed per cluster and node count (all are in
// results.csv and results.json).
constexpr std::size_t kListedPerGroup = 10;

std::string esc(const std::string& s) { return markdown_escape(s); }
std::string usd(const std::optional<double>& v) {
  return v ? fmt::format("{:.4g}", *v) : std::string("unknown");
}
std::string kwh(const std::optional<double>& v) {
  return v ? fmt::format("{:.4g}", *v) : std::string("unknown");
}

std::string config_label(const PlanConfig& c) {
  return fmt::format("TP{} PP{}{} CP{}{} DP{} mb{}{} {}", c.tp, c.pp,
                     c.virtual_stages > 1 ? fmt::format("x{}", c.virtual_stages) : "", c.cp,
                     c.ep > 1 ? fmt::format(" EP{}", c.ep) : "", c.dp, c.micro_batch,
                     c.sequence_parallel ? " SP" : "", workloads::to_string(c.recompute));
}

// The label, marked where --include asked for the configuration.
std::string point_label(const PlanPoint& p) {
  return config_label(p.config) + (p.requested ? " (requested)" : "");
}

std::string run_row(const PlanResult& res, const PlanChoice& ch) {
  const PlanPoint& p = res.point(ch);
  const PlanRun& r = res.run(ch);
  const PlanCluster& cl = res.clusters[static_cast<std::size_t>(p.config.cluster)];
  return fmt::format(
      "| {} | {} | {} | {} | {:.4g} | {:.4g}-{:.4g} | {:.4g} / {:.4g} / {:.4g} | {:.1f}% | {:.4g} "
      "| {} | {} | {} | {:.1f} |\n",
      esc(cl.name), p.config.nodes, point_label(p), esc(r.design), r.step_time_s, r.band_low_s,
      r.band_high_s, r.compute_s, r.exposed_comm_s, r.bubble_s, 100 * r.mfu, r.costs.tokens_per_day,
      usd(r.costs.usd_per_step), usd(r.costs.usd_per_million_tokens),
      kwh(r.costs.energy_kWh_per_step), p.peak_memory_bytes / config::kBytesPerGiB);
}

// A file path as a shell word inside a code block, where markdown escapes show as typed:
// plain when it is plain, single-quoted when it needs quoting, and escaped (safe, not
// runnable) only where it holds what a renderer could read as markup.
std::string shell_word(const std::string& s) {
  if (!s.empty() && s.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                        "0123456789_./+-:=,@%") == std::string::npos)
    return s;
  if (s.find_first_of("<>&`\r\n") != std::string::npos) return esc(s);
  std::string out = "'";
  for (char ch : s) out += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return out + "'";
}

// The command that simulates one planned configuration alone (whole, not sampled; with
// --trace for its timeline), on the files the plan read.
std::string simulate_command(const PlanResult& res, const PlanChoice& ch) {
  const PlanPoint& p = res.point(ch);
  const PlanCluster& cl = res.clusters[static_cast<std::size_t>(p.config.cluster)];
  return fmt::format(
      "overlapsim simulate -w {} -c {} --configuration '{}' --design {} --trace step.json",
      shell_word(res.model_file), shell_word(cl.file), configuration_text(p.config),
      res.run(ch).design);
}

const char* kRunHeader =
    "| cluster | nodes | configuration | design | step s | band s | compute / exposed / bubble "
    "s | MFU | tokens/day | $/step | $/M tokens | kWh/step | peak GiB |\n"
    "| --- | ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: "
    "|\n";

}  // namespace

std::string plan_markdown(const PlanResult& res) {
  std::string md = fmt::format("# Capacity plan: {}\n\n", esc(res.model_name));
  md += fmt::format(
      "Model file {}: global batch {} sequences of {} tokens (fixed for every "
      "configuration). Target: {}. Designs: {}. Nodes: {}.\n\n",
      esc(res.model_file), res.global_batch, res.seq_len, esc(res.target.describe()),
      esc(fmt::format("{}", fmt::join(res.designs, ", "))), fmt::join(res.nodes, ", "));
  md +=
      "## Clusters\n\n| cluster | file | GPU | profile | GPU memory GiB | $/GPU-hour | power W |\n"
      "| --- | --- | --- | --- | ---: | --- | --- |\n";
  for (const PlanCluster& c : res.clusters)
    md += fmt::format(
        "| {} | {} | {} | {} | {} | {} | {} |\n", esc(c.name), esc(c.file), esc(c.gpu_name),
        esc(c.profile),
        c.memory_bytes > 0 ? fmt::format("{:.1f}", c.memory_bytes / config::kBytesPerGiB)
                           : "unknown",
        c.price_per_gpu_hour_usd ? fmt::format("{:.4g} ({})", c.price_per_gpu_hour_usd->value,
                                               esc(c.price_per_gpu_hour_usd->source))
                                 : "unknown",
        c.power_W ? fmt::format("{:.4g} ({})", c.power_W->value, esc(c.power_W->source))
                  : "unknown");
  const PlanCounts& n = res.counts;
  md += fmt::format(
      "\n## Search\n\n{} configurations passed the model's rules ({} other combinations did "
      "not); {} were rejected for memory, {} pruned by the analytic pre-screen, and {} "
      "simulated under each design ({} runs). At most {} per cluster and node "
      "count were simulated, lowest analytic estimate first; a configuration whose lower "
      "bound exceeds a step time that every design already reached on the same GPUs was "
      "pruned as dominated. The ranking below comes from the simulator only.\n\n",
      n.enumerated, n.invalid, n.rejected, n.pruned, n.simulated, n.runs, res.simulate_top);

  md += "## Fastest configuration per cluster and design\n\n";
  md += kRunHeader;
  for (const FastestEntry& f : res.fastest)
    if (f.choice) md += run_row(res, *f.choice);
  md +=
      "\nEach alone, as one whole step (the plan times steps of many microbatches from two "
      "short runs), with its timeline; results.json's `key` of any configuration serves as "
      "`--configuration` too:\n\n";
  for (const FastestEntry& f : res.fastest)
    if (f.choice) md += fmt::format("    {}\n", simulate_command(res, *f.choice));
  md += "\n## Cheapest configuration meeting the target\n\n";
  if (res.cheapest) {
    md += kRunHeader;
    md += run_row(res, *res.cheapest);
    md += fmt::format("\nAlone, as one whole step:\n\n    {}\n",
                      simulate_command(res, *res.cheapest));
    const PlanRun& r = res.run(*res.cheapest);
    if (r.costs.time_to_train_s)
      md += fmt::format("\nTime to train: {:.4g} days, ${} in all, {} kWh.\n",
                        *r.costs.time_to_train_s / 86400, usd(r.costs.usd_to_train),
                        kwh(r.costs.energy_kWh_to_train));
  } else {
    md += "None: some cluster has no price.\n";
  }
  md += fmt::format("\n## Cost-time Pareto front ({})\n\n", res.cost_axis);
  md += kRunHeader;
  for (const PlanChoice& c : res.pareto) md += run_row(res, c);

  md += "\n## Simulated configurations\n\n";
  md += kRunHeader;
  for (std::size_t i = 0; i < res.points.size(); ++i)
    for (std::size_t r = 0; r < res.points[i].runs.size(); ++r) md += run_row(res, {i, r});

  // Rejected and pruned, per cluster and node count: the first few, with why.
  for (PointStatus status : {PointStatus::Rejected, PointStatus::Pruned}) {
    md += status == PointStatus::Rejected ? "\n## Rejected: does not fit in memory\n\n"
                                          : "\n## Pruned before simulation\n\n";
    std::map<std::pair<int, int>, std::vector<const PlanPoint*>> groups;
    for (const PlanPoint& p : res.points)
      if (p.status == status) groups[{p.config.cluster, p.config.nodes}].push_back(&p);
    if (groups.empty()) md += "None.\n";
    for (auto& [g, points] : groups) {
      // The most instructive first: rejected ones closest to fitting, pruned ones closest
      // to being simulated.
      std::stable_sort(points.begin(), points.end(), [&](const PlanPoint* a, const PlanPoint* b) {
        return status == PointStatus::Rejected ? a->peak_memory_bytes < b->peak_memory_bytes
                                               : a->estimate_s < b->estimate_s;
      });
      md += fmt::format(
          "{} on {} nodes: {} configurations{}.\n\n",
          esc(res.clusters[static_cast<std::size_t>(g.first)].name), g.second, points.size(),
          points.size() > kListedPerGroup
              ? fmt::format(", the {} {} listed (all in results.csv)", kListedPerGroup,
                            status == PointStatus::Rejected ? "closest to fitting"
                                                            : "with the lowest estimates")
              : "");
      md += "| configuration | peak GiB | why |\n| --- | ---: | --- |\n";
      for (std::size_t k = 0; k < std::min(points.size(), kListedPerGroup); ++k)
        md += fmt::format("| {} | {:.1f} | {} |\n", point_label(*points[k]),
                          points[k]->peak_memory_bytes / config::kBytesPerGiB,
                          esc(points[k]->reason));
      md += "\n";
    }
  }
  md += "\n## Provenance\n\n| number | kind | source |\n| --- | --- | --- |\n";
  for (const ProvenanceEntry& e : res.provenance)
    md += fmt::format("| {} | {} | {} |\n", esc(e.what), esc(e.kind), esc(e.source));
  if (!res.caveats.empty()) {
    md += "\n## Caveats from the validation\n\n";
    for (const auto& c : res.caveats)
      md += fmt::format("- **{}**: {}\n", esc(c.topic), esc(c.text));
  }
  return md;
}

}  // namespace overlapsim::planning
