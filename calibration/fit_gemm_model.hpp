#pragma once
// The GEMM time model of a calibrated profile, chosen by cross-validation: the log-space
// rate grid (sim::GemmTable) or a wave model (sim::GemmWaveModel) with one of a few
// candidate tile shapes. Each candidate is scored by leave-one-shape-out on the fit's own
// rows (held-out rows are never seen): every measured shape is predicted by the candidate
// fitted to the other shapes, and the score is median + p90 of |relative error| over the
// rows, so the choice aims at the acceptance bars (median and p90) on unseen shapes.
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "sim/profile/gemm_table.hpp"

namespace overlapsim::calibration {

using GemmShape3 = std::tuple<std::int64_t, std::int64_t, std::int64_t>;  // m, n, k

struct GemmShapeTimes {
  GemmShape3 shape;
  std::vector<double> times_s;  // every row's time (launch gap included)
  double median_s = 0;
};

// Least squares on the relative error of the shapes' median kernel times (median - launch)
// over the wave model's terms, each coefficient >= 0 (every subset of the fixed and
// per-output terms with the main loop, the best feasible one kept). Returns an empty model
// (mainloop_flops_per_s = 0) when no subset gives a positive main-loop rate. Coefficients
// are rounded to 6 significant digits (what the YAML holds).
// tile_m, tile_n: 0, 0 no quantisation; -1, -1 the least-quantised vendor tile per shape
// (GemmWaveModel::tile_per_shape); else that fixed tile. whole_tiles: below one wave the
// fixed tile still costs a whole wave (a kernel that never splits K, like our own GEMM).
// fit_partial_wave (fixed tile only): also fit GemmWaveModel::partial_wave_floor, the
// least squared relative error over floors 1, 0.95, ..., 0.
sim::GemmWaveModel fit_gemm_wave_model(const std::vector<GemmShapeTimes>& shapes, double launch_s,
                                       int tile_m, int tile_n, int sms, bool whole_tiles = false,
                                       bool fit_partial_wave = false);

// The best-of model (GemmWaveModel::choices, tile: best): the vendor tiles
// (GemmWaveModel::kVendorTiles) and, with stream_k, a stream-K choice, data-parallel tiles
// split along K into 1..max_split_k parts, waves on `sms` SMs. Per set of efficiencies the
// coefficients alternate between least squares (as fit_gemm_wave_model, on each shape's
// fastest choice) and re-choosing (kChoiceRounds rounds, the best kept); the efficiencies
// (the first tile's held at 1) by coordinate search in steps of x1.04 then x1.01, each step
// kept while it lowers the squared relative error. Coefficients and efficiencies rounded to
// 6 significant digits.
sim::GemmWaveModel fit_gemm_best_of_model(const std::vector<GemmShapeTimes>& shapes,
                                          double launch_s, int sms, int max_split_k, bool stream_k);

// The wave model times a correction grid over the shapes' M, N, K values: measured /
// modelled kernel time at the measured shapes, the other nodes by IdwLogMeanGrid of those
// factors; factors rounded to 6 significant digits.
sim::GemmTable with_time_correction(const sim::GemmWaveModel& waves,
                                    const std::vector<GemmShapeTimes>& shapes, double launch_s);

// Inverse-square-distance weighting of log(values) at every node (m, n, k) of an M x N x K
// grid, the distance taken in log2(m), log2(n), log2(k); exp of it. Bounded by the values
// (no extrapolation beyond what was seen), smooth, and exact at their shapes. Each log is
// taken once per grid value and value: a fit evaluates grids of thousands of nodes over
// hundreds of values, many times.
class IdwLogMeanGrid {
 public:
  IdwLogMeanGrid(const std::map<GemmShape3, double>& values, const std::vector<double>& ms,
                 const std::vector<double>& ns, const std::vector<double>& ks);
  // The weighted mean at (ms[i], ns[j], ks[l]).
  double at(std::size_t i, std::size_t j, std::size_t l) const;

 private:
  std::vector<double> value_, log_value_;
  // log2(grid value / the value's coordinate), per grid value then per value.
  std::vector<double> dm_, dn_, dk_;
};

// A way of building a model from some shapes: returns the table to predict with.
using GemmModelBuilder = std::function<sim::GemmTable(const std::vector<GemmShapeTimes>&)>;

struct CrossValidation {
  std::vector<double> rel_errors;  // one per row of every shape, predicted without its shape
  double median_abs = 0, p90_abs = 0, max_abs = 0;
  double score() const { return median_abs + p90_abs; }
};

// Leave-one-shape-out: each shape's rows predicted (launch_s + compute_s) by the model
// built from the other shapes.
CrossValidation leave_one_shape_out(const std::vector<GemmShapeTimes>& shapes, double launch_s,
                                    const GemmModelBuilder& build);

// p-quantile of |values| (0 <= q <= 1), linear between order statistics (as validate).
double abs_quantile(std::vector<double> values, double q);

}  // namespace overlapsim::calibration
