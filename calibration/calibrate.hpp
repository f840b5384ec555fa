#pragma once
// `overlapsim calibrate`: runs a suite's cases through overlap-bench on the local GPUs and
// writes the raw rows to OUT/calibration.csv (overlap-bench's columns plus `ctas` and
// `case`) and OUT/manifest.yaml.
//
// - Resumable: each finished case's rows are appended with one write + fsync, tagged with
//   the case key; a rerun with the same --out skips every case already in the CSV. A rerun
//   with a different suite, GPU or GPU count is refused (exit 2), so one directory never
//   mixes measurements.
// - No GPU: without an overlap-bench binary, or when a 1 KiB probe call reports no
//   visible GPU, it stops before writing anything (exit 2).
// - Progress on stderr: suite, case i/N, section, rows so far, elapsed and ETA (from the
//   cases' estimated device time, rescaled by the time the finished ones took).
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "calibration/suite.hpp"

namespace overlapsim::calibration {

struct CalibrateOptions {
  std::string out_dir;
  std::string suite_path = "calibration/suites/default.yaml";
  std::string bench;  // overlap-bench binary
  int gpus = 0;       // 0: the suite's
  bool dry_run = false;
  double timeout_s = 300;  // per overlap-bench call (its own --timeout is per NCCL wait)
};

struct CalibrateResult {
  int cases_total = 0;
  int cases_skipped = 0;  // found finished in the CSV
  int cases_run = 0;
  int rows_written = 0;
  double estimate_s = 0;  // of the cases still to run, before running them
  // Cases whose call failed but that may fail (SuiteCase::may_fail: interference), as
  // "key: reason"; their rows are missing and a rerun with the same --out retries them.
  std::vector<std::string> failed_cases;
};

// Thrown for "no GPU" and for resume conflicts (the CLI exits 2).
class CalibrateUnavailable : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Throws config::ConfigError (bad suite), CalibrateUnavailable, or std::runtime_error
// for an overlap-bench call that failed (the rows of the cases before it are kept).
CalibrateResult run_calibration(const CalibrateOptions& options,
                                const std::function<void(const std::string&)>& progress = {});

}  // namespace overlapsim::calibration
