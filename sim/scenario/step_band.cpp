#include "sim/scenario/step_band.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <utility>

namespace overlapsim::sim {
namespace {

// A class nothing has validated: wide enough that the band says so, and the class is
// likely to be named as the one to measure.
constexpr double kAssumedError = 0.20;

struct ClassError {
  double relative_error = kAssumedError;
  ErrorBasis basis = ErrorBasis::Assumed;
  std::string source = "no validation: assumed 20%";
};

std::optional<ClassError> held_out(const Profile& p, const std::string& kind) {
  const auto e = p.validation.find(kind);
  if (!e) return std::nullopt;
  return ClassError{e->median_abs_err, ErrorBasis::HeldOut,
                    fmt::format("held-out median |error|: {}", p.validation.citation(kind))};
}

// How far the same suite's timings moved between two runs on one GPU: the median of the
// off-grid GEMM suite's two runs on an H100 (docs/validation.md, "GEMMs off the calibration
// grid"). An in-sample fit error below it does not tell a model from the noise it was fitted
// to: a curve through as many points as it has (the fit's three GEMV sizes for the memory
// curve, 0.004 %) says nothing of the sizes between them.
constexpr double kRunToRunSpread = 0.027;

// The largest in-sample fit error among the compute numbers the step used that `is_part`
// selects ("compute.efficiency.memory", ...), or nullopt where none has one that resolves
// anything (at least the run-to-run spread).
template <typename Pred>
std::optional<ClassError> largest_fit_error(const BandInputs& in, Pred is_part) {
  std::optional<ClassError> worst;
  for (const auto& s : in.used_sources)
    if (is_part(s.what) && s.source.fit_error >= kRunToRunSpread &&
        (!worst || s.source.fit_error > worst->relative_error))
      worst = ClassError{s.source.fit_error, ErrorBasis::Fit,
                         fmt::format("in-sample fit error of {}", s.what)};
  return worst;
}

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

bool is_gemm_number(const std::string& what) {
  return starts_with(what, "compute.gemm_tables") || starts_with(what, "compute.efficiency.gemm");
}

bool is_attention_number(const std::string& what) {
  return starts_with(what, "compute.attention_table") ||
         starts_with(what, "compute.efficiency.attention");
}

bool is_memory_number(const std::string& what) {
  return what == "compute.efficiency.memory" || what == "compute.efficiency.embedding" ||
         what == "compute.scatter_add_bandwidth_Bps" || what == "compute.index_add_bandwidth_Bps";
}

ClassError gemm_error(const BandInputs& in) {
  // Held-out rows of the step's GEMM precision; a section without per-type rows (written by
  // hand) stands for every precision.
  const std::string precision = to_string(in.precision);
  if (auto e = held_out(in.profile, "compute_" + precision)) return *e;
  bool typed = false;
  for (const auto& [kind, error] : in.profile.validation.by_kind)
    typed = typed || (starts_with(kind, "compute_") && kind != "compute_own");
  if (!typed)
    if (auto e = held_out(in.profile, "compute")) return *e;
  // No held-out rows: the largest in-sample fit error of the GEMM numbers the step used.
  return largest_fit_error(in, is_gemm_number).value_or(ClassError{});
}

ClassError attention_error(const BandInputs& in) {
  return largest_fit_error(in, is_attention_number).value_or(ClassError{});
}

ClassError memory_bound_error(const BandInputs& in) {
  // Held-out GEMVs and embedding bags (validate's `memory_bound` rows), else the curves' fit.
  if (auto e = held_out(in.profile, "memory_bound")) return *e;
  return largest_fit_error(in, is_memory_number).value_or(ClassError{});
}

ClassError intra_host_error(const BandInputs& in) {
  // The least reliable path any intra-host class took.
  ClassError worst{0, ErrorBasis::HeldOut, ""};
  bool any = false;
  for (const auto& c : in.classes) {
    if (!c.intra_host) continue;
    ClassError e;
    if (c.path == CollectivePath::Cluster) {
      // The cost model's cluster path against this device's own measured collectives, or
      // else against the published multi-node runs.
      const ModelError m = network_model_error();
      e = held_out(in.profile, "collective_flow")
              .value_or(ClassError{m.relative_error, m.basis, m.source});
    } else if (c.path == CollectivePath::Efficiency) {
      e = held_out(in.profile, "collective_eff")
              .value_or(held_out(in.profile, "collective").value_or(ClassError{}));
    } else {
      e = held_out(in.profile, "collective").value_or(ClassError{});
    }
    if (!any || e.relative_error > worst.relative_error) worst = e;
    any = true;
  }
  return any ? worst : ClassError{};
}

}  // namespace

const char* to_string(ErrorBasis basis) {
  switch (basis) {
    case ErrorBasis::HeldOut:
      return "held-out";
    case ErrorBasis::Published:
      return "published";
    case ErrorBasis::Fit:
      return "fit";
    default:
      return "assumed";
  }
}

ModelError network_model_error() {
  // `overlapsim validate-collectives workloads/reference/collectives/`: the cost model's
  // cluster path against 73 points of published multi-node nccl-tests all-reduce runs
  // (docs/validation.md). A test keeps this at or above what the command measures.
  return {0.094, ErrorBasis::Published,
          "NCCL cost model vs published multi-node nccl-tests, median |error| over 73 points "
          "(docs/validation.md)"};
}

void close_band(StepBand& band, double step_time_s) {
  double sum_sq = 0, largest = 0;
  band.dominant.clear();
  for (BandTerm& t : band.terms) {
    t.contribution_s = t.sensitivity_s * t.relative_error;
    sum_sq += t.contribution_s * t.contribution_s;
    if (t.contribution_s > largest) {
      largest = t.contribution_s;
      band.dominant = t.number_class;
    }
  }
  const double half = std::sqrt(sum_sq);
  band.low_s = std::max(0.0, step_time_s - half);
  band.high_s = step_time_s + half;
}

BubbleError bubble_error(const std::vector<BandTerm>& terms) {
  BubbleError out;
  double weight_s = 0, weighted = 0;
  for (const BandTerm& t : terms)
    if (t.number_class == kGemmClass || t.number_class == kAttentionClass ||
        t.number_class == kMemoryBoundClass) {
      weight_s += t.sensitivity_s;
      weighted += t.sensitivity_s * t.relative_error;
      out.basis = std::max(out.basis, t.basis);  // the weakest evidence among them
    }
  if (weight_s > 0) out.relative_error = weighted / weight_s;
  return out;
}

StepBand step_band(const StepResult& r, const BandInputs& in) {
  const bool paired = in.overlapping;
  const double paired_exposed = paired ? r.exposed_paired_s : 0;
  const double paired_compute = paired ? r.paired_compute_s : 0;
  StepBand band;
  auto add = [&band](std::string name, double sensitivity_s, const ClassError& e) {
    if (!(sensitivity_s > 0)) return;
    band.terms.push_back(
        BandTerm{std::move(name), sensitivity_s, e.relative_error, e.basis, e.source, 0});
  };
  // Compute outside the overlapped pairs by kind of kernel: each kind has its own model and
  // its own error. The bubble is other ranks' compute, taken at this rank's mix of kernels.
  // (Every sensitivity is a sum of times, so a sampled step's band, extrapolated term by
  // term, is the whole step's.)
  const ComputeByKind& all = r.compute_by_kind;
  const ComputeByKind none{};
  const ComputeByKind& in_pairs = paired ? r.paired_by_kind : none;
  const double gemm_s = std::max(0.0, all.gemm_s - in_pairs.gemm_s);
  const double attention_s = std::max(0.0, all.attention_s - in_pairs.attention_s);
  const double memory_s = std::max(0.0, all.memory_bound_s - in_pairs.memory_bound_s);
  const ClassError gemm = gemm_error(in);
  const ClassError attention = attention_error(in);
  const ClassError memory = memory_bound_error(in);
  add(kGemmClass, gemm_s, gemm);
  add(kAttentionClass, attention_s, attention);
  add(kMemoryBoundClass, memory_s, memory);
  const BubbleError mix = bubble_error(band.terms);
  // What the compute stream's merged busy time holds beyond the ops' own durations (none
  // unless compute ops overlapped) goes with the bubble.
  const double rest_s = r.compute_s - paired_compute - (gemm_s + attention_s + memory_s);
  add(kBubbleClass, std::max(0.0, r.bubble_s + rest_s),
      ClassError{mix.relative_error, mix.basis, kBubbleSource});
  add("intra-host collectives",
      std::max(0.0, r.exposed_comm_s - r.exposed_inter_host_s - paired_exposed),
      intra_host_error(in));
  const ModelError net = network_model_error();
  add("inter-host collectives", r.exposed_inter_host_s, ClassError{net.relative_error, net.basis,
                                                                   net.source});
  if (paired) {
    // The least reliable of the designs the step ran: each at its held-out kind; one
    // without held-out pairs leaves the class assumed.
    ClassError design;
    std::optional<ClassError> worst;
    bool every_design_held_out = !in.validate_kinds.empty();
    for (const std::string& kind : in.validate_kinds) {
      const auto e = kind.empty() ? std::nullopt : held_out(in.profile, kind);
      if (!e) {
        every_design_held_out = false;
        break;
      }
      if (!worst || e->relative_error > worst->relative_error) worst = e;
    }
    if (every_design_held_out && worst) design = *worst;
    if (design.basis == ErrorBasis::Assumed)
      design.source = fmt::format("no held-out {} pairs: assumed 20%", in.design);
    add("design pairs", paired_compute + paired_exposed, design);
  }
  close_band(band, r.step_time_s);
  return band;
}

}  // namespace overlapsim::sim
