// The fused GEMM + all-to-all (kernels/fused/gemm_alltoall.hpp): shape checks (no GPU);
// on every visible GPU (2 or more, sm_90) its received rows bit for bit against the own
// GEMM followed by NCCL's all-to-all of the same C, for full and edge tiles; 200 calls back
// to back with no host synchronisation; a small case for compute-sanitizer; a first call
// in a fresh process under lazy module loading.
#include "kernels/fused/gemm_alltoall.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cstdlib>
#include <string>
#include <vector>

#include "kernels/harness/device_buffer.hpp"
#include "kernels/harness/fill.hpp"
#include "tests/kernels/gpu_test_support.hpp"

namespace overlapsim::kernels::fused {
namespace {

using testing::fresh_seed;

TEST(GemmAllToAll, RejectsBadShapes) {
  EXPECT_TRUE(GemmAllToAll::can_implement({512, 768, 512, 2}, DType::BF16).ok);
  EXPECT_TRUE(GemmAllToAll::can_implement({512, 200, 72, 4}, DType::FP16).ok);
  EXPECT_FALSE(GemmAllToAll::can_implement({512, 768, 512, 2}, DType::FP8_E4M3).ok);
  EXPECT_FALSE(GemmAllToAll::can_implement({384, 768, 512, 2}, DType::BF16).ok);  // 128 x 2 ∤ m
  EXPECT_FALSE(GemmAllToAll::can_implement({512, 767, 512, 2}, DType::BF16).ok);  // odd n
  EXPECT_FALSE(GemmAllToAll::can_implement({512, 768, 500, 2}, DType::BF16).ok);  // 8 ∤ k
  EXPECT_FALSE(GemmAllToAll::can_implement({512, 768, 512, 0}, DType::BF16).ok);
  EXPECT_FALSE(GemmAllToAll::can_implement({2048, 768, 512, 9}, DType::BF16).ok);
}

// The own GEMM needs sm_90 on every GPU the test uses.
bool all_sm90(int gpus) {
  for (int d = 0; d < gpus; ++d) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, d) != cudaSuccess || prop.major != 9 || prop.minor != 0)
      return false;
  }
  return true;
}

#define REQUIRE_HOPPER_PAIR() \
  OVERLAPSIM_REQUIRE_GPUS(2); \
  if (!all_sm90(visible_gpu_count())) GTEST_SKIP() << "the own GEMM needs sm_90 (Hopper) GPUs"

HarnessOptions blocking() {
  HarnessOptions h;
  h.blocking_comms = true;
  return h;
}

Status compare_bits(const void* got, const void* expected, std::size_t count, cudaStream_t s,
                    const std::string& what) {
  std::uint64_t differ = 0;
  OVERLAPSIM_TRY(count_mismatches(got, expected, count, DType::BF16, 0.0, 0.0, s, &differ));
  if (differ != 0)
    return Status::failure(what + ": " + std::to_string(differ) + " of " + std::to_string(count) +
                           " elements differ");
  return Status::success();
}

// A (sets of m x k) and B (n x k) of this rank, random from `seed`.
struct Inputs {
  DeviceBuffer a, b;
  const void* a_set(const GemmAllToAllShape& shape, int set) const {
    return a.as<std::uint16_t>() + static_cast<std::size_t>(set * shape.m * shape.k);
  }
};

Status make_inputs(const GemmAllToAllShape& shape, int rank, std::uint64_t seed, int sets,
                   cudaStream_t s, Inputs* in) {
  const std::size_t a_count = static_cast<std::size_t>(shape.m * shape.k) * sets;
  const std::size_t b_count = static_cast<std::size_t>(shape.n * shape.k);
  OVERLAPSIM_TRY(in->a.allocate(a_count * 2));
  OVERLAPSIM_TRY(in->b.allocate(b_count * 2));
  OVERLAPSIM_TRY(fill_random(in->a.data(), a_count, DType::BF16, buffer_seed(seed, rank, 0), s));
  return fill_random(in->b.data(), b_count, DType::BF16, buffer_seed(seed, rank, 1), s);
}

// The fused design `calls` times against the own GEMM + NCCL's all-to-all, bit for bit.
Status check_against_sequential(RankContext& ctx, std::array<std::int64_t, 3> mnk_per_rank,
                                std::uint64_t seed, int calls) {
  const int world = ctx.comm.world, rank = ctx.comm.rank;
  const GemmAllToAllShape shape{mnk_per_rank[0] * world, mnk_per_rank[1], mnk_per_rank[2], world};
  const std::string what = "rank " + std::to_string(rank) + " " + std::to_string(shape.m) + "x" +
                           std::to_string(shape.n) + "x" + std::to_string(shape.k);
  cudaStream_t s = ctx.compute_stream;
  OVERLAPSIM_TRY(quiesce(ctx, "gemm-a2a test alloc"));
  Inputs in;
  OVERLAPSIM_TRY(make_inputs(shape, rank, seed, 1, s, &in));
  const std::size_t count = static_cast<std::size_t>(shape.m * shape.n);
  DeviceBuffer c, seq;
  OVERLAPSIM_TRY(c.allocate(count * 2));
  OVERLAPSIM_TRY(seq.allocate(count * 2));
  GemmAllToAll fused;
  GemmAllToAllOptions options;
  options.timeout_s = 30;
  OVERLAPSIM_TRY(fused.initialize(&ctx.comm, shape, DType::BF16, options));
  OVERLAPSIM_TRY(quiesce(ctx, "gemm-a2a test ready"));
  OVERLAPSIM_TRY(poison(seq.data(), count, s));
  OVERLAPSIM_TRY(fused.run_gemm(in.a.data(), in.b.data(), c.data(), s));
  OVERLAPSIM_TRY(fused.exchange(c.data(), seq.data(), s));
  OVERLAPSIM_TRY(wait_stream(ctx.comm, s, "gemm-a2a sequential"));
  std::uint64_t unwritten = 0;
  OVERLAPSIM_TRY(count_nonfinite(seq.data(), count, DType::BF16, s, &unwritten));
  if (unwritten != 0)
    return Status::failure(what + ": sequential left " + std::to_string(unwritten) + " unwritten");
  for (int call = 0; call < calls; ++call) {
    OVERLAPSIM_TRY(fused.run(in.a.data(), in.b.data(), s));
    OVERLAPSIM_TRY(wait_stream(ctx.comm, s, "gemm-a2a fused"));
    OVERLAPSIM_TRY(fused.check_timeout(s));
    OVERLAPSIM_TRY(compare_bits(fused.received(), seq.data(), count, s,
                                what + " fused call " + std::to_string(call)));
    // Every rank has compared before any rank's next call overwrites a parity.
    OVERLAPSIM_TRY(quiesce(ctx, "gemm-a2a compared"));
  }
  return quiesce(ctx, "gemm-a2a test done");
}

TEST(GemmAllToAll, MatchesSequentialBits) {
  REQUIRE_HOPPER_PAIR();
  const std::uint64_t seed = fresh_seed();
  const Status status = run_ranks(blocking(), [&](RankContext& ctx) -> Status {
    OVERLAPSIM_TRY(check_against_sequential(ctx, {256, 768, 512}, seed, 3));
    OVERLAPSIM_TRY(check_against_sequential(ctx, {128, 200, 72}, seed, 2));  // edge tiles
    OVERLAPSIM_TRY(check_against_sequential(ctx, {384, 4096, 1024}, seed, 2));
    return check_against_sequential(ctx, {1024, 7168, 256}, seed, 2);
  });
  ASSERT_TRUE(status.ok) << status.message;
}

TEST(GemmAllToAll, SmallForSanitizer) {
  REQUIRE_HOPPER_PAIR();
  const std::uint64_t seed = fresh_seed();
  const Status status = run_ranks(blocking(), [&](RankContext& ctx) -> Status {
    return check_against_sequential(ctx, {128, 512, 128}, seed, 2);
  });
  ASSERT_TRUE(status.ok) << status.message;
}

// 200 calls enqueued back to back (A rotating over 3 sets), each followed on the stream
// by a copy of its received rows (the consumer), no host synchronisation between them:
// the counters and the receive buffers' parity must keep every call's rows apart while
// ranks drift by up to a call.
TEST(GemmAllToAll, BackToBack200Calls) {
  REQUIRE_HOPPER_PAIR();
  const std::uint64_t seed = fresh_seed();
  constexpr int kCalls = 200, kSets = 3;
  const Status status = run_ranks(blocking(), [&](RankContext& ctx) -> Status {
    const int world = ctx.comm.world, rank = ctx.comm.rank;
    const GemmAllToAllShape shape{256 * world, 1024, 256, world};
    cudaStream_t s = ctx.compute_stream;
    OVERLAPSIM_TRY(quiesce(ctx, "b2b alloc"));
    Inputs in;
    OVERLAPSIM_TRY(make_inputs(shape, rank, seed, kSets, s, &in));
    const std::size_t count = static_cast<std::size_t>(shape.m * shape.n);
    DeviceBuffer c, expected, out;
    OVERLAPSIM_TRY(c.allocate(count * 2));
    OVERLAPSIM_TRY(expected.allocate(kSets * count * 2));
    OVERLAPSIM_TRY(out.allocate(kCalls * count * 2));
    GemmAllToAll fused;
    OVERLAPSIM_TRY(fused.initialize(&ctx.comm, shape, DType::BF16));
    OVERLAPSIM_TRY(quiesce(ctx, "b2b ready"));
    for (int set = 0; set < kSets; ++set) {
      OVERLAPSIM_TRY(fused.run_gemm(in.a_set(shape, set), in.b.data(), c.data(), s));
      OVERLAPSIM_TRY(fused.exchange(c.data(), expected.as<std::uint16_t>() + set * count, s));
    }
    OVERLAPSIM_TRY(poison(out.data(), kCalls * count, s));
    OVERLAPSIM_TRY(wait_stream(ctx.comm, s, "b2b expected"));
    for (int call = 0; call < kCalls; ++call) {
      OVERLAPSIM_TRY(fused.run(in.a_set(shape, call % kSets), in.b.data(), s));
      CUDA_CHECK(cudaMemcpyAsync(out.as<std::uint16_t>() + call * count, fused.received(),
                                 count * 2, cudaMemcpyDeviceToDevice, s));
    }
    OVERLAPSIM_TRY(wait_stream(ctx.comm, s, "b2b calls"));
    OVERLAPSIM_TRY(fused.check_timeout(s));
    for (int call = 0; call < kCalls; ++call)
      OVERLAPSIM_TRY(
          compare_bits(out.as<std::uint16_t>() + call * count,
                       expected.as<std::uint16_t>() + (call % kSets) * count, count, s,
                       "rank " + std::to_string(rank) + " call " + std::to_string(call)));
    return quiesce(ctx, "b2b done");
  });
  ASSERT_TRUE(status.ok) << status.message;
}

TEST(GemmAllToAllColdStart, Child) {
  if (std::getenv("OVERLAPSIM_GEMM_A2A_COLD_CHILD") == nullptr)
    GTEST_SKIP() << "runs only as the child of FreshProcessFirstCallCompletes";
  const std::uint64_t seed = 5;
  const Status status = run_ranks(blocking(), [&](RankContext& ctx) -> Status {
    const GemmAllToAllShape shape{512 * ctx.comm.world, 2048, 1024, ctx.comm.world};
    Inputs in;
    OVERLAPSIM_TRY(make_inputs(shape, ctx.comm.rank, seed, 1, ctx.compute_stream, &in));
    GemmAllToAll fused;
    GemmAllToAllOptions options;
    options.timeout_s = 20;
    OVERLAPSIM_TRY(fused.initialize(&ctx.comm, shape, DType::BF16, options));
    OVERLAPSIM_TRY(quiesce(ctx, "cold start ready"));
    // The fused calls first, then a kernel of another module behind them on every rank.
    OVERLAPSIM_TRY(fused.run(in.a.data(), in.b.data(), ctx.compute_stream));
    OVERLAPSIM_TRY(fill_random(in.b.data(), 64, DType::BF16, 7, ctx.compute_stream));
    OVERLAPSIM_TRY(fused.run(in.a.data(), in.b.data(), ctx.compute_stream));
    OVERLAPSIM_TRY(wait_stream(ctx.comm, ctx.compute_stream, "cold start"));
    return fused.check_timeout(ctx.compute_stream);
  });
  ASSERT_TRUE(status.ok) << status.message;
}

// A fresh process with lazy module loading: the first fused calls must complete (the push
// GEMM and the wait kernel are loaded in initialize, before any rank waits on a peer).
TEST(GemmAllToAllColdStart, FreshProcessFirstCallCompletes) {
  REQUIRE_HOPPER_PAIR();
  const testing::ChildEnd end = testing::run_lazy_loading_child("GemmAllToAllColdStart.Child",
                                                                "OVERLAPSIM_GEMM_A2A_COLD_CHILD");
  testing::expect_cold_start_child_passed(end);
}

}  // namespace
}  // namespace overlapsim::kernels::fused
