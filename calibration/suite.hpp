#pragma once
// Calibration suites (calibration/suites/*.yaml): what `overlapsim calibrate` measures,
// as sections that expand into cases — one overlap-bench call each, the unit of
// resumption.
//
//   format: 1
//   name: default
//   gpus: 2                                   # ranks per call (--world); --gpus overrides
//   defaults: {dtype: bf16, warmup: 3, iterations: 10, min_time: 20ms, warmup_time: 100ms}
//     # min_time: timed work per measurement, at least (more iterations when needed);
//     # warmup_time: untimed work first, so the GPU reaches its power-limited clock
//   sections:
//     - name: gemm                            # compute alone over a full M x N x K grid
//       op: gemm
//       designs: [cublas, own]
//       grid: {m: [1024, 4096], n: [1024, 4096], k: [1024, 4096]}
//     - name: gemv
//       op: gemv
//       shapes: [[1, 8192, 8192]]
//     - name: embedding
//       op: embedding
//       shapes: [[65536, 128, 32]]
//       table_rows: 4000000
//     - name: collectives                     # every op over sizes from..to (x factor)
//       ops: [allreduce, alltoall]
//       bytes: {from: 1KiB, to: 4GiB, factor: 4}
//       ctas: [0, 4, 8]                        # NCCL_MAX_CTAS per call; 0 = NCCL's default
//     - name: designs                         # op-collective pairs
//       ops: [gemm+allreduce]
//       designs: [sequential, decomposed]
//       chunks: [2, 4]
//       shapes: [[8192, 8192, 2048]]
//     - name: interference                    # GEMM x collective side by side
//       op: interference
//       shapes: [[8192, 8192, 4096]]
//       collectives: [allreduce, alltoall]     # one case per collective
//       bytes: [16MiB, 128MiB]
//       ctas: [4, 8, 16, 32, 0]                # overlap-bench --ctas (communicator splits
//                                              # in one call), not NCCL_MAX_CTAS
//
// Errors are config::ConfigError naming file:line:column, the key and the expected form.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace overlapsim::calibration {

struct SuiteCase {
  std::string key;  // stable id, written into every row's `case` column
  std::string section;
  std::string op;
  std::vector<std::string> designs;  // empty: overlap-bench's default for the op
  std::vector<std::string> shapes;   // "MxNxK"
  std::vector<std::uint64_t> bytes;
  std::vector<int> chunks;
  std::string dtype;
  int warmup = 3, iterations = 10;
  std::int64_t table_rows = 0;
  int ctas = 0;  // NCCL_MAX_CTAS for the call; 0: not set
  double min_time_s = 0;  // overlap-bench --min-time-ms (0: not passed)
  double warmup_s = 0;    // overlap-bench --warmup-ms
  // op interference: the collective of the case and the CTA limits (--ctas) of its splits.
  std::vector<std::string> collectives;
  std::vector<int> interference_ctas;

  // overlap-bench arguments for this case (without --world and --output).
  std::vector<std::string> bench_args() const;
  // Rough device seconds (process start, NCCL init, warm-up and timed iterations at
  // ~700 TFLOP/s and ~250 GB/s busbw, each measurement at least min_time plus
  // warmup_time), for the progress bar's ETA and --dry-run.
  double estimate_s() const;
  // A failed call of this case is reported and skipped instead of ending the run: the
  // interference cases (measured only after everything else) and the tile-wise ones (our
  // own overlap kernels; a hang there must not cost the cases after it). A rerun retries.
  bool may_fail() const;
};

struct Suite {
  std::string file;
  std::string name;
  std::string hash;  // fnv1a64 of the file's bytes
  int gpus = 1;
  std::vector<SuiteCase> cases;
};

Suite load_suite(const std::string& path);
Suite parse_suite(const std::string& yaml, const std::string& name);

// At most this many shapes or sizes per overlap-bench call, so an interruption loses
// little and a resume skips most of the work.
inline constexpr std::size_t kMaxItemsPerCase = 12;

}  // namespace overlapsim::calibration
