// The sequential and decomposed designs on every pair: the sequential result matches the
// host reference (every element written, sampled elements within bf16 tolerance), and
// every chunk count of the decomposed design reproduces the sequential result element
// for element. Irregular K (777) included. Needs >= 2 GPUs.
#include <gtest/gtest.h>

#include <cmath>

#include "kernels/bench/reference.hpp"
#include "kernels/bench/verify.hpp"
#include "kernels/designs/decomposed.hpp"
#include "kernels/designs/sequential.hpp"
#include "kernels/harness/device_buffer.hpp"
#include "kernels/harness/fill.hpp"
#include "tests/kernels/gpu_test_support.hpp"

namespace overlapsim::kernels {
namespace {

using bench::PairReference;
using testing::fresh_seed;
using testing::to_host;

struct RankResult {
  std::vector<double> sequential;
  std::vector<std::vector<double>> decomposed;  // per chunk count
};

std::vector<RankResult> run_pair(PairOp op, const PairShape& shape, const std::vector<int>& chunks,
                                 std::uint64_t seed) {
  const int world = visible_gpu_count();
  std::vector<RankResult> results(world);
  const Status status = run_ranks({}, [&](RankContext& ctx) -> Status {
    const int rank = ctx.comm.rank;
    const DType dtype = DType::BF16;
    const PairSizes sizes = pair_sizes(op, shape, world);
    DeviceBuffer a, b, indices, staging, c, out, workspace;
    OVERLAPSIM_TRY(a.allocate(sizes.a * 2));
    OVERLAPSIM_TRY(b.allocate(sizes.b * 2));
    OVERLAPSIM_TRY(indices.allocate(sizes.indices * 4));
    OVERLAPSIM_TRY(staging.allocate(sizes.staging * 2));
    OVERLAPSIM_TRY(c.allocate(sizes.c * 2));
    OVERLAPSIM_TRY(out.allocate(sizes.out * 2));
    OVERLAPSIM_TRY(workspace.allocate(32 << 20));
    cudaStream_t stream = ctx.compute_stream;
    OVERLAPSIM_TRY(fill_random(a.data(), sizes.a, dtype,
                               bench::input_seed(seed, rank, 0, bench::kBufferA), stream));
    OVERLAPSIM_TRY(fill_random(b.data(), sizes.b, dtype,
                               bench::input_seed(seed, rank, 0, bench::kBufferB), stream));
    if (sizes.indices)
      OVERLAPSIM_TRY(fill_indices(indices.as<std::int32_t>(), sizes.indices,
                                  static_cast<std::int32_t>(shape.table_rows),
                                  bench::input_seed(seed, rank, 0, bench::kBufferIndices), stream));
    cublasLtHandle_t lt = nullptr;
    CUBLAS_CHECK(cublasLtCreate(&lt));
    PairKernels pair;
    Status s =
        pair.initialize(&ctx.comm, lt, op, shape, dtype, workspace.data(), workspace.bytes());
    if (s.ok) s = pair.prepare(1);
    for (int k : chunks)
      if (s.ok) s = pair.prepare(k);
    DecomposedDesign decomposed;
    if (s.ok) s = decomposed.initialize(8);
    PairBuffers v{a.data(),       b.data(), indices.as<std::int32_t>(),
                  staging.data(), c.data(), out.data()};
    const std::size_t result_count =
        op == PairOp::AllGatherGemm || sizes.out == 0 ? sizes.c : sizes.out;
    const auto poison_all = [&]() -> Status {
      OVERLAPSIM_TRY(poison(c.data(), sizes.c, stream));
      if (sizes.out) OVERLAPSIM_TRY(poison(out.data(), sizes.out, stream));
      if (sizes.staging) OVERLAPSIM_TRY(poison(staging.data(), sizes.staging, stream));
      return Status::success();
    };
    if (s.ok) s = poison_all();
    if (s.ok) s = run_sequential(pair, v, stream);
    if (s.ok) s = wait_stream(ctx.comm, stream, "sequential");
    if (s.ok) results[rank].sequential = to_host(v.result(op), result_count, dtype);
    for (int k : chunks) {
      if (s.ok) s = poison_all();
      if (s.ok) s = decomposed.run(pair, v, k, stream, ctx.comm_stream);
      if (s.ok) s = wait_stream(ctx.comm, stream, "decomposed");
      if (s.ok) results[rank].decomposed.push_back(to_host(v.result(op), result_count, dtype));
    }
    cublasLtDestroy(lt);
    return s;
  });
  EXPECT_TRUE(status.ok) << status.message;
  return results;
}

void check_pair(PairOp op, PairShape shape, std::vector<int> chunks) {
  const std::uint64_t seed = fresh_seed();
  const int world = visible_gpu_count();
  const std::vector<RankResult> results = run_pair(op, shape, chunks, seed);
  const PairReference reference(op, shape, DType::BF16, world, seed, 0);
  const std::int64_t rows = reference.result_rows();
  const std::int64_t cols = reference.result_cols();
  for (int me = 0; me < world; ++me) {
    const RankResult& r = results[me];
    ASSERT_EQ(r.sequential.size(), static_cast<std::size_t>(rows * cols));
    std::size_t unwritten = 0;
    for (double v : r.sequential) unwritten += std::isnan(v);
    EXPECT_EQ(unwritten, 0u) << to_string(op) << " rank " << me;
    std::size_t outside = 0;
    for (const bench::Sample& s : bench::sample_positions(rows, cols, 600, seed + me)) {
      const bench::Expected e = reference.result(me, s.row, s.col);
      outside += !(std::fabs(r.sequential[s.row * cols + s.col] - e.value) <= e.tolerance);
    }
    EXPECT_EQ(outside, 0u) << to_string(op) << " rank " << me << ": samples off the reference";
    for (std::size_t i = 0; i < chunks.size(); ++i) {
      ASSERT_EQ(r.decomposed.at(i).size(), r.sequential.size());
      std::size_t differ = 0;
      for (std::size_t j = 0; j < r.sequential.size(); ++j) {
        const double x = r.sequential[j], y = r.decomposed[i][j];
        differ += !(std::fabs(x - y) <= 0x1p-6 * std::fmax(std::fabs(x), 1.0));
      }
      EXPECT_EQ(differ, 0u) << to_string(op) << " decomposed k=" << chunks[i] << " rank " << me
                            << " differs from sequential";
    }
  }
}

TEST(Designs, GemmAllReduce) {
  OVERLAPSIM_REQUIRE_GPUS(2);
  check_pair(PairOp::GemmAllReduce, {512, 320, 777, 0}, {2, 4, 8});
}

TEST(Designs, GemmReduceScatter) {
  OVERLAPSIM_REQUIRE_GPUS(2);
  check_pair(PairOp::GemmReduceScatter, {512, 320, 200, 0}, {2, 4});
}

TEST(Designs, AllGatherGemm) {
  OVERLAPSIM_REQUIRE_GPUS(2);
  check_pair(PairOp::AllGatherGemm, {512, 192, 777, 0}, {2, 4});
}

TEST(Designs, GemmAllToAll) {
  OVERLAPSIM_REQUIRE_GPUS(2);
  check_pair(PairOp::GemmAllToAll, {512, 320, 256, 0}, {2, 4, 8});
}

TEST(Designs, GemvAllReduce) {
  OVERLAPSIM_REQUIRE_GPUS(2);
  check_pair(PairOp::GemvAllReduce, {1, 4096, 777, 0}, {2, 4});
}

TEST(Designs, EmbeddingAllToAll) {
  OVERLAPSIM_REQUIRE_GPUS(2);
  check_pair(PairOp::EmbeddingAllToAll, {1024, 128, 16, 50000}, {2, 4});
}

}  // namespace
}  // namespace overlapsim::kernels
