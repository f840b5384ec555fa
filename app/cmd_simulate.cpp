// `overlapsim simulate`: one training step of a model on a cluster, under each requested
// overlap design; prints a breakdown table or the JSON of the CLI contract, and writes a
// Perfetto trace on request. Parses flags, loads the inputs (workloads/scenario_inputs),
// runs the scenario (sim/scenario) and prints (simulate_report). Fields: docs/simulate.md.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "app/commands.hpp"
#include "app/memory_budget.hpp"
#include "app/simulate_report.hpp"
#include "config/atomic_file.hpp"
#include "config/error.hpp"
#include "config/integers.hpp"
#include "planning/configuration_text.hpp"
#include "sim/overlap/registry.hpp"
#include "sim/profile/profile_load.hpp"
#include "sim/scenario/scenario.hpp"
#include "workloads/memory_model.hpp"
#include "workloads/model.hpp"
#include "workloads/scenario_inputs.hpp"

namespace overlapsim::app {
namespace {

struct SimulateOptions {
  std::string workload = "workloads/models/gpt3-175b.yaml";
  std::string cluster = "workloads/clusters/h200-128node-ndr.yaml";
  std::string profile;  // empty: the cluster's
  std::string design = "sequential";
  std::string trace;
  std::string trace_ranks;  // comma-separated global ranks; empty: first 16 simulated
  std::string format = "table";
  std::string output;
  std::string json_output;  // the JSON result as well, beside a table on --output or stdout
  std::string images = "inter-host";
  bool no_fold = false;
  bool ignore_memory = false;  // simulate even where the memory model says it does not fit
  std::string max_memory;      // host memory limit of the run; empty: 80% of physical memory
  bool no_timing = false;
  bool show_profile = false;
  bool exact_parts = false;                    // every part of a paired collective on the network
  std::string tilewise_transport = "nccl";     // nccl | copy_engine
  std::string gemm_clock = "steady";           // steady | duty-cycle
  int tp = 0, pp = 0, dp = 0, cp = 0, ep = 0;  // 0: as the model file says
  std::string configuration;  // a plan's configuration text; empty: the files' own layout
};

// Unless --exact-parts, only the first part of a paired collective over this many ranks
// or more runs on the network (each is ~10^5-10^6 flows); the rest take its time per byte.
constexpr int kScaledPartsMinRanks = 256;

config::ConfigError flag_error(const std::string& flag, const std::string& value,
                               const std::string& expected) {
  return config::ConfigError(
      fmt::format("{}: '{}' is not allowed (expected {})", flag, value, expected));
}

std::vector<int> parse_rank_list(const std::string& text) {
  std::vector<int> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    const auto v = config::parse_int(item);
    if (!v || *v < 0 || !config::narrow_int<int>(*v))
      throw config::ConfigError(fmt::format(
          "--trace-ranks: '{}' is not a rank (expected a comma-separated list such as 0,8,16)",
          item));
    out.push_back(static_cast<int>(*v));
  }
  if (!text.empty() && text.back() == ',')
    throw config::ConfigError(
        "--trace-ranks: a trailing comma (expected a comma-separated list such as 0,8,16)");
  return out;
}

// A traced rank must be one the step simulates: a rank past the cluster, or one folded
// into another rank's class, would give a trace without it.
void check_trace_ranks(const std::vector<int>& ranks, const workloads::ScenarioInputs& inputs,
                       bool folded) {
  const int world = inputs.cluster.num_gpus();
  std::vector<int> simulated;
  for (const auto& r : inputs.step.ranks) simulated.push_back(r.rank);
  for (int rank : ranks) {
    if (rank >= world)
      throw config::ConfigError(fmt::format(
          "--trace-ranks: {} is outside the cluster {} (expected a rank in 0..{})", rank,
          inputs.cluster.file, world - 1));
    if (std::find(simulated.begin(), simulated.end(), rank) == simulated.end())
      throw config::ConfigError(fmt::format(
          "--trace-ranks: {} is not simulated{} (expected one of the simulated ranks {}{})", rank,
          folded ? ": folding simulates one rank per class" : "",
          fmt::join(simulated.begin(), simulated.begin() + std::min<std::ptrdiff_t>(
                                                               8, std::ssize(simulated)), ","),
          simulated.size() > 8 ? ",..." : "", folded ? " or --no-fold" : ""));
  }
}

// The scenario's options from the flags; every flag value is checked before any file loads.
sim::ScenarioOptions scenario_options(const SimulateOptions& o) {
  sim::ScenarioOptions s;
  if (o.design == "all") {
    s.designs = sim::design_names();
    s.designs.emplace_back(sim::kBestDesign);
  } else if (sim::is_design_name(o.design) || o.design == sim::kBestDesign) {
    s.designs = {o.design};
  } else {
    throw config::ConfigError(fmt::format(
        "--design: '{}' is not a design (expected {}, best or all)", o.design, sim::design_list()));
  }
  const auto images = sim::background_images_named(o.images);
  if (!images) throw flag_error("--images", o.images, "none, inter-host or all");
  s.images = *images;
  s.trace_ranks = parse_rank_list(o.trace_ranks);
  s.trace = !o.trace.empty();
  if (!sim::parse_tilewise_transport(o.tilewise_transport, s.design_options.tilewise_transport))
    throw flag_error("--tilewise-transport", o.tilewise_transport, "nccl or copy_engine");
  if (o.gemm_clock == "steady")
    s.gemm_clock = sim::GemmClock::Steady;
  else if (o.gemm_clock == "duty-cycle")
    s.gemm_clock = sim::GemmClock::DutyCycle;
  else
    throw flag_error("--gemm-clock", o.gemm_clock, "steady or duty-cycle");
  if (o.format != "table" && o.format != "json")
    throw flag_error("--format", o.format, "table or json");
  s.planning.scaled_parts_min_ranks = o.exact_parts ? 0 : kScaledPartsMinRanks;
  s.zero_wall_times = o.no_timing;
  return s;
}

// The --design help: every design of the registry's table with its one-line description.
std::string design_help() {
  std::string help = sim::design_list("|") + "|best|all:";
  for (const sim::DesignEntry& e : sim::design_table())
    help += fmt::format("\n  {:<11} {}", e.name, e.description);
  return help +
         "\n  best        per class of pair the fastest of the above in this step (a tuner's "
         "choice; runs every design first)"
         "\n  all         every design, one after another, then best";
}

// out.json -> out.<design>.json (and FILE -> FILE.<design>.json)
std::string per_design_path(const std::string& path, const std::string& design) {
  const std::string ext = ".json";
  const bool has_ext =
      path.size() > ext.size() && path.compare(path.size() - ext.size(), ext.size(), ext) == 0;
  return fmt::format("{}.{}.json", has_ext ? path.substr(0, path.size() - ext.size()) : path,
                     design);
}

int run_simulate(const SimulateOptions& o) {
  const auto wall_start = std::chrono::steady_clock::now();
  sim::ScenarioOptions options = scenario_options(o);
  workloads::ScenarioRequest request;
  request.model_file = o.workload;
  request.cluster_file = o.cluster;
  request.profile_file = o.profile;
  request.tp = o.tp, request.pp = o.pp, request.dp = o.dp, request.cp = o.cp, request.ep = o.ep;
  request.fold = !o.no_fold;
  // Output paths are checked before the run, not after minutes of simulating.
  if (!o.output.empty()) config::check_writable(o.output, "--output");
  if (!o.json_output.empty()) config::check_writable(o.json_output, "--json-output");
  if (!o.trace.empty()) {
    if (o.design != "all") config::check_writable(o.trace, "--trace");
    for (const auto& design : options.designs)
      if (o.design == "all") config::check_writable(per_design_path(o.trace, design), "--trace");
  }
  // A configuration that cannot run is no projection: stop before building its step, whose
  // graph for an absurd layout takes gigabytes and minutes before it could be refused.
  std::optional<planning::PlanConfig> configuration;
  if (!o.configuration.empty()) {
    if (o.tp || o.pp || o.dp || o.cp || o.ep)
      throw config::ConfigError(
          "--configuration: sets tp, pp, dp, cp and ep itself (expected none of --tp, --pp, "
          "--dp, --cp, --ep beside it)");
    configuration = planning::parse_configuration_text(o.configuration, "--configuration");
  }
  workloads::ScenarioSpecs specs = workloads::load_scenario_specs(request);
  if (configuration) {
    // The model and cluster exactly as the planner timed this point.
    planning::ConfiguredSpecs configured =
        planning::configure(specs.model, specs.cluster, *configuration, "--configuration");
    specs.model = std::move(configured.model);
    specs.cluster = std::move(configured.cluster);
  }
  workloads::validate_model(specs.model);
  const workloads::MemoryEstimate memory = workloads::estimate_memory(
      workloads::resolve_for_world(specs.model, specs.cluster.num_gpus(),
                                   specs.cluster.gpus_per_node),
      specs.cluster);
  if (!memory.fits() && !o.ignore_memory)
    throw config::ConfigError(fmt::format(
        "{}: the configuration does not fit in GPU memory: {} (expected a layout that fits: "
        "more tp/pp, recompute or the distributed optimizer; --ignore-memory simulates it anyway)",
        o.workload, memory.explain()));
  // Deliberately never freed: the process exits right after printing, and tearing down
  // ~10^6 small allocations of the step graphs costs a few tenths of a second.
  const auto& inputs = *new workloads::ScenarioInputs(workloads::make_scenario_inputs(
      specs.model, specs.cluster, request.profile_file, request.fold));
  if (options.trace) check_trace_ranks(options.trace_ranks, inputs, request.fold);
  if (options.gemm_clock == sim::GemmClock::DutyCycle && !inputs.profile.compute.idle_clock_boost)
    throw config::ConfigError(fmt::format(
        "--gemm-clock duty-cycle: {}: compute.idle_clock_boost: missing (expected a profile "
        "fitted from pair loops, e.g. calibration/profiles/h200-nvlink.yaml)",
        inputs.profile.path));
  check_memory_budget(sim::step_run_size(inputs.step, inputs.topology), o.max_memory,
                      fmt::format("{} on {}", o.workload, o.cluster));
  const auto& result =
      *new sim::ScenarioResult(workloads::simulate_inputs(inputs, options));

  SimulateReport report{inputs, result, memory};
  // Every output is staged and renamed together at the end: a run that fails part-way
  // leaves none of them.
  config::StagedFiles outputs;
  for (const auto& run : result.runs) {
    std::string file;
    if (!run.trace_json.empty()) {
      file = o.design != "all" ? o.trace : per_design_path(o.trace, run.result.design);
      outputs.add(file, run.trace_json);
    }
    report.trace_files.push_back(file);
  }
  report.background_images =
      !inputs.step.representative.empty() && options.images != sim::BackgroundImages::None;
  report.peak_rss_bytes = o.no_timing ? 0 : peak_rss_bytes();
  report.wall_s =
      o.no_timing
          ? 0
          : std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  std::string text = o.format == "json" ? simulate_json(report) : simulate_table(report);
  if (o.show_profile) {
    // Kept out of the JSON so that stays parseable.
    if (o.format == "json")
      fmt::print(stderr, "{}", sim::format_profile(inputs.profile));
    else
      text = sim::format_profile(inputs.profile) + text;
  }
  // One simulation for both the table a person reads and the JSON a script reads.
  if (!o.json_output.empty()) outputs.add(o.json_output, simulate_json(report));
  if (o.output.empty()) {
    outputs.commit();
    std::fwrite(text.data(), 1, text.size(), stdout);
  } else {
    outputs.add(o.output, text);
    outputs.commit();
  }
  return kExitOk;
}

}  // namespace

void add_simulate_command(CLI::App& app, Runner& selected) {
  auto opts = std::make_shared<SimulateOptions>();
  auto* sub = app.add_subcommand(
      "simulate", "simulate one training step of a model on a cluster under overlap designs");
  sub->add_option("-w,--workload", opts->workload, "model YAML")->capture_default_str();
  sub->add_option("-c,--cluster", opts->cluster, "cluster YAML")->capture_default_str();
  sub->add_option("--profile", opts->profile,
                  "device profile YAML (default: the one the cluster file names)");
  sub->add_option("--design", opts->design, design_help())->capture_default_str();
  sub->add_option(
      "--trace", opts->trace,
      "write a Chrome/Perfetto trace JSON (with --design all: one per design, out.<design>.json)");
  sub->add_option("--trace-ranks", opts->trace_ranks,
                  "global ranks to trace, e.g. 0,8 (default: the first 16 simulated ranks)");
  sub->add_option("--format", opts->format, "table|json")->capture_default_str();
  sub->add_option("-o,--output", opts->output, "write the result to FILE (atomically)");
  sub->add_option("--json-output", opts->json_output,
                  "also write the result as JSON to FILE (atomically, with the other outputs)");
  sub->add_option("--images", opts->images,
                  "background traffic of folded ranks: none|inter-host|all")
      ->capture_default_str();
  add_max_memory_option(sub, opts->max_memory);
  sub->add_flag("--ignore-memory", opts->ignore_memory,
                "simulate a configuration even where it does not fit in GPU memory");
  sub->add_flag("--no-fold", opts->no_fold, "simulate every rank instead of one per class");
  sub->add_flag("--no-timing", opts->no_timing,
                "report sim_wall_s and peak memory as 0 (byte-identical output for tests)");
  sub->add_flag("--exact-parts", opts->exact_parts,
                "simulate every part of a paired collective over >= 256 ranks on the network "
                "(default: the first part, the rest at its rate)");
  sub->add_option("--tilewise-transport", opts->tilewise_transport,
                  "tile-wise design's transport: nccl (NCCL on a carve-out of SMs) or copy_engine "
                  "(copy engines, reduction in the owner's GEMM epilogue)")
      ->capture_default_str();
  sub->add_option("--gemm-clock", opts->gemm_clock,
                  "steady: GEMMs at the profile's back-to-back rates; duty-cycle: rerun each "
                  "design with them scaled by 1 + compute.idle_clock_boost x the step's share "
                  "without compute")
      ->capture_default_str();
  sub->add_flag("--show-profile", opts->show_profile, "print the loaded profile and its sources");
  // 0 is the "as the model file says" of the options struct, never a size to pass.
  const CLI::Range positive(1, 1'000'000'000);
  sub->add_option("--tp", opts->tp, "override the model's tensor-parallel size")->check(positive);
  sub->add_option("--pp", opts->pp, "override the pipeline-parallel size")->check(positive);
  sub->add_option("--dp", opts->dp, "override the data-parallel size")->check(positive);
  sub->add_option("--cp", opts->cp, "override the context-parallel size")->check(positive);
  sub->add_option("--ep", opts->ep, "override the expert-parallel size")->check(positive);
  sub->add_option("--configuration", opts->configuration,
                  "a plan's configuration, e.g. 'n16 tp8 pp8 v1 cp1 ep1 dp2 mb1 sp0 full' (its "
                  "report lists them): the node count and the model's layout as the planner "
                  "timed them");
  sub->callback([opts, &selected] { selected = [opts] { return run_simulate(*opts); }; });
}

}  // namespace overlapsim::app
