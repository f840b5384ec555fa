#pragma once
// manifest.yaml of a calibration data directory: which machine and software measured
// the rows, when, from which suite, and which CSV files hold them. `overlapsim fit`
// checks every row against it (a row from another GPU is an error), and the fitted
// profile copies its provenance.
//
//   format: 1
//   gpu: NVIDIA H200            # as overlap-bench's gpu column reports it
//   gpus: 2                     # GPUs of the machine
//   driver: "580.159.04"
//   cuda: "13.0"
//   nccl: "2.28.3"
//   host: overlapsim device lease (nvidia-h200-x2)
//   date: "2026-11-22"
//   suite: calibration/suites/default.yaml
//   suite_hash: fnv1a64:0123456789abcdef
//   files:
//     - {path: calibration.csv, gpus: 2, origin: "overlapsim calibrate"}
//   heldout: heldout.csv        # optional: rows with these split keys are not fitted
#include <string>
#include <vector>

namespace overlapsim::calibration {

struct ManifestFile {
  std::string path;    // relative to the data directory
  int gpus = 0;        // GPUs the file's rows ran on (its world column)
  std::string origin;  // where the file came from (a command, or the path it was copied from)
};

struct Manifest {
  std::string dir;   // the data directory (set by load_manifest)
  std::string file;  // path of manifest.yaml
  std::string gpu;
  int gpus = 0;
  std::string driver, cuda, nccl, host, date;
  std::string suite, suite_hash;
  std::vector<ManifestFile> files;
  std::string heldout;  // empty: no held-out split
  std::string notes;
};

// Throws config::ConfigError naming file:line:col for unknown/missing keys.
Manifest load_manifest(const std::string& data_dir);
std::string format_manifest(const Manifest& m);

// 64-bit FNV-1a of the text, "fnv1a64:<16 hex digits>" (the suite hash).
std::string fnv1a64_hex(const std::string& text);

}  // namespace overlapsim::calibration
