// `overlapsim simulate`: one training step of a model on a cluster, under each requested
// overlap design; prints a breakdown table or the JSON of the CLI contract, and writes a
// Perfetto trace on request. Semantics and output fields: docs/simulate.md.
#include <fmt/format.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "app/commands.hpp"
#include "calibration/profile.hpp"
#include "calibration/profile_launcher.hpp"
#include "config/atomic_file.hpp"
#include "config/error.hpp"
#include "sim/compute/compute_model.hpp"
#include "sim/compute/profile.hpp"
#include "sim/engine/simulator.hpp"
#include "sim/exec/step_executor.hpp"
#include "sim/network/flow_network.hpp"
#include "sim/overlap/designs.hpp"
#include "sim/overlap/registry.hpp"
#include "sim/trace/chrome_trace.hpp"
#include "workloads/cluster.hpp"
#include "workloads/generator.hpp"
#include "workloads/model.hpp"

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
  std::string images = "inter-host";
  bool no_fold = false;
  bool no_timing = false;
  bool show_profile = false;
  bool exact_parts = false;                    // every part of a paired collective on the network
  std::string tilewise_transport = "nccl";     // nccl | copy_engine
  std::string gemm_clock = "steady";           // steady | duty-cycle
  int tp = 0, pp = 0, dp = 0, cp = 0, ep = 0;  // 0: as the model file says
};

std::uint64_t peak_rss_bytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<std::uint64_t>(usage.ru_maxrss) * 1024;  // Linux reports KiB
}

std::vector<std::string> requested_designs(const std::string& flag) {
  if (flag == "all") return sim::design_names();
  if (!sim::is_design_name(flag))
    throw std::invalid_argument(fmt::format(
        "--design: '{}' is not a design (expected sequential, decomposed, tilewise, fused, "
        "shaped or all)",
        flag));
  return {flag};
}

sim::BackgroundImages parse_images(const std::string& flag) {
  if (flag == "none") return sim::BackgroundImages::None;
  if (flag == "inter-host") return sim::BackgroundImages::InterHost;
  if (flag == "all") return sim::BackgroundImages::All;
  throw std::invalid_argument(
      fmt::format("--images: '{}' is not allowed (expected none, inter-host or all)", flag));
}

std::vector<int> parse_rank_list(const std::string& text) {
  std::vector<int> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    try {
      std::size_t used = 0;
      out.push_back(std::stoi(item, &used));
      if (used != item.size()) throw std::invalid_argument(item);
    } catch (const std::exception&) {
      throw std::invalid_argument(fmt::format(
          "--trace-ranks: '{}' is not a rank (expected a comma-separated list such as 0,8,16)",
          item));
    }
  }
  return out;
}

// The generator folds identical ranks onto one representative per pipeline stage, whose
// pipeline is the one holding every simulated rank. Until it fills
// StepGraph::representative itself, derive the map from the "pp" communicators: rank r
// at position i of its pipeline stands with the simulated rank at position i.
void infer_representatives(sim::StepGraph& step) {
  if (!step.representative.empty()) return;
  bool folded = false;
  for (const auto& p : step.ranks) folded = folded || p.multiplicity > 1;
  if (!folded) return;
  std::vector<int> simulated;
  for (const auto& p : step.ranks) simulated.push_back(p.rank);
  std::vector<int> rep(static_cast<std::size_t>(step.world_size), -1);
  const sim::CommGroup* primary = nullptr;
  for (const auto& g : step.groups)
    if (g.family == "pp" &&
        std::find(g.ranks.begin(), g.ranks.end(), simulated.front()) != g.ranks.end())
      primary = &g;
  if (primary) {
    for (const auto& g : step.groups)
      if (g.family == "pp" && g.ranks.size() == primary->ranks.size())
        for (std::size_t i = 0; i < g.ranks.size(); ++i) rep[g.ranks[i]] = primary->ranks[i];
  } else if (simulated.size() == 1) {
    std::fill(rep.begin(), rep.end(), simulated.front());
  }
  for (int r : simulated)
    if (rep[r] != r) return;  // not the expected shape: no background images
  for (int v : rep)
    if (v < 0) return;
  step.representative = std::move(rep);
}

// out.json -> out.<design>.json (and FILE -> FILE.<design>.json)
std::string per_design_path(const std::string& path, const std::string& design) {
  const std::string ext = ".json";
  const bool has_ext =
      path.size() > ext.size() && path.compare(path.size() - ext.size(), ext.size(), ext) == 0;
  return fmt::format("{}.{}.json", has_ext ? path.substr(0, path.size() - ext.size()) : path,
                     design);
}

struct DesignRun {
  sim::StepResult result;
  std::string trace_file;
  bool paired = false;  // an overlapping design (not sequential)
  sim::PairStats pairs;
  std::vector<sim::ParameterUse> parameters;
  long launches_by_path[3] = {0, 0, 0};  // calibration::CollectivePath order
  // --gemm-clock duty-cycle: the share of the step without compute on the slowest rank in
  // the back-to-back run, and the GEMM rate factor the rerun used (1 + idle_clock_boost x
  // it); < 0: not applied.
  double idle_fraction = -1, gemm_clock_speedup = -1;
};

struct Outcome {
  workloads::ModelSpec model;  // resolved for the cluster
  workloads::ClusterSpec cluster;
  sim::Profile profile;
  sim::StepGraph step;
  std::vector<DesignRun> runs;
  double peak_flops_per_s = 0;
  bool background_images = false;
  std::uint64_t peak_rss_bytes = 0;
  double wall_s = 0;  // the whole command: loading, generation and every design's run
  // The profile numbers this run used (the compute model's entries and the peak the MFU
  // divides by), with their sources, and their kinds ("measured+datasheet").
  std::vector<sim::SourceEntry> used_sources;
  std::string used_kinds;
  // Every class of collective the runs launched and how the profile timer timed it.
  std::vector<calibration::CollectiveClassUse> collective_classes;
};

// The profile timer's options for this cluster: NVLink-class hosts get the efficiency path.
calibration::CollectiveTimingOptions timing_options(const workloads::ClusterSpec& c) {
  calibration::CollectiveTimingOptions t;
  if (c.intra_node.kind == workloads::IntraNodeKind::NvSwitch) {
    t.nvlink_Bps = c.intra_node.gpu_bandwidth_Bps;
    t.nvlink_citation = fmt::format("{} intra_node.gpu_bandwidth_Bps", c.file);
  }
  return t;
}

void merge_classes(std::vector<calibration::CollectiveClassUse>& into,
                   const std::vector<calibration::CollectiveClassUse>& from) {
  for (const auto& u : from) {
    auto it = std::find_if(into.begin(), into.end(), [&](const auto& v) {
      return v.op == u.op && v.ranks == u.ranks && v.intra_host == u.intra_host;
    });
    if (it == into.end())
      into.push_back(u);
    else
      it->launches += u.launches;
  }
}

void collect_used_sources(Outcome& out, const sim::ComputeModel& compute) {
  std::vector<std::string> used = compute.used_entries();
  const std::string peak_key =
      fmt::format("compute.peak_flops_per_s.{}", sim::to_string(out.model.training.precision));
  if (std::find(used.begin(), used.end(), peak_key) == used.end())
    used.insert(used.begin(), peak_key);
  bool seen[4] = {false, false, false, false};
  for (const auto& entry : out.profile.sources())
    if (std::find(used.begin(), used.end(), entry.what) != used.end()) {
      out.used_sources.push_back(entry);
      seen[static_cast<int>(entry.source.kind)] = true;
    }
  for (auto kind : {sim::SourceKind::Measured, sim::SourceKind::Datasheet, sim::SourceKind::Paper,
                    sim::SourceKind::Assumed})
    if (seen[static_cast<int>(kind)])
      out.used_kinds += (out.used_kinds.empty() ? "" : "+") + std::string(sim::to_string(kind));
}

// MFU counts model FLOPs only (Chowdhery et al. 2022, PaLM appendix B): recomputed
// forward passes are work the hardware does but not progress of the model, so they are
// in flops_per_step (hardware FLOPs) and not in model_flops_per_step.
double model_flops(const Outcome& o) {
  return o.step.model_flops_per_step > 0 ? o.step.model_flops_per_step : o.step.flops_per_step;
}

double mfu(const Outcome& o, const sim::StepResult& r) {
  return model_flops(o) / (r.step_time_s * o.step.world_size * o.peak_flops_per_s);
}

Outcome simulate(const SimulateOptions& o) {
  const auto wall_start = std::chrono::steady_clock::now();
  const auto designs = requested_designs(o.design);
  const auto images = parse_images(o.images);
  const auto trace_ranks = parse_rank_list(o.trace_ranks);
  if (o.tilewise_transport != "nccl" && o.tilewise_transport != "copy_engine")
    throw std::invalid_argument(
        fmt::format("--tilewise-transport: '{}' is not allowed (expected nccl or copy_engine)",
                    o.tilewise_transport));
  if (o.gemm_clock != "steady" && o.gemm_clock != "duty-cycle")
    throw std::invalid_argument(fmt::format(
        "--gemm-clock: '{}' is not allowed (expected steady or duty-cycle)", o.gemm_clock));
  for (const std::string& fmt_name : {o.format})
    if (fmt_name != "table" && fmt_name != "json")
      throw std::invalid_argument(
          fmt::format("--format: '{}' is not allowed (expected table or json)", fmt_name));

  Outcome out;
  out.cluster = workloads::load_cluster(o.cluster);
  workloads::ModelSpec spec = workloads::load_model(o.workload);
  if (o.tp) spec.parallelism.tp = o.tp;
  if (o.pp) spec.parallelism.pp = o.pp;
  if (o.dp) spec.parallelism.dp = o.dp;
  if (o.cp) spec.parallelism.cp = o.cp;
  if (o.ep) spec.parallelism.ep = o.ep;
  workloads::validate_model(spec);
  const int world = out.cluster.num_gpus();
  out.model = workloads::resolve_for_world(spec, world, out.cluster.gpus_per_node);

  std::string profile_path = o.profile;
  if (profile_path.empty() && out.cluster.gpu) profile_path = out.cluster.gpu->profile_path;
  if (profile_path.empty())
    throw config::ConfigError(
        fmt::format("{}: gpu.profile: missing (expected a profile path such as "
                    "calibration/profiles/datasheet-h200.yaml, or pass --profile)",
                    out.cluster.file));
  out.profile = calibration::load_profile(profile_path);
  const auto peak = out.profile.compute.peak_flops_per_s.find(out.model.training.precision);
  if (peak == out.profile.compute.peak_flops_per_s.end())
    throw config::ConfigError(fmt::format(
        "{}: compute.peak_flops_per_s: no {} rate for the model's precision (expected a "
        "profile of a GPU with {} support)",
        profile_path, sim::to_string(out.model.training.precision),
        sim::to_string(out.model.training.precision)));
  out.peak_flops_per_s = peak->second.value;

  const sim::Topology topology = workloads::build_topology(out.cluster);
  workloads::GenerateOptions gen;
  gen.fold = !o.no_fold;
  gen.gpus_per_node = out.cluster.gpus_per_node;
  out.step = workloads::generate_step(spec, world, gen);
  infer_representatives(out.step);
  out.background_images = !out.step.representative.empty() && images != sim::BackgroundImages::None;

  const sim::ComputeModel compute(out.profile.compute);
  // One design on one profile (the shipped one, or its GEMM rates scaled for the clock):
  // fills run's result, launches and pair stats; the final run of a design also counts its
  // collective classes and writes its trace. False when the design overlaps no pair and the
  // result is sequential's.
  auto simulate_design = [&](const std::string& name, const sim::Profile& profile,
                             const sim::ComputeModel& compute, bool final_run, DesignRun& run) {
    sim::Simulator simulator;
    sim::FlowNetwork net(simulator, topology);
    sim::ExecOptions exec;
    exec.images = images;
    if (!o.trace.empty()) {
      exec.record_timeline = true;
      exec.timeline_ranks = trace_ranks;
      if (exec.timeline_ranks.empty())
        for (std::size_t i = 0; i < out.step.ranks.size() && i < 16; ++i)
          exec.timeline_ranks.push_back(out.step.ranks[i].rank);
      exec.link_classes = {"nvlink", "pcie", "network"};
      // Every directed link of a class together: the denominator of its utilisation.
      exec.link_capacity_Bps.assign(3, 0.0);
      for (sim::LinkId id = 0; id < topology.num_links(); ++id) {
        const sim::TopoLink& link = topology.link(id);
        const int c = link.cls == sim::LinkClass::NvLink ? 0
                      : link.cls == sim::LinkClass::Pcie ? 1
                                                         : 2;
        exec.link_capacity_Bps[c] += link.bandwidth_Bps;
      }
      exec.link_bytes = [&net] {
        return std::vector<double>{net.bytes_on_class(sim::LinkClass::NvLink),
                                   net.bytes_on_class(sim::LinkClass::Pcie),
                                   net.bytes_on_class(sim::LinkClass::Network)};
      };
    }
    sim::StepExecutor executor(out.step, compute, net, exec);
    // Collectives timed by the profile where it measured them (docs/simulate.md).
    calibration::ProfileCollectiveTimer timer(profile.collectives, net,
                                              timing_options(out.cluster));
    executor.set_collective_launcher(timer.launcher());
    auto design = sim::make_design(name, profile);
    if (auto* t = dynamic_cast<sim::TilewiseDesign*>(design.get());
        t && o.tilewise_transport == "copy_engine")
      t->set_transport(sim::TilewiseDesign::Transport::CopyEngine, profile);
    sim::PairedDesign* paired = sim::as_paired(*design);
    if (paired) {
      // The measured paths charge NCCL's fixed cost per call; the cluster's links do not.
      std::vector<int> group_ranks;
      std::vector<char> group_intra;
      for (const auto& g : out.step.groups) {
        group_ranks.push_back(static_cast<int>(g.ranks.size()));
        group_intra.push_back(timer.intra_host(g.ranks) ? 1 : 0);
      }
      paired->set_call_latency_rule(
          [&timer, group_ranks, group_intra](sim::CollectiveOp op, int group) {
            return timer.charges_call_latency(op, group_ranks[group], group_intra[group] != 0);
          });
      // NCCL's CTA limit binds on NVLink, not behind a NIC (docs/designs.md).
      std::vector<char> intra_host;
      for (const auto& g : out.step.groups) {
        bool one_host = true;
        for (int r : g.ranks) one_host = one_host && net.host_of(r) == net.host_of(g.ranks[0]);
        intra_host.push_back(one_host ? 1 : 0);
      }
      paired->set_intra_host_groups(std::move(intra_host));
      // Unless --exact-parts, only the first part of a paired collective over >= 256 ranks
      // runs on the network (each is ~10^5-10^6 flows); the rest take its time per byte.
      std::vector<int> sizes;
      for (const auto& g : out.step.groups) sizes.push_back(static_cast<int>(g.ranks.size()));
      paired->set_scaled_parts(o.exact_parts ? 0 : 256, std::move(sizes));
    }
    if (paired) {
      const sim::PairStats scan = paired->scan(out.step, compute);
      if (scan.overlapped == 0 && !out.runs.empty() &&
          out.runs.front().result.design == "sequential" && o.trace.empty()) {
        // The design overlaps no pair of this step: every pair runs as under sequential,
        // so the step is sequential's, event for event.
        run.result = out.runs.front().result;
        run.result.design = name;
        run.result.sim_wall_s = 0;
        run.paired = true;
        run.pairs = scan;
        run.parameters = paired->parameters();
        run.idle_fraction = out.runs.front().idle_fraction;
        run.gemm_clock_speedup = out.runs.front().gemm_clock_speedup;
        std::copy(std::begin(out.runs.front().launches_by_path),
                  std::end(out.runs.front().launches_by_path), std::begin(run.launches_by_path));
        return false;
      }
    }
    run.result = executor.run(*design);
    for (auto path : {calibration::CollectivePath::Curve, calibration::CollectivePath::Efficiency,
                      calibration::CollectivePath::Cluster})
      run.launches_by_path[static_cast<int>(path)] = timer.launches(path);
    if (final_run) merge_classes(out.collective_classes, timer.uses());
    if (paired) {
      run.paired = true;
      run.pairs = paired->stats();
      run.parameters = paired->parameters();
    }
    if (o.no_timing) run.result.sim_wall_s = 0;
    if (final_run && !o.trace.empty()) {
      run.trace_file = o.design != "all" ? o.trace : per_design_path(o.trace, name);
      config::write_file_atomic(
          run.trace_file, sim::chrome_trace_json(executor.timeline(), run.result,
                                                 fmt::format("{} on {} ({})", out.step.workload,
                                                             out.cluster.name, name)));
    }
    return true;
  };
  for (const std::string& name : designs) {
    DesignRun run;
    if (o.gemm_clock == "duty-cycle" && !out.profile.compute.idle_clock_boost)
      throw std::invalid_argument(fmt::format(
          "--gemm-clock duty-cycle: {}: compute.idle_clock_boost: missing (expected a profile "
          "fitted from pair loops, e.g. calibration/profiles/h200-nvlink.yaml)",
          out.profile.path));
    const bool clocked = o.gemm_clock == "duty-cycle";
    if (simulate_design(name, out.profile, compute, !clocked, run) && clocked &&
        run.result.step_time_s > 0) {
      // The GEMMs' clock has headroom in the share of the step without compute
      // (compute.idle_clock_boost, fitted on pair loops): rerun once at the rate that
      // share gives, the share taken from the back-to-back run.
      run.idle_fraction = std::clamp(1 - run.result.compute_s / run.result.step_time_s, 0.0, 1.0);
      run.gemm_clock_speedup = out.profile.compute.clock_speedup(run.idle_fraction);
      sim::Profile boosted = out.profile;
      boosted.compute = sim::with_gemm_rates_scaled(out.profile.compute, run.gemm_clock_speedup);
      const sim::ComputeModel boosted_compute(boosted.compute);
      const double first_wall_s = run.result.sim_wall_s;
      DesignRun rerun;
      rerun.idle_fraction = run.idle_fraction;
      rerun.gemm_clock_speedup = run.gemm_clock_speedup;
      simulate_design(name, boosted, boosted_compute, true, rerun);
      if (!o.no_timing) rerun.result.sim_wall_s += first_wall_s;
      run = std::move(rerun);
    }
    out.runs.push_back(std::move(run));
  }
  collect_used_sources(out, compute);
  out.peak_rss_bytes = o.no_timing ? 0 : peak_rss_bytes();
  out.wall_s =
      o.no_timing
          ? 0
          : std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return out;
}

const sim::StepResult* sequential_result(const Outcome& o) {
  for (const auto& run : o.runs)
    if (run.result.design == "sequential") return &run.result;
  return nullptr;
}

// "9 measured, 3 assumed" for a design's parameters.
std::string parameter_kinds(const std::vector<sim::ParameterUse>& params) {
  std::map<std::string, int> n;
  for (const auto& u : params) ++n[sim::to_string(u.source.kind)];
  std::vector<std::string> parts;
  for (const char* k : {"measured", "datasheet", "paper", "assumed"})
    if (n.count(k)) parts.push_back(fmt::format("{} {}", n[k], k));
  return parts.empty() ? "none" : fmt::format("{}", fmt::join(parts, ", "));
}

std::string throughput_key(const Outcome& o) {
  return o.step.throughput_unit == "samples" ? "samples_per_s" : "tokens_per_s";
}

std::string to_json(const Outcome& o) {
  using nlohmann::ordered_json;
  ordered_json j;
  j["workload"] = o.step.workload;
  j["cluster"] = o.cluster.name;
  j["gpus"] = o.step.world_size;
  const auto& p = o.model.parallelism;
  j["parallelism"] = {{"tp", p.tp}, {"pp", p.pp}, {"dp", p.dp}, {"cp", p.cp}, {"ep", p.ep}};
  j["profile"] = o.profile.name;
  j["profile_path"] = o.profile.path;
  j["profile_numbers"] = o.used_kinds;  // of the numbers used (the profile may hold more)
  ordered_json sources = ordered_json::array();
  for (const auto& e : o.used_sources) {
    ordered_json s = {{"what", e.what},
                      {"source", sim::to_string(e.source.kind)},
                      {"citation", e.source.citation}};
    if (e.source.fit_error >= 0) s["fit_error"] = e.source.fit_error;
    sources.push_back(std::move(s));
  }
  j["profile_sources"] = std::move(sources);
  j["precision"] = sim::to_string(o.model.training.precision);
  j["peak_flops_per_s"] = o.peak_flops_per_s;
  j["flops_per_step"] = o.step.flops_per_step;
  j["model_flops_per_step"] = model_flops(o);
  j[o.step.throughput_unit == "samples" ? "samples_per_step" : "tokens_per_step"] =
      o.step.tokens_per_step;
  j["simulated_ranks"] = o.step.ranks.size();
  j["background_images"] = o.background_images;
  ordered_json designs = ordered_json::array();
  for (const auto& run : o.runs) {
    const sim::StepResult& r = run.result;
    ordered_json d;
    d["design"] = r.design;
    d["step_time_s"] = r.step_time_s;
    d["compute_s"] = r.compute_s;
    d["exposed_comm_s"] = r.exposed_comm_s;
    d["overlapped_comm_s"] = r.overlapped_comm_s;
    d["bubble_s"] = r.bubble_s;
    d["comm_s"] = r.comm_s;
    d["critical_rank"] = r.critical_rank;
    d["mfu"] = mfu(o, r);
    d[throughput_key(o)] = o.step.tokens_per_step / r.step_time_s;
    d["events"] = r.events;
    d["collectives"] = r.collectives;
    d["background_collectives"] = r.background_collectives;
    d["sim_wall_s"] = r.sim_wall_s;
    if (const sim::StepResult* seq = sequential_result(o))
      d["speedup_vs_sequential"] = seq->step_time_s / r.step_time_s;
    ordered_json by_path = ordered_json::object();
    for (auto path : {calibration::CollectivePath::Curve, calibration::CollectivePath::Efficiency,
                      calibration::CollectivePath::Cluster})
      by_path[calibration::to_string(path)] = run.launches_by_path[static_cast<int>(path)];
    d["collective_launches_by_path"] = std::move(by_path);
    d["pairs_overlapped"] = run.pairs.overlapped;
    ordered_json fallback = ordered_json::object();
    for (const auto& [why, n] : run.pairs.sequential) fallback[why] = n;
    d["pairs_sequential"] = std::move(fallback);
    ordered_json params = ordered_json::array();
    for (const auto& u : run.parameters)
      params.push_back({{"key", u.key},
                        {"value", u.value},
                        {"source", sim::to_string(u.source.kind)},
                        {"citation", u.source.citation}});
    d["parameters"] = std::move(params);
    if (run.gemm_clock_speedup > 0) {
      d["idle_fraction"] = run.idle_fraction;
      d["gemm_clock_speedup"] = run.gemm_clock_speedup;
    }
    if (!run.trace_file.empty()) d["trace"] = run.trace_file;
    designs.push_back(std::move(d));
  }
  j["designs"] = std::move(designs);
  ordered_json timing = ordered_json::array();
  for (const auto& u : o.collective_classes)
    timing.push_back({{"class", u.label},
                      {"path", calibration::to_string(u.path)},
                      {"how", u.how},
                      {"launches", u.launches}});
  j["collective_timing"] = std::move(timing);
  // First design's numbers at the top level too, as issue 3 lists them there.
  if (!o.runs.empty()) {
    j["mfu"] = mfu(o, o.runs.front().result);
    j[throughput_key(o)] = o.step.tokens_per_step / o.runs.front().result.step_time_s;
  }
  std::uint64_t events = 0;
  for (const auto& run : o.runs) events += run.result.events;
  j["events"] = events;
  j["wall_s"] = o.wall_s;
  j["peak_rss_bytes"] = o.peak_rss_bytes;
  return j.dump(2) + "\n";
}

std::string ms(double s) { return fmt::format("{:.3f}", s * 1e3); }

std::string to_table(const Outcome& o) {
  const auto& p = o.model.parallelism;
  std::string t = fmt::format("{} on {}: {} GPUs, tp {} pp {} dp {} cp {} ep {}, {}\n",
                              o.step.workload, o.cluster.name, o.step.world_size, p.tp, p.pp, p.dp,
                              p.cp, p.ep, sim::to_string(o.model.training.precision));
  t += fmt::format("profile {} ({}); numbers used: {}\n", o.profile.name, o.profile.path,
                   o.used_kinds);
  for (auto kind : {sim::SourceKind::Measured, sim::SourceKind::Datasheet, sim::SourceKind::Paper,
                    sim::SourceKind::Assumed}) {
    std::string names;
    for (const auto& e : o.used_sources)
      if (e.source.kind == kind) {
        const std::string& w = e.what;
        names += (names.empty() ? "" : ", ") + w.substr(w.find('.') + 1);
      }
    if (!names.empty()) t += fmt::format("  {}: {}\n", sim::to_string(kind), names);
  }
  t += "  network: the cluster file's links (sources cited there)\n";
  t += "collectives timed by (launches over every design, background images included):\n";
  for (const auto& u : o.collective_classes)
    t += fmt::format("  {} ({}): {}\n", u.label, u.launches, u.how);
  int stands_for = 0;
  for (const auto& r : o.step.ranks) stands_for += r.multiplicity;
  t += fmt::format("simulated {} ranks standing for {}; folded ranks' traffic as background: {}\n",
                   o.step.ranks.size(), stands_for, o.background_images ? "yes" : "no");
  t += fmt::format("{:<11} {:>11} {:>8} {:>11} {:>11} {:>11} {:>11} {:>7} {:>13} {:>9} {:>8}\n",
                   "design", "step ms", "speedup", "compute ms", "exposed ms", "bubble ms",
                   "hidden ms", "MFU", o.step.throughput_unit + "/s", "events", "wall s");
  for (const auto& run : o.runs) {
    const sim::StepResult& r = run.result;
    t += fmt::format(
        "{:<11} {:>11} {:>8} {:>11} {:>11} {:>11} {:>11} {:>6.1f}% {:>13.4g} {:>9} {:>8.3f}\n",
        r.design, ms(r.step_time_s),
        sequential_result(o)
            ? fmt::format("{:.3f}x", sequential_result(o)->step_time_s / r.step_time_s)
            : std::string("-"),
        ms(r.compute_s), ms(r.exposed_comm_s), ms(r.bubble_s), ms(r.overlapped_comm_s),
        100 * mfu(o, r), o.step.tokens_per_step / r.step_time_s, r.events, r.sim_wall_s);
  }
  t += fmt::format(
      "breakdown of the slowest rank (rank {}): step = compute + exposed communication + "
      "bubble; hidden = communication under compute\n",
      o.runs.empty() ? 0 : o.runs.front().result.critical_rank);
  t += fmt::format(
      "model FLOPs per step {:.4g} (with recompute {:.4g}; MFU uses the first), peak {} {:.1f} "
      "TFLOP/s per GPU ({})\n",
      model_flops(o), o.step.flops_per_step, sim::to_string(o.model.training.precision),
      o.peak_flops_per_s / 1e12,
      sim::to_string(
          o.profile.compute.peak_flops_per_s.at(o.model.training.precision).source.kind));
  for (const auto& run : o.runs) {
    if (!run.paired) continue;
    std::vector<std::string> fallback;
    for (const auto& [why, n] : run.pairs.sequential)
      fallback.push_back(fmt::format("{} ({})", n, why));
    t += fmt::format("{}: {} pairs overlapped{}{}; parameters: {}\n", run.result.design,
                     run.pairs.overlapped,
                     fallback.empty() ? "" : ", run as sequential: ", fmt::join(fallback, ", "),
                     parameter_kinds(run.parameters));
  }
  for (const auto& run : o.runs)
    if (run.gemm_clock_speedup > 0)
      t += fmt::format(
          "{}: GEMMs at {:.4f}x the back-to-back rate (--gemm-clock duty-cycle: {:.1f}% of the "
          "back-to-back step without compute x compute.idle_clock_boost {:.4g})\n",
          run.result.design, run.gemm_clock_speedup, 100 * run.idle_fraction,
          o.profile.compute.idle_clock_boost->value);
  for (const auto& run : o.runs)
    if (!run.trace_file.empty())
      t += fmt::format("trace: {} (open in https://ui.perfetto.dev)\n", run.trace_file);
  t += fmt::format("wall {:.2f} s in all, peak memory {:.0f} MiB\n", o.wall_s,
                   o.peak_rss_bytes / 1048576.0);
  return t;
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
  sub->add_option("--design", opts->design, "sequential|decomposed|tilewise|fused|shaped|all")
      ->capture_default_str();
  sub->add_option(
      "--trace", opts->trace,
      "write a Chrome/Perfetto trace JSON (with --design all: one per design, out.<design>.json)");
  sub->add_option("--trace-ranks", opts->trace_ranks,
                  "global ranks to trace, e.g. 0,8 (default: the first 16 simulated ranks)");
  sub->add_option("--format", opts->format, "table|json")->capture_default_str();
  sub->add_option("-o,--output", opts->output, "write the result to FILE (atomically)");
  sub->add_option("--images", opts->images,
                  "background traffic of folded ranks: none|inter-host|all")
      ->capture_default_str();
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
  sub->add_option("--tp", opts->tp, "override the model's tensor-parallel size");
  sub->add_option("--pp", opts->pp, "override the pipeline-parallel size");
  sub->add_option("--dp", opts->dp, "override the data-parallel size");
  sub->add_option("--cp", opts->cp, "override the context-parallel size");
  sub->add_option("--ep", opts->ep, "override the expert-parallel size");
  sub->callback([opts, &selected] {
    selected = [opts] {
      // Deliberately never freed: the process exits right after printing, and tearing
      // down ~10^6 small allocations of the step graphs costs a few tenths of a second.
      const Outcome& outcome = *new Outcome(simulate(*opts));
      std::string text = opts->format == "json" ? to_json(outcome) : to_table(outcome);
      if (opts->show_profile) {
        // Kept out of the JSON so that stays parseable.
        if (opts->format == "json")
          fmt::print(stderr, "{}", calibration::format_profile(outcome.profile));
        else
          text = calibration::format_profile(outcome.profile) + text;
      }
      if (opts->output.empty())
        fmt::print("{}", text);
      else
        config::write_file_atomic(opts->output, text);
      return kExitOk;
    };
  });
}

}  // namespace overlapsim::app
