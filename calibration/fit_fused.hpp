#pragma once
// The `fused` design's parameters (sim/overlap/fused_model.hpp) from the fused kernels'
// measurements: overlap-bench rows of the fused kernel beside its own compute part alone
// (the same kernel's lookups without stores, the own GEMV, the own GEMM) on 2 and 4 H100s.
// One weighted linear least squares over every row, on the relative error of the fused
// pair's time, parameters kept >= 0; deterministic (docs/designs.md). The embedding
// backward, a consumer whose time is the larger of two bounds, has a fit of its own
// (fit_fused_backward).
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "sim/overlap/fused_model.hpp"
#include "sim/profile/provenance.hpp"

namespace overlapsim::calibration {

// The measurement files, relative to the repository root.
const std::vector<std::string>& fused_measurement_files();

// One measured fused pair with its parts.
struct FusedRow {
  sim::FusedPair pair = sim::FusedPair::EmbeddingAllToAll;
  std::string where;  // file:line of the fused row
  int world = 2;
  std::int64_t m = 0, n = 0, k = 0;
  std::uint64_t comm_bytes = 0;
  double op_s = 0;              // the fused kernel's compute part alone
  double fused_s = 0;           // the fused kernel
  double sequential_own_s = 0;  // that compute part, then NCCL (0: not measured)
  double collective_s = 0;      // NCCL alone (0: not measured)
  double pushed_bytes() const;
};

// Rows of `files` (paths under `root`) whose fused design has its compute part measured in
// the same file. Throws config::ConfigError for an unreadable file or a bad row.
std::vector<FusedRow> load_fused_rows(const std::string& root,
                                      const std::vector<std::string>& files);

struct FusedFit {
  sim::FusedCosts costs;
  // designs.fused key -> value with source measured, citation, fit error (the fitted
  // five; nvlink_store_Bps is the datasheet's).
  std::map<std::string, sim::Sourced> params;
  std::vector<double> predicted_s;  // per row, by sim::fused_times
  double relative_rms = 0;          // over every row
};

// The NVLink rate per direction of the measured GPUs (H100 SXM: 450 GB/s, NVIDIA's
// datasheet): not fitted, it bounds the predictions (fused_times).
inline constexpr double kMeasuredNvlinkBps = 450e9;

// Throws config::ConfigError when the rows cannot determine every parameter (no row of a
// pair kind a parameter needs).
FusedFit fit_fused(const std::vector<FusedRow>& rows, double nvlink_store_Bps = kMeasuredNvlinkBps);

// The embedding backward's measurements: overlap-bench rows of the fused backward beside
// the expansion alone (`embedding_bag_backward`, `own`) on 2 and 4 H100s. Each file ran one
// push schedule; a row is kept only where that is the schedule the kernel picks for its
// shape (backward_push_spread), so the rows are the committed kernel's.
struct FusedBackwardFile {
  std::string path;     // relative to the repository root
  bool spread = false;  // the file's kernel pushed spread with one push warp (else shift)
};
const std::vector<FusedBackwardFile>& fused_backward_measurement_files();

// The kernel's own choice (kernels/fused/embedding_alltoall_backward.hpp, kAuto): spread
// with one push warp from 1 MiB a table block (B x dim x element bytes) at 3+ ranks.
bool backward_push_spread(int world, std::int64_t local_batch, std::int64_t dim, int element_bytes);

// Rows (pair EmbeddingBackward; m = B, n = dim, k = lookups a sample) whose expansion alone
// was measured in the same file. Throws config::ConfigError as load_fused_rows.
std::vector<FusedRow> load_fused_backward_rows(const std::string& root,
                                               const std::vector<FusedBackwardFile>& files);

struct FusedBackwardFit {
  sim::FusedCosts costs;                       // the backward fields (has_backward true)
  std::map<std::string, sim::Sourced> params;  // designs.fused.backward_* with provenance
  std::vector<double> predicted_s;             // per row, by sim::fused_times
  std::vector<bool> arrival_bound;             // per row: the arrival bound set it
  double relative_rms = 0;
};

// Least squares on the relative error of max(expansion, arrival) + finish: for a given
// split of the rows between the two bounds the model is linear; starting from every split
// along the rows' expansion time per pushed byte, rows are moved to the bound the fit
// makes larger until the split holds, and the best fit wins. Unknowns that come out
// negative are held at 0. Throws config::ConfigError when the rows cannot determine it.
FusedBackwardFit fit_fused_backward(const std::vector<FusedRow>& rows,
                                    double nvlink_store_Bps = kMeasuredNvlinkBps);

}  // namespace overlapsim::calibration
