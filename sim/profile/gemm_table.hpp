#pragma once
// Measured GEMM time over shapes, in one of two forms a calibration fit chooses between
// (docs/profile-format.md, compute.gemm_tables):
//  - a rate grid: achieved FLOP/s at every (m, n, k) of m_values x n_values x k_values,
//    interpolated trilinearly in log(m), log(n), log(k), log(rate), clamped at the edges;
//  - a wave model (GemmWaveModel): fixed cost + per-output-element cost + the main loop at a
//    full-wave rate, over the output area rounded up to whole waves of tiles; optionally
//    times a correction grid (time_factor) interpolated like the rates.
// Where a table exists for a precision it replaces the GEMM efficiency curve.
#include <cstdint>
#include <vector>

#include "sim/profile/provenance.hpp"

namespace overlapsim::sim {

// One of the vendor library's kernel configurations the best-of model chooses among: a
// data-parallel tile (tile_m x tile_n, split-K 1..max_split_k), or with tile 0 x 0 a
// stream-K kernel (the K iterations of all tiles dealt evenly over the SMs: no wave
// quantisation). efficiency: its main-loop rate / mainloop_flops_per_s (fitted per tile).
struct GemmKernelChoice {
  int tile_m = 0, tile_n = 0;
  double efficiency = 1;
  bool stream_k() const { return tile_m == 0; }
};

// The work one kernel choice is charged for a shape: the output area its epilogues cover
// (whole waves of tiles x split-K partials) and its main-loop FLOPs divided by the
// choice's efficiency.
struct GemmCharge {
  double outputs = 0;
  double mainloop_flops = 0;
  int tile_m = 0, tile_n = 0, split_k = 1;  // the choice (0 x 0: stream-K or unquantised)
};

// A persistent tiled GEMM on `sms` SMs:
//   time_s = fixed_s + A * output_s_per_element + 2 * A * k / mainloop_flops_per_s
//   A = m * n, or, with a tile (tile_m x tile_n) and at least one full wave of tiles,
//       waves * sms * tile_m * tile_n, waves = ceil(ceil(m / tile_m) * ceil(n / tile_n) / sms)
// fixed_s: per call beyond the launch gap (prologue, host-side cuBLASLt work not hidden);
// output_s_per_element: each output tile's set-up and epilogue, per element; the main loop
// runs at mainloop_flops_per_s while every SM holds a tile. Below one full wave of tiles the
// area is not rounded: vendor GEMMs split K there (split-K / stream-K) to fill the SMs,
// unless whole_tiles_below_one_wave: a kernel that never splits K (this project's
// persistent GEMM) runs each tile's whole K loop on one SM, so a partial wave costs a full
// one (32 tiles on 132 SMs take as long as 132).
// tile_per_shape: the library picks its tile per shape (cuBLAS's heuristic chooses among
// kernel configurations), so A is the least of the rounded areas over kVendorTiles; a
// fixed tile (one kernel, e.g. this project's GEMM) rounds by that tile alone. On a
// power-of-two grid the two agree within 3 %; on a training shape such as 2048 x 4608 a
// fixed 256x256 tile charges 144 tiles as 2 waves of 132 (1.83x the area), the best tile
// (128x128: 576 tiles, 5 waves) 1.15x.
// choices (tile: best) generalise tile_per_shape to what the library does per shape: the
// fastest of several kernels, each tile at its own fitted efficiency, split-K priced as
// more units in the waves rather than assumed below one wave, and stream-K (no rounding).
// On one H100 (calibration/data/h100x1-gemm-offgrid) cuBLASLt's times at shapes between the
// grid points showed no wave quantisation, and the fit chose stream-K for every shape.
// The most K splits the wave model tries for one tile.
inline constexpr int kMaxSplitK = 64;

struct GemmWaveModel {
  double fixed_s = 0;
  double output_s_per_element = 0;
  double mainloop_flops_per_s = 0;
  int tile_m = 0, tile_n = 0;  // 0 x 0: no wave quantisation (unless tile_per_shape)
  bool tile_per_shape = false;
  bool whole_tiles_below_one_wave = false;  // needs a fixed tile (tile_m x tile_n)
  int sms = 0;
  // With a fixed tile: what a partial last wave costs, as floor + (1 - floor) x its share
  // of a full wave (1: a whole wave). A persistent kernel's last tiles run on fewer SMs than
  // a full wave's, with the memory bandwidth and power of the idle ones to share: our own
  // GEMM's 3072 x 3072 x 3072 (288 tiles of 128x256, 2.18 waves on 132 SMs) took 0.89 of
  // the time 3 whole waves predict (calibration/data/h100x1-gemm-offgrid).
  double partial_wave_floor = 1;

  // Best of choices (tile: best): per shape the fastest of these kernels, each
  // data-parallel tile also split along K into 1..max_split_k parts (the partial tiles are
  // work units like whole ones: units = tiles x split, rounded up to whole waves on `sms`,
  // each unit running K / split of the main loop and one epilogue).
  std::vector<GemmKernelChoice> choices;
  int max_split_k = 1;  // 1..kMaxSplitK

  static constexpr int kVendorTiles[4][2] = {{128, 128}, {128, 256}, {256, 128}, {256, 256}};

  bool empty() const { return !(mainloop_flops_per_s > 0); }
  bool best_of_choices() const { return !choices.empty(); }
  bool quantised() const {
    return tile_per_shape || best_of_choices() || (tile_m > 0 && tile_n > 0);
  }
  // Throws std::invalid_argument naming what is wrong.
  void validate() const;
  // The output area the model charges: m * n, or rounded up to whole waves of tiles (for
  // a best-of model: the area of the choice charge() picks at k = 1).
  double charged_outputs(double m, double n) const;
  // What the model charges for m x n x k: with choices, the fastest under the current
  // coefficients (ties to the earlier choice, then the smaller split); otherwise the area
  // above with its full main loop.
  GemmCharge charge(double m, double n, double k) const;
  // The time of one charge: fixed_s + outputs * output_s_per_element + mainloop / rate.
  double time_of(const GemmCharge& c) const;
  // Kernel time without the launch gap.
  double time_s(double m, double n, double k) const;
};

struct GemmTable {
  std::vector<double> m_values, n_values, k_values;  // each strictly increasing, > 0
  // achieved_flops_per_s[(im * n_values.size() + in) * k_values.size() + ik]
  std::vector<double> achieved_flops_per_s;
  // When set, the table is this model and the rate grid above is empty.
  GemmWaveModel waves;
  // Optional with a wave model: measured / modelled kernel time on the m x n x k grid above
  // (same layout as achieved_flops_per_s), interpolated like the rates and multiplied into
  // the wave model's time; empty = 1.
  std::vector<double> time_factor;
  Provenance source;

  bool empty() const { return achieved_flops_per_s.empty() && waves.empty(); }
  bool is_wave_model() const { return !waves.empty(); }
  // Throws std::invalid_argument naming what is wrong (sizes, ordering, non-positive).
  void validate() const;
  // Achieved FLOP/s of the rate grid (the wave model: 2mnk / time_s).
  double rate_flops_per_s(double m, double n, double k) const;
  // Kernel time without the launch gap: 2mnk / rate, or the wave model's time.
  double compute_s(double m, double n, double k) const;
  // Every rate times `factor` (every time of the wave model divided by it).
  void scale_rates(double factor);

 private:
  // log of `grid` (laid out as achieved_flops_per_s) at (m, n, k), trilinear in log(m),
  // log(n), log(k), clamped at the grid's edges.
  double log_interpolate(const std::vector<double>& grid, double m, double n, double k) const;
};

}  // namespace overlapsim::sim
