#pragma once
// One scenario: a step graph on a topology, timed by a profile, under each requested overlap
// design. The assembly every caller shares (`overlapsim simulate`, `validate`'s pairs and the
// planner): the event engine and flow network, the collective cost model that times every
// collective, the design from the registry bound to the step's communicators, the step
// executor; and, for `--gemm-clock duty-cycle`, the rerun at the GEMM clock the step's idle
// share allows. Loading model and cluster files is the caller's (workloads/scenario_inputs).
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "sim/collectives/collective_cost_model.hpp"
#include "sim/exec/comm_images.hpp"
#include "sim/exec/step_result.hpp"
#include "sim/graph/op_graph.hpp"
#include "sim/overlap/paired_design.hpp"
#include "sim/overlap/registry.hpp"
#include "sim/profile/profile.hpp"
#include "sim/scenario/best_choice.hpp"
#include "sim/scenario/step_band.hpp"
#include "sim/topology/topology.hpp"

namespace overlapsim::sim {

// Which GEMM clock the compute model assumes.
enum class GemmClock {
  Steady,     // the profile's back-to-back rates
  DutyCycle,  // rerun at 1 + compute.idle_clock_boost x the step's share without compute
};

struct ScenarioOptions {
  // Registry names or kBestDesign, run in this order. `best` needs every design's forced
  // run: those not listed run first, unreported.
  std::vector<std::string> designs = {"sequential"};
  DesignOptions design_options;
  CollectiveTimingOptions timing;  // how the cost model times collectives
  // Measured alone times that time every collective instead (CollectiveCostModel).
  MeasuredTimes measured_times;
  PairPlanning planning;  // how the designs plan pairs (PairedDesign::bind)
  BackgroundImages images = BackgroundImages::InterHost;
  GemmClock gemm_clock = GemmClock::Steady;
  // A design that overlaps no pair of the step gives sequential's result, event for event:
  // copy it instead of rerunning (only where sequential ran first and nothing is traced).
  bool reuse_sequential = true;
  // Record a Chrome/Perfetto trace of each design's (final) run, of these global ranks
  // (empty: the first 16 simulated), titled "<trace_title> (<design>)".
  bool trace = false;
  std::vector<int> trace_ranks;
  std::string trace_title;
  // The background images of each collective or send start together
  // (CollectiveCostModel::launch_background): same-shaped image sends become one weighted
  // flow, exact when they are symmetric. The planner's default; simulate runs each image
  // as its own flow.
  bool aggregate_images = false;
  bool zero_wall_times = false;  // sim_wall_s reported as 0 (byte-identical outputs)
  // The precision whose peak rate the caller's MFU divides by, listed among the numbers used.
  Precision precision = Precision::BF16;
  // Compute beside the step's own communication (dgrad beside wgrad's collective, DLRM's
  // forward all-to-all beside the bottom MLP, the gradient reduction beside backward) pays
  // the interference the designs are charged for the same situation (a vendor op beside
  // NCCL on its default CTAs): concurrent_comm_slowdown(profile), and GEMMs the profile's
  // compute.concurrent_comm_gemm_slowdown at their time per kernel where it has one; and
  // its NCCL kernels start at the running GEMM's kernel boundaries
  // (ExecOptions::comm_waits_for_gemm_kernel), a default-priority one's at a running
  // memory-bound op's (comm_waits_for_memory_kernel). False: none.
  bool charge_concurrency = true;
  // Called on each design after it is built and bound, before it runs (replaying a measured
  // configuration: chunks, carve-out, partition).
  std::function<void(OverlapDesign&)> configure_design;
  // Period marks (ExecOptions::period_chunks): where both are >= 0 and every design run
  // passed them, ScenarioResult::before_period holds each run less its last period.
  int period_chunks[2] = {-1, -1};
};

struct Scenario {
  const StepGraph& step;
  const Topology& topology;
  const Profile& profile;
  ScenarioOptions options;
  // The profile the designs read their parameters from, where it differs from `profile`
  // (a pair replayed with the op's measured time: only the compute rates are rescaled).
  const Profile* design_profile = nullptr;
};

struct DesignRun {
  StepResult result;
  bool paired = false;  // an overlapping design (not sequential)
  PairStats pairs;
  std::vector<ParameterUse> parameters;
  long launches_by_path[3] = {0, 0, 0};  // CollectivePath order
  // GemmClock::DutyCycle: the share of the step without compute on the slowest rank in the
  // back-to-back run, and the GEMM rate factor the rerun used; < 0: not applied.
  double idle_fraction = -1, gemm_clock_speedup = -1;
  std::string trace_json;  // options.trace: the run's Chrome/Perfetto trace
  StepBand band;           // the step time's uncertainty band (step_band.hpp)
  // `best` only: the tuner's choice per class of pair, and what the step ran: "per pair
  // class", or "<design> on every pair" where a forced design's whole step was faster than
  // the per-class mix (the pairs' choices interact through the network and the streams).
  std::vector<PairClassChoice> best_classes;
  std::string best_basis;
  std::string best_every_pair;  // the design that basis names ("" for the per-class mix)
};

struct ScenarioResult {
  std::vector<DesignRun> runs;  // in options.designs order
  // Every class of collective the runs launched and how the cost model timed it.
  std::vector<CollectiveClassUse> collective_classes;
  // The profile numbers the runs used (the compute model's entries and the peak rate of
  // options.precision) with their sources, and their kinds ("measured+datasheet").
  std::vector<SourceEntry> used_sources;
  std::string used_kinds;
  // ScenarioOptions::period_chunks: each run less its last period (before_last_period),
  // with its band; empty without marks.
  std::vector<DesignRun> before_period;

  const DesignRun* run_of(const std::string& design) const;
};

// decomposed's compute slowdown beside NCCL: sms / (sms - comm_ctas) x interference_slowdown
// of the profile's designs.decomposed; 1 where the profile lacks them.
double concurrent_comm_slowdown(const Profile& profile);

// Throws std::invalid_argument for an unknown design or a parameter the profile lacks, and
// config-style errors from the designs; GemmClock::DutyCycle needs
// profile.compute.idle_clock_boost (the caller checks it: std::invalid_argument here).
ScenarioResult run_scenario(const Scenario& scenario);

}  // namespace overlapsim::sim
