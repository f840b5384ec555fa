#include "sim/scenario/step_band.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>

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

ClassError compute_error(const BandInputs& in) {
  // Held-out rows of the step's GEMM precision; a section without per-type rows (written by
  // hand) stands for every precision.
  const std::string precision = to_string(in.precision);
  if (auto e = held_out(in.profile, "compute_" + precision)) return *e;
  bool typed = false;
  for (const auto& [kind, error] : in.profile.validation.by_kind)
    typed = typed || (kind.rfind("compute_", 0) == 0 && kind != "compute_own");
  if (!typed)
    if (auto e = held_out(in.profile, "compute")) return *e;
  // No held-out rows: the largest in-sample fit error of the compute numbers the step used.
  ClassError worst;
  bool any = false;
  for (const auto& s : in.used_sources)
    if (s.what.rfind("compute.", 0) == 0 && s.source.fit_error >= 0 &&
        (!any || s.source.fit_error > worst.relative_error)) {
      any = true;
      worst = ClassError{s.source.fit_error, ErrorBasis::Fit,
                         fmt::format("in-sample fit error of {}", s.what)};
    }
  return any ? worst : ClassError{};
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

StepBand step_band(const StepResult& r, const BandInputs& in) {
  const bool paired = in.overlapping;
  const double paired_exposed = paired ? r.exposed_paired_s : 0;
  const double paired_compute = paired ? r.paired_compute_s : 0;
  StepBand band;
  auto add = [&band](std::string name, double sensitivity_s, const ClassError& e) {
    if (!(sensitivity_s > 0)) return;
    band.terms.push_back(BandTerm{std::move(name), sensitivity_s, e.relative_error, e.basis,
                                  e.source, sensitivity_s * e.relative_error});
  };
  add("compute", r.compute_s + r.bubble_s - paired_compute, compute_error(in));
  add("intra-host collectives",
      std::max(0.0, r.exposed_comm_s - r.exposed_inter_host_s - paired_exposed),
      intra_host_error(in));
  const ModelError net = network_model_error();
  add("inter-host collectives", r.exposed_inter_host_s, ClassError{net.relative_error, net.basis,
                                                                   net.source});
  if (paired) {
    ClassError design;
    if (!in.validate_kind.empty())
      if (auto e = held_out(in.profile, in.validate_kind)) design = *e;
    if (design.basis == ErrorBasis::Assumed)
      design.source = fmt::format("no held-out {} pairs: assumed 20%", in.design);
    add("design pairs", paired_compute + paired_exposed, design);
  }
  double sum_sq = 0, largest = 0;
  for (const auto& t : band.terms) {
    sum_sq += t.contribution_s * t.contribution_s;
    if (t.contribution_s > largest) {
      largest = t.contribution_s;
      band.dominant = t.number_class;
    }
  }
  const double half = std::sqrt(sum_sq);
  band.low_s = std::max(0.0, r.step_time_s - half);
  band.high_s = r.step_time_s + half;
  return band;
}

}  // namespace overlapsim::sim
