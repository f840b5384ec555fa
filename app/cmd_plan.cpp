// `overlapsim plan`: search parallelism configurations of a model on clusters and node
// counts, time them with the simulator, and write the capacity plan's reports. Parses and
// checks flags, calls planning::run_plan, writes planning's reports. Docs: docs/plan.md.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "app/commands.hpp"
#include "config/atomic_file.hpp"
#include "config/error.hpp"
#include "planning/planner.hpp"
#include "planning/ranks.hpp"
#include "planning/reports.hpp"
#include "reports/plan_html.hpp"
#include "sim/overlap/registry.hpp"

namespace overlapsim::app {
namespace {

struct PlanFlags {
  std::string workload;
  std::vector<std::string> clusters;
  std::string nodes = "16:256";
  std::string designs = "all";
  double target_step_time_s = 0;
  double target_tokens_per_day = 0;
  double target_tokens = 0;
  double target_days = 0;
  std::string out;
  int threads = 0;  // 0: every core
  int simulate_top = 4;
  int max_virtual_stages = 4;
  int max_micro_batch = 8;
  int max_cp = 0;
  bool resume = false;
  bool progress = false;
  bool exact = false;
  bool sample_by_runs = false;
  std::vector<std::string> include;  // configurations to simulate whatever the search says
};

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, sep)) out.push_back(item);
  return out;
}

int parse_positive(const std::string& flag, const std::string& text) {
  try {
    std::size_t used = 0;
    const int v = std::stoi(text, &used);
    if (used == text.size() && v >= 1) return v;
  } catch (const std::exception&) {
  }
  throw config::ConfigError(fmt::format(
      "{}: '{}' is not a node count (expected e.g. 16:256 for the powers of two in a range, "
      "or a list 16,32,64)",
      flag, text));
}

// "16:256" -> 16, 32, 64, 128, 256; "16,24" -> 16, 24; items may mix.
std::vector<int> parse_nodes(const std::string& text) {
  std::vector<int> out;
  for (const std::string& item : split(text, ',')) {
    const auto colon = item.find(':');
    if (colon == std::string::npos) {
      out.push_back(parse_positive("--nodes", item));
      continue;
    }
    const int lo = parse_positive("--nodes", item.substr(0, colon));
    const int hi = parse_positive("--nodes", item.substr(colon + 1));
    const std::size_t before = out.size();
    for (long v = 1; v <= hi; v *= 2)
      if (v >= lo) out.push_back(static_cast<int>(v));
    if (out.size() == before)
      throw config::ConfigError(fmt::format(
          "--nodes: '{}' holds no power of two (expected a range such as 16:256)", item));
  }
  if (out.empty()) throw config::ConfigError("--nodes: empty (expected e.g. 16:256 or 16,32,64)");
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<std::string> parse_designs(const std::string& text) {
  if (text == "all") return sim::design_names();
  std::vector<std::string> out;
  for (const std::string& d : split(text, ',')) {
    if (!sim::is_design_name(d))
      throw config::ConfigError(fmt::format("--designs: '{}' is not a design (expected {} or all)",
                                            d, sim::design_list()));
    if (std::find(out.begin(), out.end(), d) == out.end()) out.push_back(d);
  }
  if (out.empty()) throw config::ConfigError("--designs: empty (expected all or design names)");
  return out;
}

planning::PlanTarget parse_target(const PlanFlags& f) {
  planning::PlanTarget t;
  int given = 0;
  if (f.target_step_time_s > 0) t = {planning::TargetKind::StepTime, f.target_step_time_s}, ++given;
  if (f.target_tokens_per_day > 0)
    t = {planning::TargetKind::TokensPerDay, f.target_tokens_per_day}, ++given;
  if (f.target_tokens > 0)
    t = {planning::TargetKind::Tokens, f.target_tokens, f.target_days * 86400}, ++given;
  if (given > 1)
    throw config::ConfigError(
        "--target-*: more than one target (expected one of --target-step-time, "
        "--target-tokens-per-day, --target-tokens)");
  if (f.target_days > 0 && t.kind != planning::TargetKind::Tokens)
    throw config::ConfigError("--target-days: needs --target-tokens (expected both)");
  return t;
}

int run_plan_command(const PlanFlags& f) {
  const auto start = std::chrono::steady_clock::now();
  planning::PlanOptions o;
  o.model_file = f.workload;
  o.cluster_files = f.clusters;
  o.nodes = parse_nodes(f.nodes);
  o.designs = parse_designs(f.designs);
  o.target = parse_target(f);
  o.limits.max_virtual_stages = f.max_virtual_stages;
  o.limits.max_micro_batch = f.max_micro_batch;
  o.limits.max_cp = f.max_cp;
  o.simulate_top = f.simulate_top;
  o.exact_simulation = f.exact;
  o.sample_by_runs = f.sample_by_runs;
  o.include = f.include;
  // Under mpirun the ranks on a host share its cores.
  const planning::Ranks& ranks = planning::Ranks::world();
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  o.threads = f.threads > 0 ? f.threads : std::max(1, cores / ranks.local_size());
  // An --out that cannot be made is reported before any point is simulated.
  if (ranks.root()) config::check_directory_creatable(f.out, "--out");
  o.state_file = (std::filesystem::path(f.out) / ".plan-state.jsonl").string();
  o.resume = f.resume;
  o.progress = f.progress || isatty(STDERR_FILENO);
  planning::PlanResult result;
  try {
    result = planning::run_plan(o);
  } catch (const config::ConfigError&) {
    if (ranks.root()) throw;
    return kExitBadInput;  // every rank fails alike; rank 0 says why
  }
  if (!ranks.root()) return kExitOk;  // rank 0 writes the reports
  planning::write_plan_reports(f.out, result);
  config::write_file_atomic(
      (std::filesystem::path(f.out) / "index.html").string(),
      reports::render_plan_html(nlohmann::json::parse(planning::plan_json(result))));
  const double wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const auto& n = result.counts;
  fmt::print(
      "plan of {}: {} configurations, {} rejected for memory, {} pruned, {} simulated ({} "
      "runs) in {:.1f} s on {} threads{}\n",
      result.model_name, n.enumerated, n.rejected, n.pruned, n.simulated, n.runs, wall_s, o.threads,
      ranks.size() > 1 ? fmt::format(" x {} MPI ranks", ranks.size()) : "");
  if (result.cheapest) {
    const auto& p = result.point(*result.cheapest);
    const auto& r = result.run(*result.cheapest);
    fmt::print(
        "cheapest meeting the target ({}): {} [{}] {}: {:.4g} s per step, ${:.4g} per step\n",
        result.target.describe(), result.clusters[p.config.cluster].name, p.config.key(), r.design,
        r.step_time_s, *r.costs.usd_per_step);
  }
  fmt::print("wrote {}/report.md, results.csv, results.json, index.html\n", f.out);
  return kExitOk;
}

}  // namespace

void add_plan_command(CLI::App& app, Runner& selected) {
  auto f = std::make_shared<PlanFlags>();
  auto* sub = app.add_subcommand(
      "plan", "search parallelism configurations on clusters and node counts; cost and reports");
  sub->add_option("-w,--workload", f->workload, "model YAML")->required();
  sub->add_option("-c,--cluster", f->clusters, "cluster YAML (repeat for several)")->required();
  sub->add_option("--nodes", f->nodes, "node counts: 16:256 (powers of two in range), 16,32,64")
      ->capture_default_str();
  sub->add_option("--designs", f->designs, sim::design_list(",") + " or all")
      ->capture_default_str();
  sub->add_option("--target-step-time", f->target_step_time_s, "target step time, seconds");
  sub->add_option("--target-tokens-per-day", f->target_tokens_per_day, "target tokens per day");
  sub->add_option("--target-tokens", f->target_tokens,
                  "tokens to train: reports time, cost and energy to train them");
  sub->add_option("--target-days", f->target_days, "with --target-tokens: the deadline in days");
  sub->add_option("--out", f->out, "report directory")->required();
  sub->add_option("--threads", f->threads, "worker threads (default: every core)");
  sub->add_option("--simulate-top", f->simulate_top,
                  "configurations simulated per cluster and node count, lowest analytic "
                  "estimate first")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sub->add_option("--max-virtual-stages", f->max_virtual_stages, "largest virtual stage count")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sub->add_option("--max-micro-batch", f->max_micro_batch, "largest micro-batch")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sub->add_option("--max-cp", f->max_cp,
                  "largest context-parallel size (default: 8 for seq_len >= 8192, else 1)");
  sub->add_flag("--exact", f->exact,
                "simulate every configuration as simulate does (default: long steps from two "
                "short runs, extrapolated, and each send's background images aggregated)");
  sub->add_flag("--sample-by-runs", f->sample_by_runs,
                "sampled steps: simulate both short runs (default: the first is the second "
                "less its last period where an interleaved pipeline, or none, is steady)");
  sub->add_option("--include", f->include,
                  "a configuration to simulate whatever the pre-screen and --simulate-top say, "
                  "e.g. the layout in use: 'n16 tp8 pp8 v1 cp1 ep1 dp2 mb1 sp0 full' on every "
                  "cluster, or a key of results.json ('c1 n16 ...': the second -c); repeat for "
                  "several");
  sub->add_flag("--resume", f->resume, "reuse the finished configurations of an interrupted run");
  sub->add_flag("--progress", f->progress, "progress line on stderr (default: when a terminal)");
  sub->callback([f, &selected] { selected = [f] { return run_plan_command(*f); }; });
}

}  // namespace overlapsim::app
