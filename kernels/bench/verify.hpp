#pragma once
// Correctness of one measured variant: after poisoning the outputs and running it once,
// `wrong` = max(elements left unwritten (still NaN), elements that differ from the
// sequential design's result when given) + sampled elements outside tolerance of the
// host reference; the bench sums it over ranks.
#include <cstdint>
#include <functional>
#include <vector>

#include "kernels/bench/bench_env.hpp"
#include "kernels/bench/reference.hpp"

namespace overlapsim::kernels::bench {

struct Sample {
  std::int64_t row = 0;
  std::int64_t col = 0;
};

// Reproducible sample positions in a rows x cols result, `count` of them.
std::vector<Sample> sample_positions(std::int64_t rows, std::int64_t cols, int count,
                                     std::uint64_t seed);
// Host work per sample is about `terms` multiply-adds: fewer samples for long dots.
int sample_count(std::int64_t terms);

struct CheckInput {
  const void* result = nullptr;  // device, rows x cols row-major
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  DType dtype = DType::BF16;
  std::vector<Sample> samples;
  std::function<Expected(const Sample&)> expected;
  const void* same_as = nullptr;  // optional device buffer the result must match
  double same_as_abs_tol = 0;
};

// Local count on this rank (call after the run has drained).
Status check_result(BenchEnv& env, const CheckInput& input, std::uint64_t* wrong);

// A collective's result on this rank (`count` elements, drained) against `reference` at
// 1024 sampled positions drawn with `sample_seed`; *wrong is summed over ranks.
Status check_collective_result(BenchEnv& env, const CollectiveReference& reference,
                               const void* result, std::size_t count, DType dtype,
                               std::uint64_t sample_seed, std::uint64_t* wrong);

// Sum of a local count over ranks.
Status sum_over_ranks(BenchEnv& env, std::uint64_t* count);

}  // namespace overlapsim::kernels::bench
