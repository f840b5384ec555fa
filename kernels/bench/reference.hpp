#pragma once
// Host references, in double, for sampled output elements. Inputs are never copied back:
// every input element is a pure function of its seed and index (random_values.hpp), so
// the host recomputes exactly what the GPU read.
//
// Tolerance of an element: 4 * eps * (sum of the magnitudes of the per-rank terms that
// were rounded to the output type + the rms of the products summed), eps = 2^-8 (bf16)
// or 2^-11 (fp16): room for each rank's output rounding, the reduction's rounding and
// fp32 accumulation, while a missing or misplaced chunk (an error of the size of the
// value itself) fails.
#include <cstdint>
#include <vector>

#include "kernels/designs/pair_op.hpp"
#include "kernels/harness/dtype.hpp"

namespace overlapsim::kernels::bench {

// Logical buffers of one input set; buffer_seed(run_seed, rank, set * 16 + id).
enum BufferId : int { kBufferA = 0, kBufferB = 1, kBufferIndices = 2, kBufferCollective = 3 };

std::uint64_t input_seed(std::uint64_t run_seed, int rank, int set, BufferId buffer);
double unit_roundoff(DType dtype);

struct Expected {
  double value = 0;
  double tolerance = 0;
};

class PairReference {
 public:
  PairReference(PairOp op, const PairShape& shape, DType dtype, int world, std::uint64_t run_seed,
                int set);
  // The op's output on `rank` at its natural (row, col) (before any collective).
  Expected op_output(int rank, std::int64_t row, std::int64_t col) const;
  // The pair's final result on rank `me` at (row, col) of its result buffer.
  Expected result(int me, std::int64_t row, std::int64_t col) const;
  // Result buffer extent (rows x cols, row-major).
  std::int64_t result_rows() const;
  std::int64_t result_cols() const { return shape_.n; }

 private:
  struct Terms {
    double value = 0;
    double abs_sum = 0;  // sum over ranks of |rank's rounded output|
    double rms_sq = 0;   // sum over ranks of the products' squares
  };
  Terms op_terms(int rank, std::int64_t row, std::int64_t col) const;
  Expected finish(const Terms& t) const;

  PairOp op_;
  PairShape shape_;
  DType dtype_;
  int world_;
  std::uint64_t run_seed_;
  int set_;
};

// Collectives alone: rank r's input element i is random_value(input_seed(r, set,
// kBufferCollective), i).
class CollectiveReference {
 public:
  CollectiveReference(CollectiveOp op, std::size_t send_count, DType dtype, int world,
                      std::uint64_t run_seed, int set);
  std::size_t recv_count() const;
  Expected result(int me, std::size_t index) const;

 private:
  double input(int rank, std::size_t index) const;
  CollectiveOp op_;
  std::size_t send_count_;
  DType dtype_;
  int world_;
  std::uint64_t run_seed_;
  int set_;
};

// Counts samples whose measured value is outside tolerance (or not finite).
std::uint64_t count_outside(const std::vector<double>& measured,
                            const std::vector<Expected>& expected);

}  // namespace overlapsim::kernels::bench
