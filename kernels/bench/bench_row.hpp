#pragma once
// One overlap-bench measurement, as one CSV row (nccl-tests style: tag columns first,
// then shape, then the numbers, then the correctness count). Column names are fixed
// project-wide (summaries and fits read them by name).
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/bench/timing.hpp"
#include "kernels/designs/pair_op.hpp"

namespace overlapsim::kernels::bench {

// Which machine and software produced the rows.
struct DeviceTags {
  std::string gpu;
  std::string driver;
  std::string cuda;
  std::string nccl;
  int world = 1;
};

struct BenchRow {
  std::string op;      // gemm, allreduce, gemm+allreduce, ...
  std::string design;  // pairs: sequential, decomposed; single ops: cublas, own, nccl
  std::string dtype;
  std::int64_t m = 0;
  std::int64_t n = 0;
  std::int64_t k = 0;
  std::uint64_t bytes = 0;  // the collective's nccl-tests bytes (0 for compute alone)
  int chunks = 1;
  double time_s = 0;  // median over iterations of the max over ranks
  double time_min_s = 0;
  double time_max_s = 0;
  double flops = 0;  // of the compute op (0 for a collective alone)
  double busbw_factor = 0;
  std::uint64_t wrong = 0;
};

// Every runner builds its rows through this, in the CSV's order: the tag columns (op,
// design, dtype, then shape, bytes, chunks), then the measurements (times, flops, bus
// bandwidth factor), then the `wrong` count. Unset columns keep BenchRow's zeros.
class RowBuilder {
 public:
  RowBuilder(std::string op, std::string design, std::string dtype);

  RowBuilder& shape(std::int64_t m, std::int64_t n, std::int64_t k);
  RowBuilder& shape(const PairShape& s) { return shape(s.m, s.n, s.k); }
  RowBuilder& bytes(std::uint64_t bytes);
  RowBuilder& chunks(int chunks);

  RowBuilder& time(const Timing& t);  // median, min, max
  RowBuilder& times(double median_s, double min_s, double max_s);
  RowBuilder& flops(double flops);
  RowBuilder& busbw_factor(double factor);

  RowBuilder& wrong(std::uint64_t wrong);

  const BenchRow& row() const { return row_; }

 private:
  BenchRow row_;
};

// Reads GPU name, driver, CUDA runtime and NCCL versions of the current device.
DeviceTags read_device_tags(int world);

std::string csv_header();
std::string csv_line(const DeviceTags& tags, const BenchRow& row);

}  // namespace overlapsim::kernels::bench
