#pragma once
// Fit stage for the tile-wise design's copy-engine transport (designs.tilewise.*,
// sim::plan_copy_engine; docs/calibration.md has the formulas):
//   copy_engine_latency_s, copy_engine_bandwidth_Bps   the line t = latency + bytes / Bps
//       through the peer_copy copy_engine rows (every rank copying to the next at once),
//       least squares on the relative error
//   tail_kernel_latency_s, tail_kernel_bandwidth_Bps   the same line through the peer_copy
//       tail_kernel rows (the all-reduce tail kernel's exchange, every rank at once), each
//       row's bytes counted once per peer ((world - 1) x bytes): the simulator charges the
//       tail latency + (n - 1) b / bandwidth at n ranks
//   copy_engine_stream_ops_s   a copy's stream operations (flag write, counter wait and
//       reset): the peer_copy copy_engine_with_stream_ops row less the copy_engine row of
//       its size, same case and world, median over the cases
//   epilogue_reduce_overhead_fraction   2 ranks: from the all-reduce and reduce-scatter
//       tilewise_ce pair rows
//   epilogue_reduce_bandwidth_Bps       more ranks: from the reduce-scatter pair rows
//   copy_engine_phase2_contention       more ranks: from the all-reduce pair rows
// The pair-row parameters minimise the relative RMS error of the rows' predictions, made
// as `overlapsim validate` makes them (calibration::validate with the profile fitted so
// far), one parameter at a time in the order above. A parameter without rows keeps the base
// profile's value (carried, or absent where the base has none).
#include <functional>
#include <utility>
#include <vector>

#include "calibration/fit.hpp"

namespace overlapsim::calibration {

struct CopyLine {
  double latency_s = 0;
  double Bps = 0;
  double rel_rms = 0;  // over the points
};
// Minimises sum(((latency + bytes / Bps) - t) / t)^2 over (bytes, seconds) points, with
// latency >= 0; needs two distinct sizes (std::invalid_argument otherwise).
CopyLine fit_copy_line(const std::vector<std::pair<double, double>>& bytes_s);

// The minimum of f over [lo, hi]: a scan of `steps` points (geometric when `log_scale`),
// then golden-section refinement around the best; deterministic.
double minimise_1d(const std::function<double(double)>& f, double lo, double hi, bool log_scale,
                   int steps = 60);

// Pair rows of the copy-engine transport on more than 2 ranks may count a few elements
// as wrong: the kernel sums the n partials in fp32 and rounds once, NCCL's reference rounds
// to bf16 at every hop, and where the terms cancel they differ by more than the check's
// 4 ulp. A missing or stale partial would corrupt whole tiles, so such a row counts as
// correct when fewer than one tile's elements per rank differ. Everything else keeps
// load_fit_data's rule (wrong > 0: left out).
bool copy_engine_row_usable(const Measurement& row, double tile_elems);

// After fit_designs and fit_interference (it predicts with the profile they produced).
void fit_copy_engine(const FitData& data, FitOutput& out);

}  // namespace overlapsim::calibration
