#include "app/simulate_report.hpp"

#include <fmt/format.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "config/units.hpp"
#include "workloads/validation_caveats.hpp"

namespace overlapsim::app {
namespace {

const std::string& trace_file(const SimulateReport& o, std::size_t run) {
  static const std::string none;
  return run < o.trace_files.size() ? o.trace_files[run] : none;
}

// MFU counts model FLOPs only (Chowdhery et al. 2022, PaLM appendix B): recomputed
// forward passes are work the hardware does but not progress of the model, so they are
// in flops_per_step (hardware FLOPs) and not in model_flops_per_step.
double model_flops(const SimulateReport& o) {
  return o.inputs.step.model_flops_per_step > 0 ? o.inputs.step.model_flops_per_step
                                                : o.inputs.step.flops_per_step;
}

nlohmann::ordered_json band_json(const sim::StepBand& b) {
  nlohmann::ordered_json terms = nlohmann::ordered_json::array();
  for (const auto& t : b.terms)
    terms.push_back({{"class", t.number_class},
                     {"sensitivity_s", t.sensitivity_s},
                     {"relative_error", t.relative_error},
                     {"basis", sim::to_string(t.basis)},
                     {"error_source", t.error_source},
                     {"contribution_s", t.contribution_s}});
  return {{"low_s", b.low_s}, {"high_s", b.high_s}, {"dominant", b.dominant},
          {"terms", std::move(terms)}};
}

double mfu(const SimulateReport& o, const sim::StepResult& r) {
  return model_flops(o) / (r.step_time_s * o.inputs.step.world_size * o.inputs.peak_flops_per_s);
}

const sim::StepResult* sequential_result(const SimulateReport& o) {
  for (const auto& run : o.result.runs)
    if (run.result.design == "sequential") return &run.result;
  return nullptr;
}

// The model gives the host a cost (training.host_launch_time, host_sync_time).
bool host_modelled(const SimulateReport& o) {
  const workloads::TrainingSpec& t = o.inputs.model.training;
  return t.host_launch_time_s > 0 || t.host_sync_time_s > 0;
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

std::string throughput_key(const SimulateReport& o) {
  return o.inputs.step.throughput_unit == "samples" ? "samples_per_s" : "tokens_per_s";
}

std::string to_json(const SimulateReport& o) {
  using nlohmann::ordered_json;
  ordered_json j;
  j["workload"] = o.inputs.step.workload;
  j["cluster"] = o.inputs.cluster.name;
  j["gpus"] = o.inputs.step.world_size;
  const auto& p = o.inputs.model.parallelism;
  j["parallelism"] = {{"tp", p.tp}, {"pp", p.pp}, {"dp", p.dp}, {"cp", p.cp}, {"ep", p.ep}};
  j["profile"] = o.inputs.profile.name;
  j["profile_path"] = o.inputs.profile.path;
  j["profile_numbers"] = o.result.used_kinds;  // of the numbers used (the profile may hold more)
  ordered_json sources = ordered_json::array();
  for (const auto& e : o.result.used_sources) {
    ordered_json s = {{"what", e.what},
                      {"source", sim::to_string(e.source.kind)},
                      {"citation", e.source.citation}};
    if (e.source.fit_error >= 0) s["fit_error"] = e.source.fit_error;
    sources.push_back(std::move(s));
  }
  j["profile_sources"] = std::move(sources);
  j["precision"] = sim::to_string(o.inputs.model.training.precision);
  j["peak_flops_per_s"] = o.inputs.peak_flops_per_s;
  j["flops_per_step"] = o.inputs.step.flops_per_step;
  j["model_flops_per_step"] = model_flops(o);
  j[o.inputs.step.throughput_unit == "samples" ? "samples_per_step" : "tokens_per_step"] =
      o.inputs.step.tokens_per_step;
  j["simulated_ranks"] = o.inputs.step.ranks.size();
  j["background_images"] = o.background_images;
  ordered_json designs = ordered_json::array();
  for (std::size_t i = 0; i < o.result.runs.size(); ++i) {
    const sim::DesignRun& run = o.result.runs[i];
    const sim::StepResult& r = run.result;
    ordered_json d;
    d["design"] = r.design;
    d["step_time_s"] = r.step_time_s;
    d["compute_s"] = r.compute_s;
    d["exposed_comm_s"] = r.exposed_comm_s;
    d["overlapped_comm_s"] = r.overlapped_comm_s;
    d["bubble_s"] = r.bubble_s;
    // Only where the model gives the host a cost (training.host_launch_time).
    if (host_modelled(o)) d["host_wait_s"] = r.host_wait_s;
    d["comm_s"] = r.comm_s;
    d["critical_rank"] = r.critical_rank;
    d["mfu"] = mfu(o, r);
    d[throughput_key(o)] = o.inputs.step.tokens_per_step / r.step_time_s;
    d["events"] = r.events;
    d["collectives"] = r.collectives;
    d["background_collectives"] = r.background_collectives;
    d["sim_wall_s"] = r.sim_wall_s;
    if (const sim::StepResult* seq = sequential_result(o))
      d["speedup_vs_sequential"] = seq->step_time_s / r.step_time_s;
    ordered_json by_path = ordered_json::object();
    for (auto path : {sim::CollectivePath::Curve, sim::CollectivePath::Efficiency,
                      sim::CollectivePath::Cluster})
      by_path[sim::to_string(path)] = run.launches_by_path[static_cast<int>(path)];
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
    d["step_time_band_s"] = band_json(run.band);
    if (!run.best_basis.empty()) {
      d["best_basis"] = run.best_basis;
      ordered_json classes = ordered_json::array();
      for (const auto& c : run.best_classes) {
        ordered_json per = ordered_json::object();
        for (const auto& [name, s] : c.pair_s) per[name] = s;
        classes.push_back({{"class", c.name},
                           {"pairs", c.pairs},
                           {"winner", c.winner},
                           {"sequential_pair_s", c.sequential_s},
                           {"winner_pair_s", c.winner_s},
                           {"pair_speedup", c.winner_s > 0 ? c.sequential_s / c.winner_s : 1.0},
                           {"pair_s", std::move(per)}});
      }
      d["pair_classes"] = std::move(classes);
    }
    if (const std::string& file = trace_file(o, i); !file.empty()) d["trace"] = file;
    designs.push_back(std::move(d));
  }
  j["designs"] = std::move(designs);
  nlohmann::json memory = {{"fits", o.memory.fits()},
                           {"capacity_bytes", o.memory.capacity_bytes},
                           {"peak_stage", o.memory.peak_stage()},
                           {"peak_bytes", o.memory.peak_bytes()}};
  nlohmann::json stages = nlohmann::json::array();
  for (const auto& s : o.memory.stages) {
    nlohmann::json terms = nlohmann::json::array();
    for (const auto& t : s.terms)
      terms.push_back({{"name", t.name}, {"bytes", t.bytes}, {"source", t.source}});
    stages.push_back({{"stage", s.stage}, {"total_bytes", s.total_bytes()}, {"terms", terms}});
  }
  memory["stages"] = std::move(stages);
  j["memory_per_gpu"] = std::move(memory);
  ordered_json timing = ordered_json::array();
  for (const auto& u : o.result.collective_classes)
    timing.push_back({{"class", u.label},
                      {"path", sim::to_string(u.path)},
                      {"how", u.how},
                      {"launches", u.launches}});
  j["collective_timing"] = std::move(timing);
  ordered_json caveats = ordered_json::array();
  for (const auto& c : workloads::validation_caveats(o.inputs.model))
    caveats.push_back({{"topic", c.topic}, {"text", c.text}});
  j["caveats"] = std::move(caveats);
  // First design's numbers at the top level too, as docs/simulate.md lists them.
  if (!o.result.runs.empty()) {
    j["mfu"] = mfu(o, o.result.runs.front().result);
    j[throughput_key(o)] = o.inputs.step.tokens_per_step / o.result.runs.front().result.step_time_s;
  }
  std::uint64_t events = 0;
  for (const auto& run : o.result.runs) events += run.result.events;
  j["events"] = events;
  j["wall_s"] = o.wall_s;
  j["peak_rss_bytes"] = o.peak_rss_bytes;
  return j.dump(2) + "\n";
}

std::string ms(double s) { return fmt::format("{:.3f}", s * 1e3); }

std::string band_line(const sim::DesignRun& run) {
  const sim::StepBand& b = run.band;
  std::vector<std::string> terms;
  for (const auto& t : b.terms)
    terms.push_back(fmt::format("{} {:.1f}% of {} ms ({})", t.number_class,
                                100 * t.relative_error, ms(t.sensitivity_s), to_string(t.basis)));
  return fmt::format("{}: step {} ms, band {}-{} ms; most uncertain: {}; {}\n", run.result.design,
                     ms(run.result.step_time_s), ms(b.low_s), ms(b.high_s),
                     b.dominant.empty() ? "-" : b.dominant, fmt::join(terms, ", "));
}

std::string to_table(const SimulateReport& o) {
  const auto& p = o.inputs.model.parallelism;
  std::string t =
      fmt::format("{} on {}: {} GPUs, tp {} pp {} dp {} cp {} ep {}, {}\n", o.inputs.step.workload,
                  o.inputs.cluster.name, o.inputs.step.world_size, p.tp, p.pp, p.dp, p.cp, p.ep,
                  sim::to_string(o.inputs.model.training.precision));
  t += fmt::format("profile {} ({}); numbers used: {}\n", o.inputs.profile.name,
                   o.inputs.profile.path, o.result.used_kinds);
  for (auto kind : {sim::SourceKind::Measured, sim::SourceKind::Datasheet, sim::SourceKind::Paper,
                    sim::SourceKind::Assumed}) {
    std::string names;
    for (const auto& e : o.result.used_sources)
      if (e.source.kind == kind) {
        const std::string& w = e.what;
        names += (names.empty() ? "" : ", ") + w.substr(w.find('.') + 1);
      }
    if (!names.empty()) t += fmt::format("  {}: {}\n", sim::to_string(kind), names);
  }
  t += "  network: the cluster file's links (sources cited there)\n";
  t += "collectives timed by (launches over every design, background images included):\n";
  for (const auto& u : o.result.collective_classes)
    t += fmt::format("  {} ({}): {}\n", u.label, u.launches, u.how);
  int stands_for = 0;
  for (const auto& r : o.inputs.step.ranks) stands_for += r.multiplicity;
  t += fmt::format("simulated {} ranks standing for {}; folded ranks' traffic as background: {}\n",
                   o.inputs.step.ranks.size(), stands_for, o.background_images ? "yes" : "no");
  t += fmt::format("{:<11} {:>11} {:>8} {:>11} {:>11} {:>11} {:>11} {:>7} {:>13} {:>9} {:>8}\n",
                   "design", "step ms", "speedup", "compute ms", "exposed ms", "bubble ms",
                   "hidden ms", "MFU", o.inputs.step.throughput_unit + "/s", "events", "wall s");
  for (const auto& run : o.result.runs) {
    const sim::StepResult& r = run.result;
    t += fmt::format(
        "{:<11} {:>11} {:>8} {:>11} {:>11} {:>11} {:>11} {:>6.1f}% {:>13.4g} {:>9} {:>8.3f}\n",
        r.design, ms(r.step_time_s),
        sequential_result(o)
            ? fmt::format("{:.3f}x", sequential_result(o)->step_time_s / r.step_time_s)
            : std::string("-"),
        ms(r.compute_s), ms(r.exposed_comm_s), ms(r.bubble_s), ms(r.overlapped_comm_s),
        100 * mfu(o, r), o.inputs.step.tokens_per_step / r.step_time_s, r.events, r.sim_wall_s);
  }
  t += fmt::format(
      "breakdown of the slowest rank (rank {}): step = compute + exposed communication + "
      "bubble{}; hidden = communication under compute\n",
      o.result.runs.empty() ? 0 : o.result.runs.front().result.critical_rank,
      host_modelled(o) ? " + host wait" : "");
  if (host_modelled(o))
    for (const auto& run : o.result.runs)
      t += fmt::format(
          "  {}: host wait {} ms (the GPU idle until the host issued its next op: "
          "{} a launch, {} a sync; docs/simulate.md, \"The host\")\n",
          run.result.design, ms(run.result.host_wait_s),
          config::format_duration(o.inputs.model.training.host_launch_time_s),
          config::format_duration(o.inputs.model.training.host_sync_time_s));
  t += fmt::format(
      "model FLOPs per step {:.4g} (with recompute {:.4g}; MFU uses the first), peak {} {:.1f} "
      "TFLOP/s per GPU ({})\n",
      model_flops(o), o.inputs.step.flops_per_step,
      sim::to_string(o.inputs.model.training.precision), o.inputs.peak_flops_per_s / 1e12,
      sim::to_string(o.inputs.profile.compute.peak_flops_per_s.at(o.inputs.model.training.precision)
                         .source.kind));
  t += fmt::format("memory per GPU (docs/memory.md): {}{}\n", o.memory.explain(),
                   o.memory.fits() ? "" : " (does not fit: simulated with --ignore-memory)");
  for (const auto& run : o.result.runs) {
    if (!run.paired) continue;
    std::vector<std::string> fallback;
    for (const auto& [why, n] : run.pairs.sequential)
      fallback.push_back(fmt::format("{} ({})", n, why));
    t += fmt::format("{}: {} pairs overlapped{}{}; parameters: {}\n", run.result.design,
                     run.pairs.overlapped,
                     fallback.empty() ? "" : ", run as sequential: ", fmt::join(fallback, ", "),
                     parameter_kinds(run.parameters));
  }
  for (const auto& run : o.result.runs) {
    if (run.best_basis.empty()) continue;
    t += fmt::format(
        "{}: per class of pair the fastest design, each pair timed alone on its communicator "
        "(validate's pair predictor); the step ran {}:\n",
        run.result.design, run.best_basis);
    t += fmt::format("  {:<44} {:>6} {:<11} {:>11} {:>11} {:>8}  {}\n", "pair class", "pairs",
                     "winner", "seq us", "winner us", "gain", "others (us)");
    for (const auto& c : run.best_classes) {
      std::vector<std::string> others;
      for (const auto& [name, s_] : c.pair_s)
        if (name != c.winner && name != "sequential")
          others.push_back(fmt::format("{} {:.1f}", name, s_ * 1e6));
      t += fmt::format("  {:<44} {:>6} {:<11} {:>11.1f} {:>11.1f} {:>7.3f}x  {}\n", c.name,
                       c.pairs, c.winner, c.sequential_s * 1e6, c.winner_s * 1e6,
                       c.winner_s > 0 ? c.sequential_s / c.winner_s : 1.0,
                       others.empty() ? "-" : fmt::format("{}", fmt::join(others, ", ")));
    }
  }
  t += "uncertainty (class: held-out error x the step time it moves; docs/simulate.md):\n";
  for (const auto& run : o.result.runs) t += "  " + band_line(run);
  for (const auto& c : workloads::validation_caveats(o.inputs.model))
    t += fmt::format("caveat ({}): {}\n", c.topic, c.text);
  for (const auto& run : o.result.runs)
    if (run.gemm_clock_speedup > 0)
      t += fmt::format(
          "{}: GEMMs at {:.4f}x the back-to-back rate (--gemm-clock duty-cycle: {:.1f}% of the "
          "back-to-back step without compute x compute.idle_clock_boost {:.4g})\n",
          run.result.design, run.gemm_clock_speedup, 100 * run.idle_fraction,
          o.inputs.profile.compute.idle_clock_boost->value);
  for (std::size_t i = 0; i < o.result.runs.size(); ++i)
    if (const std::string& file = trace_file(o, i); !file.empty())
      t += fmt::format("trace: {} (open in https://ui.perfetto.dev)\n", file);
  t += fmt::format("wall {:.2f} s in all, peak memory {:.0f} MiB\n", o.wall_s,
                   o.peak_rss_bytes / 1048576.0);
  return t;
}

}  // namespace

std::string simulate_table(const SimulateReport& report) { return to_table(report); }
std::string simulate_json(const SimulateReport& report) { return to_json(report); }

}  // namespace overlapsim::app
