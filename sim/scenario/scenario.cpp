#include "sim/scenario/scenario.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <memory>
#include <stdexcept>

#include "sim/engine/simulator.hpp"
#include "sim/exec/step_executor.hpp"
#include "sim/exec/step_layout.hpp"
#include "sim/network/flow_network.hpp"
#include "sim/overlap/best_design.hpp"
#include "sim/profile/compute_model.hpp"
#include "sim/scenario/extrapolate.hpp"
#include "sim/trace/chrome_trace.hpp"

namespace overlapsim::sim {
namespace {

constexpr CollectivePath kPaths[] = {CollectivePath::Curve, CollectivePath::Efficiency,
                                     CollectivePath::Cluster};

void merge_classes(std::vector<CollectiveClassUse>& into,
                   const std::vector<CollectiveClassUse>& from) {
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

}  // namespace

double concurrent_comm_slowdown(const Profile& profile) {
  if (profile.compute.concurrent_comm_slowdown)
    return profile.compute.concurrent_comm_slowdown->value;
  const Sourced* ctas = profile.designs.find("decomposed", "comm_ctas");
  const Sourced* slow = profile.designs.find("decomposed", "interference_slowdown");
  const int sms = profile.device.sms;
  if (!ctas || !slow || sms <= 0 || ctas->value < 0 || ctas->value >= sms || slow->value < 1)
    return 1;
  return sms / (sms - ctas->value) * slow->value;
}

namespace {

// The executor's options: the interference the step's own concurrency pays, and for a
// trace the ranks it records and the link classes it samples.
ExecOptions exec_options(const Scenario& sc, FlowNetwork& net) {
  const ScenarioOptions& o = sc.options;
  ExecOptions exec;
  exec.images = o.images;
  exec.period_chunks[0] = o.period_chunks[0];
  exec.period_chunks[1] = o.period_chunks[1];
  if (o.charge_concurrency) {
    const Profile& charged = sc.design_profile ? *sc.design_profile : sc.profile;
    exec.concurrent_comm_slowdown = concurrent_comm_slowdown(charged);
    exec.gemm_comm_slowdown = charged.compute.concurrent_comm_gemm_slowdown;
    exec.memory_comm_slowdown = charged.compute.concurrent_comm_memory_slowdown;
    exec.attention_comm_slowdown = charged.compute.concurrent_comm_attention_slowdown;
    exec.comm_waits_for_gemm_kernel = true;
    exec.comm_waits_for_memory_kernel = true;
    exec.collective_memory_slowdown = charged.compute.collective_beside_memory_slowdown;
  }
  if (!o.trace) return exec;
  exec.record_timeline = true;
  exec.timeline_ranks = o.trace_ranks;
  if (exec.timeline_ranks.empty())
    for (std::size_t i = 0; i < sc.step.ranks.size() && i < 16; ++i)
      exec.timeline_ranks.push_back(sc.step.ranks[i].rank);
  exec.link_classes = {"nvlink", "pcie", "network"};
  // Every directed link of a class together: the denominator of its utilisation.
  exec.link_capacity_Bps.assign(3, 0.0);
  for (LinkId id = 0; id < sc.topology.num_links(); ++id) {
    const TopoLink& link = sc.topology.link(id);
    const int c = link.cls == LinkClass::NvLink ? 0 : link.cls == LinkClass::Pcie ? 1 : 2;
    exec.link_capacity_Bps[c] += link.bandwidth_Bps;
  }
  exec.link_bytes = [&net] {
    return std::vector<double>{net.bytes_on_class(LinkClass::NvLink),
                               net.bytes_on_class(LinkClass::Pcie),
                               net.bytes_on_class(LinkClass::Network)};
  };
  return exec;
}

class ScenarioRunner {
 public:
  explicit ScenarioRunner(const Scenario& sc) : sc_(sc), o_(sc.options) {}

  ScenarioResult run() {
    const ComputeModel compute(sc_.profile.compute);
    op_times_ = std::make_shared<OpTimeMemo>();
    op_times_->model = &compute;
    for (const std::string& name : o_.designs)
      out_.runs.push_back(name == kBestDesign ? run_best(compute) : run_design(name, compute));
    collect_used_sources(compute);
    for (DesignRun& run : out_.runs) {
      const std::string& name = run.result.design;
      BandInputs in{sc_.design_profile ? *sc_.design_profile : sc_.profile,
                    name,
                    run.paired && run.pairs.overlapped > 0,
                    validate_kinds(run),
                    o_.precision,
                    out_.collective_classes,
                    out_.used_sources};
      run.band = step_band(run.result, in);
      if (period_spread(run.result) <= kSteadyPeriodSpread) {
        DesignRun shorter;
        shorter.result = before_last_period(run.result);
        shorter.paired = run.paired;
        shorter.pairs = run.pairs;
        shorter.band = step_band(shorter.result, in);
        out_.before_period.push_back(std::move(shorter));
      }
    }
    if (out_.before_period.size() != out_.runs.size()) out_.before_period.clear();
    return std::move(out_);
  }

 private:
  DesignRun run_design(const std::string& name, const ComputeModel& compute) {
    const bool clocked = o_.gemm_clock == GemmClock::DutyCycle;
    if (clocked && !sc_.profile.compute.idle_clock_boost)
      throw std::invalid_argument(fmt::format(
          "{}: compute.idle_clock_boost: missing (expected a profile fitted from pair loops "
          "for the duty-cycle GEMM clock)",
          sc_.profile.path));
    DesignRun run;
    if (!simulate(name, sc_.profile, compute, !clocked, run) || !clocked ||
        run.result.step_time_s <= 0)
      return run;
    // The GEMMs' clock has headroom in the share of the step without compute
    // (compute.idle_clock_boost, fitted on pair loops): rerun once at the rate that share
    // gives, the share taken from the back-to-back run.
    DesignRun rerun;
    rerun.idle_fraction = std::clamp(1 - run.result.compute_s / run.result.step_time_s, 0.0, 1.0);
    rerun.gemm_clock_speedup = sc_.profile.compute.clock_speedup(rerun.idle_fraction);
    Profile boosted = sc_.profile;
    boosted.compute = with_gemm_rates_scaled(sc_.profile.compute, rerun.gemm_clock_speedup);
    const ComputeModel boosted_compute(boosted.compute);
    simulate(name, boosted, boosted_compute, true, rerun);
    if (!o_.zero_wall_times) rerun.result.sim_wall_s += run.result.sim_wall_s;
    return rerun;
  }

  // `best`: the winner per class of pair, each pair timed alone by validate's predictor
  // (best_choice.hpp), then the step with each class under its winner. A tuner keeps a
  // whole-step configuration only if it is faster: where sequential's step, or a forced
  // design's that ran before, beat the mix, best is that (the pairs' choices interact in
  // the step: a collective sequential already hid behind other compute gains nothing from
  // a design, which still pays its costs).
  DesignRun run_best(const ComputeModel& compute) {
    BestChoiceInputs in{
        sc_.step,  sc_.topology,      sc_.design_profile ? *sc_.design_profile : sc_.profile,
        o_.timing, o_.design_options, o_.planning.scaled_parts_min_ranks};
    std::vector<PairClassChoice> classes = choose_per_class(in);
    best_winners_ = winners(classes);
    std::vector<const DesignRun*> forced;
    for (const DesignRun& done : out_.runs)
      if (done.result.design != kBestDesign) forced.push_back(&done);
    if (std::none_of(forced.begin(), forced.end(),
                     [](const DesignRun* r) { return r->result.design == "sequential"; })) {
      tuning_.push_back(std::make_unique<DesignRun>(run_design("sequential", compute)));
      forced.push_back(tuning_.back().get());
    }
    // Every class won by one design whose forced run is at hand: best routes every pair
    // as that run did, event for event; take it instead of rerunning.
    const DesignRun* same = nullptr;
    if (!o_.trace) {
      std::string only = classes.empty() ? "sequential" : classes.front().winner;
      for (const PairClassChoice& c : classes)
        if (c.winner != only) only.clear();
      for (const DesignRun* r : forced)
        if (!only.empty() && r->result.design == only) same = r;
    }
    DesignRun run;
    if (same) {
      run = *same;
      run.result.design = kBestDesign;
      run.result.sim_wall_s = 0;
    } else {
      run = run_design(kBestDesign, compute);
    }
    run.best_classes = std::move(classes);
    run.best_basis = "per pair class";
    const DesignRun* fastest = nullptr;
    for (const DesignRun* r : forced)
      if (r->result.step_time_s < (fastest ? fastest->result.step_time_s : run.result.step_time_s))
        fastest = r;
    if (fastest) {
      run.best_every_pair = fastest->result.design;
      run.best_basis = run.best_every_pair + " on every pair";
      run.result = fastest->result;
      run.result.design = kBestDesign;
      run.pairs = fastest->pairs;
      run.parameters = fastest->parameters;
      run.paired = fastest->paired;
      std::copy(std::begin(fastest->launches_by_path), std::end(fastest->launches_by_path),
                std::begin(run.launches_by_path));
      run.trace_json = fastest->trace_json;
    }
    return run;
  }

  // A design from the registry (or `best` from the tuner's winners), bound to `costs`.
  // `profile`: the run's (the scenario's, or its GEMM rates scaled for the clock).
  std::unique_ptr<OverlapDesign> make_bound(const std::string& name, const Profile& run_profile,
                                            const CollectiveCostModel& costs) {
    const Profile& profile = sc_.design_profile ? *sc_.design_profile : run_profile;
    if (name == kBestDesign) {
      std::vector<std::unique_ptr<OverlapDesign>> candidates;
      for (const std::string& n : design_names())
        if (n != "sequential") candidates.push_back(make_bound(n, run_profile, costs));
      return std::make_unique<BestDesign>(std::move(candidates), sc_.step, best_winners_);
    }
    auto design = make_design(name, profile, o_.design_options);
    if (PairedDesign* paired = as_paired(*design)) paired->bind(sc_.step, costs, o_.planning);
    if (o_.configure_design) o_.configure_design(*design);
    return design;
  }

  // One design on one profile (the scenario's, or its GEMM rates scaled for the clock):
  // fills run's result, launches and pair stats; the final run of a design also counts its
  // collective classes and records its trace. False when the design overlaps no pair and
  // the result is sequential's.
  bool simulate(const std::string& name, const Profile& profile, const ComputeModel& compute,
                bool final_run, DesignRun& run) {
    Simulator simulator;
    FlowNetwork net(simulator, sc_.topology);
    ExecOptions exec = exec_options(sc_, net);
    if (!layout_) layout_ = std::make_shared<const StepLayout>(sc_.step, net, exec.images);
    StepExecutor executor(sc_.step, compute, net, std::move(exec), layout_);
    CollectiveCostModel costs(profile.collectives, net, o_.timing);
    if (!o_.measured_times.empty()) costs.set_measured_times(o_.measured_times);
    executor.set_collective_launcher(costs.launcher());
    if (op_times_ && op_times_->model == &compute) executor.set_op_time_memo(op_times_);
    if (o_.aggregate_images)
      executor.set_background_launcher(
          [&costs](std::span<const CollectiveRequest> images) { costs.launch_background(images); });
    auto design = make_bound(name, profile, costs);
    PairedDesign* paired = as_paired(*design);
    if (paired && reuse_sequential(*paired, compute, run)) return false;
    run.result = executor.run(*design);
    for (auto path : kPaths) run.launches_by_path[static_cast<int>(path)] = costs.launches(path);
    if (final_run) merge_classes(out_.collective_classes, costs.uses());
    if (paired) {
      run.paired = true;
      run.pairs = paired->stats();
      run.parameters = paired->parameters();
    } else if (const auto* best = dynamic_cast<const BestDesign*>(design.get())) {
      run.paired = true;
      run.pairs = best->stats();
      run.parameters = best->parameters();
    }
    if (o_.zero_wall_times) run.result.sim_wall_s = 0;
    if (final_run && o_.trace)
      run.trace_json = chrome_trace_json(executor.timeline(), run.result,
                                         fmt::format("{} ({})", o_.trace_title, name));
    return true;
  }

  // A design that overlaps no pair of this step runs every pair as under sequential, so the
  // step is sequential's, event for event: take sequential's run when it came first.
  bool reuse_sequential(const PairedDesign& paired, const ComputeModel& compute, DesignRun& run) {
    if (!o_.reuse_sequential || o_.trace || out_.runs.empty() ||
        out_.runs.front().result.design != "sequential")
      return false;
    // Most designs overlap a pair early in the step: stop there rather than plan every
    // pair. A scan that found none has seen every pair: its counts are complete.
    const PairStats scan = paired.scan(sc_.step, compute, /*stop_at_overlap=*/true);
    if (scan.overlapped != 0) return false;
    const DesignRun& seq = out_.runs.front();
    run.result = seq.result;
    run.result.design = paired.name();
    run.result.sim_wall_s = 0;
    run.paired = true;
    run.pairs = scan;
    run.parameters = paired.parameters();
    run.idle_fraction = seq.idle_fraction;
    run.gemm_clock_speedup = seq.gemm_clock_speedup;
    std::copy(std::begin(seq.launches_by_path), std::end(seq.launches_by_path),
              std::begin(run.launches_by_path));
    return true;
  }

  // The kinds of `overlapsim validate` rows that hold the pairs of the designs `run` ran:
  // its own, or for `best` the design it ran on every pair, else each class winner's.
  std::vector<std::string> validate_kinds(const DesignRun& run) const {
    const std::string& name = run.result.design;
    if (name != kBestDesign) return {validate_kind(name)};
    if (!run.best_every_pair.empty()) return {validate_kind(run.best_every_pair)};
    std::vector<std::string> kinds;
    for (const PairClassChoice& c : run.best_classes)
      if (c.winner != "sequential") {
        const std::string kind = validate_kind(c.winner);
        if (std::find(kinds.begin(), kinds.end(), kind) == kinds.end()) kinds.push_back(kind);
      }
    return kinds;
  }

  // The kind of `overlapsim validate` rows that hold this design's pairs ("" for none).
  std::string validate_kind(const std::string& design) const {
    if (design == "tilewise")
      return o_.design_options.tilewise_transport == TilewiseDesign::Transport::CopyEngine
                 ? "tilewise_ce"
                 : "tilewise";
    if (design == "decomposed" || design == "shaped") return design;
    return "";
  }

  void collect_used_sources(const ComputeModel& compute) {
    std::vector<std::string> used = compute.used_entries();
    const std::string peak_key =
        fmt::format("compute.peak_flops_per_s.{}", to_string(o_.precision));
    if (std::find(used.begin(), used.end(), peak_key) == used.end())
      used.insert(used.begin(), peak_key);
    // The executor's charge for compute beside communication (exec_options).
    const Profile& charged = sc_.design_profile ? *sc_.design_profile : sc_.profile;
    if (o_.charge_concurrency && charged.compute.concurrent_comm_slowdown)
      used.push_back("compute.concurrent_comm_slowdown");
    for (const KernelTimeCurveKey& k : kKernelTimeCurves)
      if (o_.charge_concurrency && !(charged.compute.*k.curve).empty())
        used.push_back(std::string("compute.") + k.key);
    bool seen[4] = {false, false, false, false};
    for (const auto& entry : sc_.profile.sources())
      if (std::find(used.begin(), used.end(), entry.what) != used.end()) {
        out_.used_sources.push_back(entry);
        seen[static_cast<int>(entry.source.kind)] = true;
      }
    for (auto kind :
         {SourceKind::Measured, SourceKind::Datasheet, SourceKind::Paper, SourceKind::Assumed})
      if (seen[static_cast<int>(kind)])
        out_.used_kinds += (out_.used_kinds.empty() ? "" : "+") + std::string(to_string(kind));
  }

  const Scenario& sc_;
  const ScenarioOptions& o_;
  ScenarioResult out_;
  std::vector<std::unique_ptr<DesignRun>> tuning_;   // forced runs `best` needed, unreported
  std::map<std::string, std::string> best_winners_;  // pair class -> design
  std::shared_ptr<const StepLayout> layout_;         // the step's, shared by every design run
  // Op times under run()'s model, shared by the design runs on it (not the clock's reruns).
  std::shared_ptr<OpTimeMemo> op_times_;
};

}  // namespace

const DesignRun* ScenarioResult::run_of(const std::string& design) const {
  for (const auto& run : runs)
    if (run.result.design == design) return &run;
  return nullptr;
}

ScenarioResult run_scenario(const Scenario& scenario) { return ScenarioRunner(scenario).run(); }

}  // namespace overlapsim::sim
