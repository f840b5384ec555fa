#pragma once
// Calibration suites (calibration/suites/*.yaml): what `overlapsim calibrate` measures,
// as sections that expand into cases — one overlap-bench call each, the unit of
// resumption.
//
//   format: 1
//   name: default
//   gpus: 2                                   # ranks per call (--world); --gpus overrides
//   defaults: {dtype: bf16, warmup: 3, iterations: 10}
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

  // overlap-bench arguments for this case (without --world and --output).
  std::vector<std::string> bench_args() const;
  // Rough device seconds (process start, NCCL init, warm-up and timed iterations at
  // ~700 TFLOP/s and ~250 GB/s busbw), for the progress bar's ETA and --dry-run.
  double estimate_s() const;
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
