#pragma once
// `overlapsim calibrate`: runs a suite's cases through overlap-bench on the local GPUs and
// writes the raw rows to OUT/calibration.csv (overlap-bench's columns plus `ctas` and
// `case`) and OUT/manifest.yaml.
//
// - Resumable, and never losing or mislabelling a row: each case's call writes a temp file
//   of its own (named by this run's pid and the case's index); when the call has succeeded
//   and its rows parse, they are appended with a completion marker (row count + checksum,
//   calibration/calibrate_csv.hpp) in one write + fsync. A rerun with the same --out skips
//   exactly the cases a marker vouches for, and cuts away (saying so on stderr) any lines
//   after the last marker, whose case then runs again. A rerun with a different suite, GPU
//   or GPU count is refused (exit 2), so one directory never mixes measurements.
// - One run per directory: a record lock on OUT/.calibrate.lock; a second run exits 2.
// - No orphaned call: overlap-bench leads its own process group, dies with calibrate
//   (calibration/calibrate_process.hpp), and is killed with its group on a timeout or a
//   SIGINT/SIGTERM/SIGHUP/SIGQUIT to calibrate.
// - No GPU: without an overlap-bench binary, or when a 1 KiB probe call reports no
//   visible GPU, it stops before writing the CSV or the manifest (exit 2).
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
  int cases_skipped = 0;  // found finished (under a completion marker) in the CSV
  int cases_run = 0;
  int rows_written = 0;
  int discarded_lines = 0;  // lines after the last completion marker, cut away on resume
  double estimate_s = 0;    // of the cases still to run, before running them
  // Cases whose call failed but that may fail (SuiteCase::may_fail: interference), as
  // "key: reason"; their rows are missing and a rerun with the same --out retries them.
  std::vector<std::string> failed_cases;
};

// Thrown for "no GPU", for resume conflicts and for a directory another run holds (the CLI
// exits 2).
class CalibrateUnavailable : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Throws config::ConfigError (bad suite, a calibration.csv whose marked rows disagree with
// their markers), CalibrateUnavailable, or std::runtime_error for an overlap-bench call
// that failed or a write or fsync that failed (the cases marked before it are kept).
CalibrateResult run_calibration(const CalibrateOptions& options,
                                const std::function<void(const std::string&)>& progress = {});

}  // namespace overlapsim::calibration
