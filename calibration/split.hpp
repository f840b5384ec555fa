#pragma once
// The held-out split of a calibration data set: which shapes and sizes the fit must not
// see, so `overlapsim validate` measures prediction, not recall.
//
// Rule (deterministic): rows are grouped by what they measure — each collective op alone
// (its sizes), and the GEMM, GEMV and embedding shapes (every row with that compute shape:
// the op alone, its pairs and their parts). Within a group the distinct split keys
// (measurement.hpp split_key) are sorted by work (bytes, or FLOPs / gathered bytes) and every
// third one, starting with the second, is held out (index % 3 == 1): the smallest and
// largest stay in the fit, so held-out rows are interpolated, not extrapolated.
// A suite can also hold out whole sections: every key measured by a section whose name ends
// in `_heldout` (the case key's first part) is held out, and those keys take no part in
// the every-third rule (calibration/suites/gemm-offgrid-1gpu.yaml holds out shapes between
// the grid points this way, so validate measures the GEMM model off the grid).
#include <set>
#include <string>
#include <vector>

#include "calibration/measurement.hpp"

namespace overlapsim::calibration {

// The group a row belongs to for the split: "allreduce", "gemm", "gemv", "embedding", ...;
// empty for rows that no group covers (e.g. un-permute kernels), which stay in the fit.
std::string split_group(const Measurement& m);

// Whether the row was measured by a section whose name ends in `_heldout`.
bool in_heldout_section(const Measurement& m);

std::set<std::string> heldout_keys(const std::vector<Measurement>& rows);

// heldout.csv: the held-out rows with the overlap-bench columns plus ctas, case and origin
// ("file:line" of the row it copies).
std::string format_heldout_csv(const std::vector<Measurement>& rows,
                               const std::set<std::string>& keys);

}  // namespace overlapsim::calibration
