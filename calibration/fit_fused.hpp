#pragma once
// The `fused` design's parameters (sim/overlap/fused_model.hpp) from the fused kernels'
// measurements: overlap-bench rows of the fused kernel beside its own compute part alone
// (the same kernel's lookups without stores, the own GEMV, the own GEMM) on 2 and 4 H100s.
// One weighted linear least squares over every row, on the relative error of the fused
// pair's time, parameters kept >= 0; deterministic (docs/designs.md).
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

}  // namespace overlapsim::calibration
