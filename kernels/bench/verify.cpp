#include "kernels/bench/verify.hpp"

#include <algorithm>
#include <cmath>
#include <random>

#include "kernels/harness/fill.hpp"

namespace overlapsim::kernels::bench {

std::vector<Sample> sample_positions(std::int64_t rows, std::int64_t cols, int count,
                                     std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<std::int64_t> row(0, rows - 1);
  std::uniform_int_distribution<std::int64_t> col(0, cols - 1);
  std::vector<Sample> samples;
  samples.reserve(static_cast<std::size_t>(count));
  // Corners first: edge rows/columns are where indexing mistakes show.
  samples.push_back({0, 0});
  samples.push_back({rows - 1, cols - 1});
  while (static_cast<int>(samples.size()) < count) samples.push_back({row(rng), col(rng)});
  return samples;
}

int sample_count(std::int64_t terms) {
  const std::int64_t budget = std::int64_t{1} << 24;
  return static_cast<int>(
      std::clamp<std::int64_t>(budget / std::max<std::int64_t>(terms, 1), 32, 256));
}

Status check_result(BenchEnv& env, const CheckInput& in, std::uint64_t* wrong) {
  cudaStream_t stream = env.ctx->compute_stream;
  const std::size_t count = static_cast<std::size_t>(in.rows * in.cols);
  std::uint64_t unwritten = 0;
  OVERLAPSIM_TRY(count_nonfinite(in.result, count, in.dtype, stream, &unwritten));
  std::vector<std::uint64_t> flat;
  std::vector<Expected> expected;
  for (const Sample& s : in.samples) {
    flat.push_back(static_cast<std::uint64_t>(s.row * in.cols + s.col));
    expected.push_back(in.expected(s));
  }
  std::vector<double> measured;
  OVERLAPSIM_TRY(gather_values(in.result, in.dtype, flat, stream, &measured));
  std::uint64_t differing = 0;
  if (in.same_as != nullptr)
    OVERLAPSIM_TRY(count_mismatches(in.result, in.same_as, count, in.dtype,
                                    4.0 * unit_roundoff(in.dtype), in.same_as_abs_tol, stream,
                                    &differing));
  // A NaN left in the result is also a mismatch against `same_as`: count it once.
  *wrong = std::max(unwritten, differing) + count_outside(measured, expected);
  return Status::success();
}

Status sum_over_ranks(BenchEnv& env, std::uint64_t* count) {
  std::vector<double> values{static_cast<double>(*count)};
  OVERLAPSIM_TRY(allreduce_host(env.ctx->comm, env.ctx->compute_stream, values, ncclSum));
  *count = static_cast<std::uint64_t>(values[0]);
  return Status::success();
}

Status check_collective_result(BenchEnv& env, const CollectiveReference& reference,
                               const void* result, std::size_t count, DType dtype,
                               std::uint64_t sample_seed, std::uint64_t* wrong) {
  CheckInput check;
  check.result = result;
  check.rows = 1;
  check.cols = static_cast<std::int64_t>(count);
  check.dtype = dtype;
  check.samples = sample_positions(1, check.cols, 1024, sample_seed);
  check.expected = [&](const Sample& s) {
    return reference.result(env.rank(), static_cast<std::size_t>(s.col));
  };
  *wrong = 0;
  OVERLAPSIM_TRY(check_result(env, check, wrong));
  return sum_over_ranks(env, wrong);
}

}  // namespace overlapsim::kernels::bench
