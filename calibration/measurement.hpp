#pragma once
// overlap-bench rows (kernels/bench/bench_row.hpp, nccl-tests style) as typed
// measurements: tag columns, op, design, shape, bytes, chunks and the timings in seconds.
// `overlapsim calibrate` adds two columns of its own: `ctas` (the NCCL_MAX_CTAS the case
// ran with, 0 = NCCL's default) and `case` (the suite case that produced the row).
#include <cstdint>
#include <string>
#include <vector>

#include "calibration/csv.hpp"

namespace overlapsim::calibration {

struct Measurement {
  std::string file;  // as given to read_measurements
  int line = 0;      // the row's line in that file
  std::string gpu, driver, cuda, nccl;
  int world = 1;       // GPUs (ranks) the row was measured on
  std::string op;      // gemm, allreduce, gemm+allreduce, ...
  std::string design;  // cublas, own, nccl, sequential, decomposed, tilewise, ...
  std::string dtype;   // bf16, fp16, ...
  std::int64_t m = 0, n = 0, k = 0;
  std::uint64_t bytes = 0;  // a collective's nccl-tests bytes; not meaningful for compute alone
  int chunks = 1;
  double time_s = 0, time_min_s = 0, time_max_s = 0;
  std::uint64_t wrong = 0;
  int ctas = 0;          // NCCL_MAX_CTAS of the case; 0: NCCL's default
  std::string case_key;  // calibrate's case; empty for rows from plain overlap-bench runs

  // "file:line", how fitted numbers cite their rows.
  std::string where() const;
};

// The columns a measurement file must have (the optional ones: tflops, algbw_GBps,
// busbw_GBps, ctas, case).
const std::vector<std::string>& required_columns();

// Throws config::ConfigError naming file:line:column for a missing column, a truncated
// row, or a value that is not a number of the column's kind. A calibrate CSV must be whole:
// rows no completion marker vouches for are an error (calibration/calibrate_csv.hpp).
std::vector<Measurement> read_measurements(const std::string& path);
// Several files' rows, file by file (each row keeps its own file:line).
std::vector<Measurement> read_measurements(const std::vector<std::string>& paths);
std::vector<Measurement> parse_measurements(const CsvTable& table);

// What kind of row it is.
bool is_collective_op(const std::string& op);  // allreduce, allgather, reducescatter, alltoall, ...
bool is_compute_op(const std::string& op);     // gemm, gemv, embedding
bool is_pair_op(const std::string& op);        // gemm+allreduce, ...
// A compute row timed inside a pair case's loop (calibrate's case key names a pair op),
// where the GPU alternates the op with collectives instead of running it back to back. Not
// the tile-wise runner's own-GEMM, CTA-limited NCCL and peer-copy rows of such a case:
// those run in loops of their own.
bool measured_in_pair_loop(const Measurement& m);

// The NCCL CTA limit a collective row ran under: the `ctas` column, or for the tilewise
// helper's `nccl_tilewise` rows (a communicator split with maxCTAs = s) the chunks column,
// which holds s there. 0: NCCL's default.
int effective_ctas(const Measurement& m);

// The held-out split key: the thing a row measures that must not be in the fit when the
// row is held out. Collectives alone: "<op>@<bytes>" (whatever pair case produced them);
// every row with a compute shape (compute alone, pairs, and their parts): "<m>x<n>x<k>".
std::string split_key(const Measurement& m);

}  // namespace overlapsim::calibration
