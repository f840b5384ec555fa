#pragma once
// How far the profile's predictions were off on measurements it was not fitted from: the
// `validation` section that `overlapsim validate --record` writes into a profile
// (docs/profile-format.md). Projections read it to size their uncertainty bands
// (sim/scenario/step_band.hpp): a class of numbers is as uncertain as its held-out error.
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace overlapsim::config {
class ConfigNode;
}

namespace overlapsim::sim {

struct HeldOutError {
  int rows = 0;
  double median_abs_err = 0;  // of |predicted - measured| / measured
  double p90_abs_err = 0;
};

struct HeldOutErrors {
  // The held-out CSVs, repository-relative: one file, or several whose rows were predicted
  // together (a profile whose GEMM precisions were measured by different suites).
  std::vector<std::string> measurements;
  std::string cluster;       // the cluster file the rows were predicted on
  std::map<std::string, HeldOutError> by_kind;  // validate's kinds: compute, collective, ...

  bool empty() const { return by_kind.empty(); }
  // The kind's error, or nullopt where the section does not have it (or has no rows).
  std::optional<HeldOutError> find(const std::string& kind) const;
  // "calibration/data/h200x8/heldout.csv, compute: 58 rows held out" (files joined by " + ")
  std::string citation(const std::string& kind) const;
};

// Parses the `validation` map; throws config::ConfigError naming the key.
HeldOutErrors parse_heldout_errors(const config::ConfigNode& node);

}  // namespace overlapsim::sim
