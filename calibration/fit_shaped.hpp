#pragma once
// The `shaped` design's parameters (sim/overlap/shaped.cpp) from the shaped kernels' grid:
// overlap-bench's shaped runner times each pair shape at every point of (SMs kept free S,
// NCCL's CTA cap, chunks k), with the GEMM alone, NCCL alone on all SMs and on the cap, and
// the pair (surface.csv; docs/kernels/status.md, "Shaped concurrency"). The model runs one
// point for every pair: S = NCCL's CTAs = comm_sms, k = chunks. The fit picks that point,
// NCCL's slowdown on its CTAs per collective, and the interference both ways that makes the
// model's pair time match the measured pairs at it; the per-call latency, which these pairs
// do not hold, is carried from the base profile. Deterministic.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "sim/collectives/collective.hpp"
#include "sim/profile/profile.hpp"
#include "sim/profile/provenance.hpp"

namespace overlapsim::calibration {

// One grid point of one pair shape: the median of the file's rows at that point.
struct ShapedPoint {
  std::string where;  // file:line of its first row
  std::string file;   // relative to the repository root
  int world = 2;
  sim::CollectiveOp collective = sim::CollectiveOp::AllReduce;
  std::int64_t m = 0, n = 0, k = 0;
  int free_sms = 0, comm_ctas = 0, chunks = 1;  // comm_ctas 0: NCCL's default
  double gemm_alone_s = 0;                      // cuBLASLt on all SMs
  double collective_alone_s = 0;                // NCCL alone, its default CTAs
  double collective_ctas_s = 0;                 // NCCL alone on comm_ctas CTAs
  double sequential_s = 0;                      // the GEMM, then NCCL
  double pair_s = 0;                            // the shaped pair at this point
};

// Rows of `files` (paths under `root`), one per (world, op, shape, point). Throws
// config::ConfigError naming the file, line and column for an unreadable file, a missing
// column or a bad value.
std::vector<ShapedPoint> load_shaped_points(const std::string& root,
                                            const std::vector<std::string>& files);

// The measured grids, per GPU: 2 and 4 H100s (three runs), 2 and 4 H200s (three runs).
const std::vector<std::string>& shaped_surface_files_h100();
const std::vector<std::string>& shaped_surface_files_h200();

struct ShapedFit {
  int comm_sms = 0, chunks = 0;  // the model's point (also in params)
  // designs.shaped key -> value, source measured (the call latency: as the base profile
  // has it), citation, fit error.
  std::map<std::string, sim::Sourced> params;
  std::vector<ShapedPoint> fitted;  // the points at the model's point
  std::vector<double> predicted_s;  // per fitted point, by the model with the fit
  double relative_rms = 0;          // over the fitted points
};

// `base`: the profile whose compute model and device times the pairs (its designs.shaped is
// replaced). Throws config::ConfigError when the points hold no grid point the model can
// run (S = CTAs > 0 with k >= 2) or lack one of the three collectives there.
ShapedFit fit_shaped(const std::vector<ShapedPoint>& points, const sim::Profile& base);

// The model's time for a measured point at the model's own point: the pair simulated with
// the GEMM and NCCL given their measured times alone, under `profile`'s designs.shaped.
double shaped_pair_time_s(const ShapedPoint& point, const sim::Profile& profile);

// `profile` with designs.shaped set to the fit's parameters.
sim::Profile with_shaped_fit(const sim::Profile& profile, const ShapedFit& fit);

// The profile a fit times its pairs with: `profile` with its GEMMs timed by the efficiency
// curve (simulate_pair scales it to each pair's measured GEMM exactly) and no attention
// table (the pairs have none; simulate_pair copies the profile for every pair).
sim::Profile shaped_timing_profile(sim::Profile profile);

// A profile's YAML text (`path` names it in errors) with its designs.shaped block replaced
// by the fit's parameters, one line a key in key order with value, source, citation and fit
// error; the block's nccl_call_latency_s line, which the fit carries, is kept as written.
// Everything else is kept byte for byte. Throws config::ConfigError where the text has no
// designs.shaped block.
std::string with_shaped_designs(const std::string& text, const std::string& path,
                                const ShapedFit& fit);

}  // namespace overlapsim::calibration
