#pragma once
// The uncertainty band of a projected step time: how far off the step could be, given how
// far off each class of numbers it used was on measurements it was not fitted from.
//
// Classes, and how much step time each one moves (its sensitivity, on the critical rank):
//   GEMMs, attention,        the rank's compute time outside overlapped pairs by kind of
//   memory-bound kernels     kernel (each kind has its own cost model: the GEMM tables, the
//                            attention table, the memory curves)
//   bubble                   bubble_s: other ranks' compute, at the rank's own compute
//                            errors weighted by their times
//   intra-host collectives   exposed time waiting on collectives within one host
//   inter-host collectives   exposed time waiting on collectives or sends across hosts
//   design pairs             (overlapping designs) the paired ops: their compute and the
//                            exposed time of their collectives
// Each class's error is its held-out median |relative error| (the profile's validation
// section: GEMMs by their input type; for inter-host collectives the NCCL model against
// published nccl-tests runs), else the largest in-sample fit error of the class's numbers
// the step used, else an assumed 20 %, and the band says which. Errors are
// systematic within a class (one model bias moves all its ops the same way), so a class
// moves the step by error x sensitivity; classes are independent, so the half-width is the
// root sum of squares of their contributions.
#include <string>
#include <vector>

#include "sim/collectives/collective_cost_model.hpp"
#include "sim/exec/step_result.hpp"
#include "sim/profile/profile.hpp"

namespace overlapsim::sim {

// How a class's error is known, best first.
enum class ErrorBasis { HeldOut, Published, Fit, Assumed };
const char* to_string(ErrorBasis basis);  // "held-out", "published", "fit", "assumed"

struct BandTerm {
  std::string number_class;  // "GEMMs", "intra-host collectives", ...
  double sensitivity_s = 0;
  double relative_error = 0;
  ErrorBasis basis = ErrorBasis::Assumed;
  std::string error_source;  // where the error comes from, in words
  double contribution_s = 0;  // sensitivity_s x relative_error
};

struct StepBand {
  double low_s = 0, high_s = 0;
  std::vector<BandTerm> terms;  // classes the step used (sensitivity > 0), in the order above
  std::string dominant;         // the class with the largest contribution ("" if none)
};

// What the band needs besides the step's result.
struct BandInputs {
  const Profile& profile;
  std::string design;          // registry name
  bool overlapping = false;    // the design overlapped at least one pair of the step
  // validate's kinds of the pair rows of the designs the step ran (one; `best`: each class
  // winner's), "" for a design validate has no rows of.
  std::vector<std::string> validate_kinds;
  Precision precision = Precision::BF16;
  const std::vector<CollectiveClassUse>& classes;  // the collectives the step launched
  const std::vector<SourceEntry>& used_sources;    // the profile numbers it used
};

StepBand step_band(const StepResult& result, const BandInputs& in);

// The error of the NCCL cost model that times collectives without a measured curve
// (inter-host ones), and where it comes from.
struct ModelError {
  double relative_error = 0;
  ErrorBasis basis = ErrorBasis::Assumed;
  std::string source;
};
ModelError network_model_error();

// The classes the compute splits into, by name (the band's terms and what reads them).
inline constexpr const char* kGemmClass = "GEMMs";
inline constexpr const char* kAttentionClass = "attention";
inline constexpr const char* kMemoryBoundClass = "memory-bound kernels";
inline constexpr const char* kBubbleClass = "bubble";

// Sets each term's contribution (sensitivity x error), the dominant class and the band
// around `step_time_s` (the root sum of squares of the contributions).
void close_band(StepBand& band, double step_time_s);

// The bubble's error: other ranks' compute, taken to run the same mix of kernels as this
// rank's, so the compute classes' errors weighted by their sensitivities (the weakest basis
// among them). Shared with the extrapolation of sampled steps, which recomputes it from the
// extrapolated terms so that a sampled band is the whole step's.
struct BubbleError {
  double relative_error = 0;
  ErrorBasis basis = ErrorBasis::HeldOut;
};
BubbleError bubble_error(const std::vector<BandTerm>& terms);
inline constexpr const char* kBubbleSource =
    "other ranks' compute: this rank's compute classes' errors weighted by their times";

}  // namespace overlapsim::sim
