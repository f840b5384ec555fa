#pragma once
// The capacity plan's data model: every configuration the search looked at (feasible,
// rejected for memory, or pruned before simulation, each with why), the simulator's
// results per design, their costs, and the summaries (fastest, cheapest meeting the
// target, cost-time Pareto front). Every report writer (Markdown, CSV, JSON, HTML) reads
// this one struct and nothing else, so they say the same thing.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "workloads/model.hpp"
#include "workloads/validation_caveats.hpp"

namespace overlapsim::planning {

// A number with where it comes from: "cited" (a source is named), "assumed", "measured".
struct SourcedValue {
  double value = 0;
  std::string kind;  // cited | assumed | measured
  std::string source;
};

struct PlanCluster {
  std::string name;
  std::string file;
  std::string gpu_name;
  int gpus_per_node = 1;
  std::string profile;          // the profile's name
  double peak_flops_per_s = 0;  // the profile's peak at the model's precision
  double memory_bytes = 0;      // the GPU's capacity; 0: unknown
  std::optional<SourcedValue> price_per_gpu_hour_usd;
  std::optional<SourcedValue> power_W;  // per GPU, under load
};

// One point of the search space on one cluster at one node count.
struct PlanConfig {
  int cluster = 0;  // index into PlanResult::clusters
  int nodes = 0;
  int gpus = 0;
  int tp = 1, pp = 1, virtual_stages = 1, cp = 1, ep = 1, dp = 1;
  int micro_batch = 1;
  bool sequence_parallel = false;
  workloads::Recompute recompute = workloads::Recompute::None;

  // "c0 n16 tp8 pp8 v1 cp1 ep1 dp2 mb1 sp0 full": unique within a plan, stable across runs
  std::string key() const;
};

enum class PointStatus { Feasible, Rejected, Pruned };
const char* to_string(PointStatus status);  // "feasible", "rejected", "pruned"

struct PlanMemoryTerm {
  std::string name;
  double bytes = 0;
  std::string source;
};

// Costs of one design's step; absent where the cluster has no price (or no power).
struct PlanCosts {
  double tokens_per_day = 0;
  double gpu_hours_per_step = 0;
  std::optional<double> usd_per_step;
  std::optional<double> usd_per_million_tokens;
  std::optional<double> time_to_train_s;  // --target-tokens only
  std::optional<double> usd_to_train;     // --target-tokens only, with a price
  std::optional<double> energy_kWh_per_step;
  std::optional<double> energy_kWh_to_train;  // --target-tokens only
};

// The simulator's result for one design of a feasible point.
struct PlanRun {
  std::string design;
  double step_time_s = 0;
  double band_low_s = 0, band_high_s = 0;  // the step's uncertainty band (sim/scenario)
  double compute_s = 0, exposed_comm_s = 0, bubble_s = 0;
  double mfu = 0;
  bool meets_target = false;
  PlanCosts costs;
};

struct PlanPoint {
  PlanConfig config;
  PointStatus status = PointStatus::Feasible;
  // Asked for by --include: simulated whatever the pre-screen and the cap say.
  bool requested = false;
  std::string reason;  // rejected: the memory explanation; pruned: why it was not simulated
  // Memory of the most loaded stage.
  int peak_stage = 0;
  double peak_memory_bytes = 0;
  std::vector<PlanMemoryTerm> memory_terms;
  // Analytic pre-screen (planning/prescreen.hpp).
  double lower_bound_s = 0;
  double estimate_s = 0;
  // Simulated: one per design, in PlanResult::designs order.
  double tokens_per_step = 0;
  std::vector<PlanRun> runs;
};

enum class TargetKind { None, StepTime, TokensPerDay, Tokens };

struct PlanTarget {
  TargetKind kind = TargetKind::None;
  double value = 0;              // seconds, tokens per day, or tokens
  double deadline_s = 0;         // Tokens with a deadline (--target-days); 0: none
  std::string describe() const;  // "step time <= 10 s", ...
};

// A (point, design) pair.
struct PlanChoice {
  std::size_t point = 0;
  std::size_t run = 0;
};

struct FastestEntry {
  int cluster = 0;
  std::string design;
  std::optional<PlanChoice> choice;  // none: nothing was simulated on this cluster
};

struct ProvenanceEntry {
  std::string what;
  std::string kind;  // measured | fitted | cited | datasheet | paper | assumed
  std::string source;
};

struct PlanCounts {
  std::int64_t enumerated = 0;  // configurations that passed the model's rules
  std::int64_t invalid = 0;     // combinations the model's rules refused (not listed)
  std::int64_t rejected = 0;
  std::int64_t pruned = 0;
  std::int64_t simulated = 0;
  std::int64_t runs = 0;  // simulated (configuration, design) pairs
};

struct PlanResult {
  std::string model_name;
  std::string model_file;
  std::int64_t global_batch = 0;
  int seq_len = 0;
  std::vector<PlanCluster> clusters;
  std::vector<int> nodes;
  std::vector<std::string> designs;
  PlanTarget target;
  std::string cost_axis;  // "usd_per_step" or "gpu_hours_per_step" (some cluster has no price)
  int simulate_top = 0;   // the pre-screen's simulation cap per cluster and node count
  bool exact_simulation = false;       // PlanOptions::exact_simulation
  bool sample_by_runs = false;         // PlanOptions::sample_by_runs
  std::vector<PlanPoint> points;       // in search order
  std::vector<FastestEntry> fastest;   // per cluster, then design
  std::optional<PlanChoice> cheapest;  // cheapest meeting the target
  std::vector<PlanChoice> pareto;      // by step time, ascending
  std::vector<ProvenanceEntry> provenance;
  std::vector<workloads::ValidationCaveat> caveats;  // what the validation says is off
  PlanCounts counts;

  const PlanRun& run(const PlanChoice& c) const { return points[c.point].runs[c.run]; }
  const PlanPoint& point(const PlanChoice& c) const { return points[c.point]; }
};

}  // namespace overlapsim::planning
