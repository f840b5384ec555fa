// The fused all-to-all + embedding-bag backward (kernels/fused/embedding_alltoall_backward.hpp):
// shape checks (no GPU); on one GPU the fused and sequential designs' per-lookup gradient
// against a host reference, every element, for several dims and poolings in bf16 and fp16;
// on every visible GPU (2 or more) the fused design bit for bit against the sequential one
// (NCCL send/recv, then our expansion) and every element against the host reference, for
// several calls; 200 calls back to back with no host synchronisation; a small case for
// compute-sanitizer; a first call in a fresh process under lazy module loading.
#include "kernels/fused/embedding_alltoall_backward.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "kernels/harness/device_buffer.hpp"
#include "kernels/harness/fill.hpp"
#include "tests/kernels/gpu_test_support.hpp"

namespace overlapsim::kernels::fused {
namespace {

using testing::fresh_seed;

// Tables with the given poolings (rows do not matter to the backward).
EmbeddingAllToAllShape make_shape(const std::vector<std::int64_t>& pooling, std::int64_t dim,
                                  std::int64_t local_batch, int world) {
  EmbeddingAllToAllShape shape;
  for (std::int64_t p : pooling) shape.tables.push_back({1000, p});
  shape.owner = shard_tables(shape.tables, world);
  shape.dim = dim;
  shape.local_batch = local_batch;
  shape.world = world;
  return shape;
}

// The DCNv2 multi-hot sizes (MLPerf Training recommendation_v2).
const std::vector<std::int64_t> kDcnPooling = {3, 2, 1, 2, 6, 1, 1,  1,   1,  7,  3, 8, 1,
                                               6, 9, 5, 1, 1, 1, 12, 100, 27, 10, 3, 1, 1};

// Rank r's gradient rows ([tables][B][dim]) are fill_random(grad_seed(seed, r, set)).
std::uint64_t grad_seed(std::uint64_t seed, int rank, int set) {
  return buffer_seed(seed, rank, 7 + set);
}

// Checked before anything is allocated, so no GPU is needed.
TEST(EmbeddingAllToAllBackward, RejectsBadOptions) {
  const EmbeddingAllToAllShape shape = make_shape({3, 5}, 128, 16, 1);
  EmbeddingAllToAllBackwardOptions o;
  o.push_warps = 8;
  EmbeddingAllToAllBackward a;
  EXPECT_FALSE(a.initialize(nullptr, shape, DType::BF16, o).ok);
  o.push_warps = 0;
  o.claim_tiles = 65;
  EmbeddingAllToAllBackward b;
  EXPECT_FALSE(b.initialize(nullptr, shape, DType::BF16, o).ok);
  o.claim_tiles = -1;
  EmbeddingAllToAllBackward c;
  EXPECT_FALSE(c.initialize(nullptr, shape, DType::BF16, o).ok);
}

TEST(EmbeddingAllToAllBackward, RejectsBadShapes) {
  EmbeddingAllToAllShape shape = make_shape({3, 5}, 128, 16, 2);
  EXPECT_TRUE(EmbeddingAllToAllBackward::can_implement(shape, DType::BF16).ok);
  EXPECT_TRUE(EmbeddingAllToAllBackward::can_implement(shape, DType::FP16).ok);
  EXPECT_FALSE(EmbeddingAllToAllBackward::can_implement(shape, DType::FP8_E4M3).ok);
  shape.dim = 100;
  EXPECT_FALSE(EmbeddingAllToAllBackward::can_implement(shape, DType::BF16).ok);
  shape = make_shape({3, 5}, 128, 16, 2);
  shape.owner[1] = 2;
  EXPECT_FALSE(EmbeddingAllToAllBackward::can_implement(shape, DType::BF16).ok);
  shape = make_shape({3, 5}, 128, 0, 2);
  EXPECT_FALSE(EmbeddingAllToAllBackward::can_implement(shape, DType::BF16).ok);
  shape = make_shape(std::vector<std::int64_t>(65, 1), 128, 16, 4);
  EXPECT_FALSE(EmbeddingAllToAllBackward::can_implement(shape, DType::BF16).ok);
  // A slot's pieces past the kernel's 32-bit counts: 2^20 bags x 200 lookups x 16 pieces.
  shape = make_shape({200}, 128, 1 << 20, 1);
  EXPECT_FALSE(EmbeddingAllToAllBackward::can_implement(shape, DType::BF16).ok);
}

TEST(EmbeddingAllToAllBackward, ValuesCount) {
  const EmbeddingAllToAllShape shape = make_shape({3, 100, 5, 1}, 64, 10, 2);
  // shard_tables: 100 -> rank 0; 5, 3, 1 -> rank 1.
  EXPECT_EQ(gradient_values_count(shape, 0), std::size_t{20 * 100 * 64});
  EXPECT_EQ(gradient_values_count(shape, 1), std::size_t{20 * 9 * 64});
}

// Every element of `rank`'s values against the reference: values[s][g][j][c] = the bits of
// grad of rank g / B, table t = owned[s], bag g % B, column c (set `set`).
Status check_reference(const void* values, const EmbeddingAllToAllShape& shape, int rank,
                       std::uint64_t seed, int set, DType dtype, const std::string& what) {
  const std::size_t count = gradient_values_count(shape, rank);
  std::vector<std::uint16_t> got(count);
  CUDA_CHECK(cudaMemcpy(got.data(), values, count * 2, cudaMemcpyDeviceToHost));
  const std::int64_t B = shape.local_batch, dim = shape.dim;
  std::size_t i = 0, bad = 0;
  std::string first;
  for (int t : shape.owned(rank)) {
    const std::int64_t p = shape.tables[static_cast<std::size_t>(t)].pooling;
    for (std::int64_t g = 0; g < shape.global_batch(); ++g) {
      const std::uint64_t s = grad_seed(seed, static_cast<int>(g / B), set);
      for (std::int64_t j = 0; j < p; ++j)
        for (std::int64_t c = 0; c < dim; ++c, ++i) {
          const std::uint16_t want =
              random_bits(dtype, s, static_cast<std::uint64_t>((t * B + g % B) * dim + c));
          if (got[i] != want && bad++ == 0)
            first = "table " + std::to_string(t) + " bag " + std::to_string(g) + " lookup " +
                    std::to_string(j) + " col " + std::to_string(c);
        }
    }
  }
  if (bad != 0)
    return Status::failure(what + ": " + std::to_string(bad) + " of " + std::to_string(count) +
                           " values off the reference, first at " + first);
  return Status::success();
}

Status compare_bits(const void* got, const void* expected, std::size_t count, DType dtype,
                    cudaStream_t s, const std::string& what) {
  std::uint64_t differ = 0;
  OVERLAPSIM_TRY(count_mismatches(got, expected, count, dtype, 0.0, 0.0, s, &differ));
  if (differ != 0)
    return Status::failure(what + ": " + std::to_string(differ) + " of " + std::to_string(count) +
                           " elements differ");
  return Status::success();
}

HarnessOptions blocking() {
  HarnessOptions h;
  h.blocking_comms = true;
  return h;
}

// Fused `calls` times against the sequential design (bit for bit) and the reference
// (every element); comm null: one rank.
Status check_design(CommHandle* comm, cudaStream_t s, const std::vector<std::int64_t>& pooling,
                    std::int64_t dim, std::int64_t local_batch, DType dtype, std::uint64_t seed,
                    int calls, const std::function<Status(const char*)>& fence,
                    const EmbeddingAllToAllBackwardOptions& options = {}) {
  const int world = comm == nullptr ? 1 : comm->world, rank = comm == nullptr ? 0 : comm->rank;
  const EmbeddingAllToAllShape shape = make_shape(pooling, dim, local_batch, world);
  const std::string what = "rank " + std::to_string(rank) + " dim " + std::to_string(dim) + " B " +
                           std::to_string(local_batch) + " " + to_string(dtype);
  OVERLAPSIM_TRY(fence("backward test alloc"));
  const std::size_t grad_count = shape.tables.size() * static_cast<std::size_t>(local_batch * dim);
  const std::size_t count = gradient_values_count(shape, rank);
  DeviceBuffer grad, seq, fused_values;
  OVERLAPSIM_TRY(grad.allocate(grad_count * 2));
  OVERLAPSIM_TRY(seq.allocate(std::max<std::size_t>(count, 1) * 2));
  OVERLAPSIM_TRY(fused_values.allocate(std::max<std::size_t>(count, 1) * 2));
  OVERLAPSIM_TRY(fill_random(grad.data(), grad_count, dtype, grad_seed(seed, rank, 0), s));
  EmbeddingAllToAllBackward design;
  OVERLAPSIM_TRY(design.initialize(comm, shape, dtype, options));
  OVERLAPSIM_TRY(fence("backward test ready"));
  OVERLAPSIM_TRY(poison(seq.data(), count, s));
  OVERLAPSIM_TRY(design.run_sequential(grad.data(), seq.data(), s));
  CUDA_CHECK(cudaStreamSynchronize(s));
  OVERLAPSIM_TRY(check_reference(seq.data(), shape, rank, seed, 0, dtype, what + " sequential"));
  for (int call = 0; call < calls; ++call) {
    OVERLAPSIM_TRY(poison(fused_values.data(), count, s));
    OVERLAPSIM_TRY(design.run(grad.data(), fused_values.data(), s));
    OVERLAPSIM_TRY(design.check_timeout(s));
    const std::string name = what + " fused call " + std::to_string(call);
    OVERLAPSIM_TRY(compare_bits(fused_values.data(), seq.data(), count, dtype, s, name));
    OVERLAPSIM_TRY(check_reference(fused_values.data(), shape, rank, seed, 0, dtype, name));
  }
  return fence("backward test done");
}

TEST(EmbeddingAllToAllBackwardLocal, MatchesReference) {
  OVERLAPSIM_REQUIRE_GPUS(1);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  const std::uint64_t seed = fresh_seed();
  const auto fence = [](const char*) {
    return cudaDeviceSynchronize() == cudaSuccess ? Status::success()
                                                  : Status::failure("device sync failed");
  };
  const std::vector<std::int64_t> pooling = {1, 3, 7, 8, 9, 33, 100, 2};
  for (std::int64_t dim : {8, 64, 128, 136, 256})
    for (DType dtype : {DType::BF16, DType::FP16}) {
      const Status s = check_design(nullptr, nullptr, pooling, dim, 37, dtype, seed, 2, fence);
      EXPECT_TRUE(s.ok) << s.message;
    }
}

// Every rank runs the checks; the fence is the harness's rendezvous.
Status check_ranks(RankContext& ctx, const std::vector<std::int64_t>& pooling, std::int64_t dim,
                   std::int64_t local_batch, DType dtype, std::uint64_t seed, int calls,
                   const EmbeddingAllToAllBackwardOptions& options = {}) {
  const auto fence = [&](const char* what) { return quiesce(ctx, what); };
  return check_design(&ctx.comm, ctx.compute_stream, pooling, dim, local_batch, dtype, seed, calls,
                      fence, options);
}

TEST(EmbeddingAllToAllBackward, MatchesSequentialBits) {
  OVERLAPSIM_REQUIRE_GPUS(2);
  const std::uint64_t seed = fresh_seed();
  const Status status = run_ranks(blocking(), [&](RankContext& ctx) -> Status {
    OVERLAPSIM_TRY(check_ranks(ctx, kDcnPooling, 128, 64, DType::BF16, seed, 3));
    OVERLAPSIM_TRY(check_ranks(ctx, kDcnPooling, 128, 1, DType::BF16, seed, 2));
    OVERLAPSIM_TRY(check_ranks(ctx, {1, 9, 3, 33, 8}, 64, 45, DType::BF16, seed, 2));
    OVERLAPSIM_TRY(check_ranks(ctx, {2, 100, 7}, 256, 13, DType::FP16, seed, 2));
    OVERLAPSIM_TRY(check_ranks(ctx, {1, 2, 3, 4, 5, 6, 7}, 8, 300, DType::BF16, seed, 2));
    return check_ranks(ctx, kDcnPooling, 128, 700, DType::BF16, seed, 2);
  });
  ASSERT_TRUE(status.ok) << status.message;
}

// The spread push schedule with one push warp, which initialize picks only from 1 MiB a
// table block at 3+ ranks (too big for a host check of every element here), forced on the
// small shapes; at 2 ranks it is the shift's single owner with one push warp.
TEST(EmbeddingAllToAllBackward, SpreadOnePushWarpMatchesSequentialBits) {
  OVERLAPSIM_REQUIRE_GPUS(2);
  const std::uint64_t seed = fresh_seed();
  EmbeddingAllToAllBackwardOptions spread;
  spread.push = BackwardPush::kSpread;
  spread.push_warps = 1;
  const Status status = run_ranks(blocking(), [&](RankContext& ctx) -> Status {
    OVERLAPSIM_TRY(check_ranks(ctx, kDcnPooling, 128, 64, DType::BF16, seed, 3, spread));
    OVERLAPSIM_TRY(check_ranks(ctx, {2, 100, 7}, 256, 13, DType::FP16, seed, 2, spread));
    return check_ranks(ctx, kDcnPooling, 128, 700, DType::BF16, seed, 2, spread);
  });
  ASSERT_TRUE(status.ok) << status.message;
}

TEST(EmbeddingAllToAllBackward, SmallForSanitizer) {
  OVERLAPSIM_REQUIRE_GPUS(2);
  const std::uint64_t seed = fresh_seed();
  const Status status = run_ranks(blocking(), [&](RankContext& ctx) -> Status {
    return check_ranks(ctx, {3, 1, 12, 9}, 128, 8, DType::BF16, seed, 2);
  });
  ASSERT_TRUE(status.ok) << status.message;
}

// 200 calls enqueued back to back (gradients rotating over 3 sets), each writing its own
// slice of one output buffer, no host synchronisation between them: the counters, the tile
// counter and the receive buffers' parity must keep every call's rows apart while ranks
// drift by up to a call.
TEST(EmbeddingAllToAllBackward, BackToBack200Calls) {
  OVERLAPSIM_REQUIRE_GPUS(2);
  const std::uint64_t seed = fresh_seed();
  constexpr int kCalls = 200, kSets = 3;
  const Status status = run_ranks(blocking(), [&](RankContext& ctx) -> Status {
    const int world = ctx.comm.world, rank = ctx.comm.rank;
    const EmbeddingAllToAllShape shape = make_shape(kDcnPooling, 128, 32, world);
    cudaStream_t s = ctx.compute_stream;
    OVERLAPSIM_TRY(quiesce(ctx, "b2b alloc"));
    const std::size_t grad_count = shape.tables.size() * 32 * 128;
    const std::size_t count = std::max<std::size_t>(gradient_values_count(shape, rank), 1);
    DeviceBuffer grads, expected, out;
    OVERLAPSIM_TRY(grads.allocate(kSets * grad_count * 2));
    OVERLAPSIM_TRY(expected.allocate(kSets * count * 2));
    OVERLAPSIM_TRY(out.allocate(kCalls * count * 2));
    for (int set = 0; set < kSets; ++set)
      OVERLAPSIM_TRY(fill_random(grads.as<std::uint16_t>() + set * grad_count, grad_count,
                                 DType::BF16, grad_seed(seed, rank, set), s));
    EmbeddingAllToAllBackward design;
    OVERLAPSIM_TRY(design.initialize(&ctx.comm, shape, DType::BF16, {30}));
    OVERLAPSIM_TRY(quiesce(ctx, "b2b ready"));
    for (int set = 0; set < kSets; ++set)
      OVERLAPSIM_TRY(design.run_sequential(grads.as<std::uint16_t>() + set * grad_count,
                                           expected.as<std::uint16_t>() + set * count, s));
    OVERLAPSIM_TRY(poison(out.data(), kCalls * count, s));
    OVERLAPSIM_TRY(wait_stream(ctx.comm, s, "b2b expected"));
    for (int call = 0; call < kCalls; ++call)
      OVERLAPSIM_TRY(design.run(grads.as<std::uint16_t>() + (call % kSets) * grad_count,
                                out.as<std::uint16_t>() + call * count, s));
    OVERLAPSIM_TRY(wait_stream(ctx.comm, s, "b2b calls"));
    OVERLAPSIM_TRY(design.check_timeout(s));
    for (int set = 0; set < kSets; ++set)
      OVERLAPSIM_TRY(check_reference(
          expected.as<std::uint16_t>() + set * count, shape, rank, seed, set, DType::BF16,
          "rank " + std::to_string(rank) + " set " + std::to_string(set)));
    for (int call = 0; call < kCalls; ++call)
      OVERLAPSIM_TRY(
          compare_bits(out.as<std::uint16_t>() + call * count,
                       expected.as<std::uint16_t>() + (call % kSets) * count, count, DType::BF16, s,
                       "rank " + std::to_string(rank) + " call " + std::to_string(call)));
    return quiesce(ctx, "b2b done");
  });
  ASSERT_TRUE(status.ok) << status.message;
}

TEST(EmbeddingAllToAllBackwardColdStart, Child) {
  if (std::getenv("OVERLAPSIM_EMBEDDING_A2A_BWD_COLD_CHILD") == nullptr)
    GTEST_SKIP() << "runs only as the child of FreshProcessFirstCallCompletes";
  const std::uint64_t seed = 5;
  const Status status = run_ranks(blocking(), [&](RankContext& ctx) -> Status {
    const int rank = ctx.comm.rank;
    const EmbeddingAllToAllShape shape = make_shape(kDcnPooling, 128, 512, ctx.comm.world);
    cudaStream_t s = ctx.compute_stream;
    const std::size_t grad_count = shape.tables.size() * 512 * 128;
    const std::size_t count = std::max<std::size_t>(gradient_values_count(shape, rank), 1);
    DeviceBuffer grad, values;
    OVERLAPSIM_TRY(grad.allocate(grad_count * 2));
    OVERLAPSIM_TRY(values.allocate(count * 2));
    OVERLAPSIM_TRY(fill_random(grad.data(), grad_count, DType::BF16, grad_seed(seed, rank, 0), s));
    EmbeddingAllToAllBackward design;
    OVERLAPSIM_TRY(design.initialize(&ctx.comm, shape, DType::BF16, {20}));
    OVERLAPSIM_TRY(quiesce(ctx, "cold start ready"));
    // The fused kernel first, then a kernel of another module behind it on every rank.
    OVERLAPSIM_TRY(design.run(grad.data(), values.data(), s));
    OVERLAPSIM_TRY(poison(values.data(), count, s));
    OVERLAPSIM_TRY(design.run(grad.data(), values.data(), s));
    OVERLAPSIM_TRY(wait_stream(ctx.comm, s, "cold start"));
    OVERLAPSIM_TRY(design.check_timeout(s));
    return check_reference(values.data(), shape, rank, seed, 0, DType::BF16, "cold start");
  });
  ASSERT_TRUE(status.ok) << status.message;
}

// A fresh process with lazy module loading: the first fused calls must complete (the
// kernel is loaded in initialize, before any rank waits on a peer).
TEST(EmbeddingAllToAllBackwardColdStart, FreshProcessFirstCallCompletes) {
  OVERLAPSIM_REQUIRE_GPUS(1);
  const testing::ChildEnd end = testing::run_lazy_loading_child(
      "EmbeddingAllToAllBackwardColdStart.Child", "OVERLAPSIM_EMBEDDING_A2A_BWD_COLD_CHILD");
  testing::expect_cold_start_child_passed(end);
}

}  // namespace
}  // namespace overlapsim::kernels::fused
