// The fused embedding-bag + all-to-all (kernels/fused/embedding_alltoall.hpp): the table
// sharding's closed form (no GPU); on one GPU its pooled rows bit for bit against our
// embedding-bag kernel for every lane-group layout (dim 64, 128, 136, 256; bags shorter
// and longer than a group's loads; 4 and 8 row loads in flight) and a sample against an
// fp64 host sum; on every
// visible GPU (2 or more) its received rows bit for bit against the sequential designs
// (embedding-bag kernel or the fused kernel's own lookups, then NCCL send/recv), over CUDA
// peer pointers and NCCL's window, also with 8 row loads, with the depth (and grid)
// alternating call by call, and tuned; 200 calls back to back with no host synchronisation; a
// small case for compute-sanitizer; a first call in a fresh process under lazy loading.
#include "kernels/fused/embedding_alltoall.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "kernels/harness/device_buffer.hpp"
#include "kernels/harness/fill.hpp"
#include "tests/kernels/gpu_test_support.hpp"

namespace overlapsim::kernels::fused {
namespace {

using testing::fresh_seed;

// Tables of `dim` with the given poolings, rows 1000 + 37 t (small: the test is about
// arithmetic and addressing, not bandwidth).
EmbeddingAllToAllShape make_shape(const std::vector<std::int64_t>& pooling, std::int64_t dim,
                                  std::int64_t local_batch, int world) {
  EmbeddingAllToAllShape shape;
  for (std::size_t t = 0; t < pooling.size(); ++t)
    shape.tables.push_back({1000 + 37 * static_cast<std::int64_t>(t), pooling[t]});
  shape.owner = shard_tables(shape.tables, world);
  shape.dim = dim;
  shape.local_batch = local_batch;
  shape.world = world;
  return shape;
}

// The DCNv2 multi-hot sizes (MLPerf Training recommendation_v2).
const std::vector<std::int64_t> kDcnPooling = {3, 2, 1, 2, 6, 1, 1,  1,   1,  7,  3, 8, 1,
                                               6, 9, 5, 1, 1, 1, 12, 100, 27, 10, 3, 1, 1};

TEST(ShardTables, GreedyByPooling) {
  // 100 to rank 0; 27, 12, 10, 9, ... then to the least loaded rank in turn.
  const std::vector<EmbeddingTable> tables = {{10, 1}, {10, 100}, {10, 27}, {10, 12}, {10, 10}};
  EXPECT_EQ(shard_tables(tables, 2), (std::vector<int>{1, 0, 1, 1, 1}));
  EXPECT_EQ(shard_tables(tables, 4), (std::vector<int>{3, 0, 1, 2, 3}));
  EXPECT_EQ(shard_tables(tables, 1), (std::vector<int>(5, 0)));
  // Every rank's lookups on DCNv2 at 4 ranks: the 100-hot table alone bounds rank 0.
  std::vector<EmbeddingTable> dcn;
  for (std::int64_t p : kDcnPooling) dcn.push_back({10, p});
  const std::vector<int> owner = shard_tables(dcn, 4);
  std::vector<std::int64_t> load(4, 0);
  for (std::size_t t = 0; t < dcn.size(); ++t)
    load[static_cast<std::size_t>(owner[t])] += dcn[t].pooling;
  EXPECT_EQ(load[0] + load[1] + load[2] + load[3], 214);
  EXPECT_GE(load[0], 100);
  for (int r = 1; r < 4; ++r) EXPECT_LE(load[static_cast<std::size_t>(r)], 39);
}

TEST(EmbeddingAllToAll, RejectsBadShapes) {
  EmbeddingAllToAllShape shape = make_shape({3, 5}, 128, 16, 2);
  EXPECT_TRUE(EmbeddingAllToAll::can_implement(shape, DType::BF16).ok);
  EXPECT_FALSE(EmbeddingAllToAll::can_implement(shape, DType::FP8_E4M3).ok);
  shape.dim = 100;
  EXPECT_FALSE(EmbeddingAllToAll::can_implement(shape, DType::BF16).ok);
  shape = make_shape({3, 5}, 128, 16, 2);
  shape.owner[1] = 2;
  EXPECT_FALSE(EmbeddingAllToAll::can_implement(shape, DType::BF16).ok);
  shape = make_shape({3, 5}, 128, 0, 2);
  EXPECT_FALSE(EmbeddingAllToAll::can_implement(shape, DType::BF16).ok);
}

// This rank's tables and indices for `shape`, filled from `seed` (set `set` of indices).
struct Inputs {
  std::vector<DeviceBuffer> tables, indices;
  std::vector<const void*> table_ptrs;
  std::vector<const std::int32_t*> index_ptrs;
};

Status make_inputs(const EmbeddingAllToAllShape& shape, int rank, std::uint64_t seed, int sets,
                   cudaStream_t s, Inputs* in) {
  const std::vector<int> slots = shape.owned(rank);
  in->tables.resize(slots.size());
  in->indices.resize(slots.size());
  for (std::size_t i = 0; i < slots.size(); ++i) {
    const EmbeddingTable& t = shape.tables[static_cast<std::size_t>(slots[i])];
    const std::size_t elems = static_cast<std::size_t>(t.rows * shape.dim);
    const std::size_t count = static_cast<std::size_t>(shape.global_batch() * t.pooling);
    OVERLAPSIM_TRY(in->tables[i].allocate(elems * 2));
    OVERLAPSIM_TRY(in->indices[i].allocate(count * 4 * static_cast<std::size_t>(sets)));
    OVERLAPSIM_TRY(
        fill_random(in->tables[i].data(), elems, DType::BF16, buffer_seed(seed, slots[i], 0), s));
    OVERLAPSIM_TRY(fill_indices(in->indices[i].as<std::int32_t>(), count * sets,
                                static_cast<std::int32_t>(t.rows), buffer_seed(seed, slots[i], 1),
                                s));
    in->table_ptrs.push_back(in->tables[i].data());
    in->index_ptrs.push_back(in->indices[i].as<std::int32_t>());
  }
  return Status::success();
}

// Index pointers of set `set` (each set is one global batch's indices).
std::vector<const std::int32_t*> index_set(const EmbeddingAllToAllShape& shape, int rank,
                                           const Inputs& in, int set) {
  std::vector<const std::int32_t*> out;
  const std::vector<int> slots = shape.owned(rank);
  for (std::size_t i = 0; i < slots.size(); ++i)
    out.push_back(in.index_ptrs[i] + set * shape.global_batch() *
                                         shape.tables[static_cast<std::size_t>(slots[i])].pooling);
  return out;
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

TEST(EmbeddingAllToAllLocal, MatchesEmbeddingBagBits) {
  OVERLAPSIM_REQUIRE_GPUS(1);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  const std::uint64_t seed = fresh_seed();
  const std::vector<std::int64_t> pooling = {1, 3, 7, 8, 9, 33, 100, 2};
  for (std::int64_t dim : {64, 128, 136, 256}) {
    SCOPED_TRACE("dim " + std::to_string(dim));
    const EmbeddingAllToAllShape shape = make_shape(pooling, dim, 37, 1);
    Inputs in;
    ASSERT_TRUE(make_inputs(shape, 0, seed, 1, nullptr, &in).ok);
    const std::size_t count = received_count(shape);
    DeviceBuffer seq, own;
    ASSERT_TRUE(seq.allocate(count * 2).ok);
    ASSERT_TRUE(own.allocate(count * 2).ok);
    ASSERT_TRUE(poison(seq.data(), count, nullptr).ok);
    ASSERT_TRUE(poison(own.data(), count, nullptr).ok);
    EmbeddingAllToAll fused;
    Status s = fused.initialize(nullptr, shape, DType::BF16);
    ASSERT_TRUE(s.ok) << s.message;
    s = fused.run_sequential(in.table_ptrs.data(), in.index_ptrs.data(), seq.data(), nullptr);
    ASSERT_TRUE(s.ok) << s.message;
    // 8 row loads in flight: the same bits as the per-table kernel.
    DeviceBuffer deep;
    ASSERT_TRUE(deep.allocate(count * 2).ok);
    ASSERT_TRUE(poison(deep.data(), count, nullptr).ok);
    ASSERT_TRUE(fused.set_row_loads(8).ok);
    s = fused.run_sequential_own(in.table_ptrs.data(), in.index_ptrs.data(), deep.data(), nullptr);
    ASSERT_TRUE(s.ok) << s.message;
    s = compare_bits(deep.data(), seq.data(), count, nullptr, "8 row loads against embedding bag");
    EXPECT_TRUE(s.ok) << s.message;
    ASSERT_TRUE(fused.set_row_loads(4).ok);
    s = fused.run_sequential_own(in.table_ptrs.data(), in.index_ptrs.data(), own.data(), nullptr);
    ASSERT_TRUE(s.ok) << s.message;
    s = fused.run(in.table_ptrs.data(), in.index_ptrs.data(), nullptr);
    ASSERT_TRUE(s.ok) << s.message;
    s = fused.check_timeout(nullptr);
    ASSERT_TRUE(s.ok) << s.message;
    std::uint64_t unwritten = 0;
    ASSERT_TRUE(count_nonfinite(seq.data(), count, DType::BF16, nullptr, &unwritten).ok);
    EXPECT_EQ(unwritten, 0u);
    s = compare_bits(fused.received(), seq.data(), count, nullptr, "fused against embedding bag");
    EXPECT_TRUE(s.ok) << s.message;
    s = compare_bits(own.data(), seq.data(), count, nullptr, "own lookups against embedding bag");
    EXPECT_TRUE(s.ok) << s.message;
    // A sample against an fp64 host sum: recv[t][b][c] = sum_j table_t[idx_t[b][j]][c].
    const auto got = testing::to_host(fused.received(), count, DType::BF16);
    std::size_t bad = 0;
    for (std::size_t t = 0; t < shape.tables.size(); ++t) {
      const std::int64_t p = shape.tables[t].pooling, rows = shape.tables[t].rows;
      for (std::int64_t b : {std::int64_t{0}, std::int64_t{17}, std::int64_t{36}})
        for (std::int64_t c : {std::int64_t{0}, dim / 2 + 1, dim - 1}) {
          double ref = 0;
          for (std::int64_t j = 0; j < p; ++j) {
            const std::int64_t row = random_index(buffer_seed(seed, static_cast<int>(t), 1),
                                                  b * p + j, static_cast<std::int32_t>(rows));
            ref +=
                random_value(DType::BF16, buffer_seed(seed, static_cast<int>(t), 0), row * dim + c);
          }
          const double v =
              got[static_cast<std::size_t>((static_cast<std::int64_t>(t) * 37 + b) * dim + c)];
          if (!(std::fabs(v - ref) <= std::fabs(ref) / 128 + 1e-5 * p)) {
            if (bad < 5)
              ADD_FAILURE() << "table " << t << " bag " << b << " col " << c << ": " << v
                            << ", expected " << ref;
            ++bad;
          }
        }
    }
    EXPECT_EQ(bad, 0u);
  }
}

// Blocking communicators, as the bench runs them.
HarnessOptions blocking() {
  HarnessOptions h;
  h.blocking_comms = true;
  return h;
}

// The fused design `calls` times against both sequential designs, bit for bit. row_loads
// 4 or 8: that many in flight; 0: 4 and 8 alternating call by call (the grid changing
// between calls); -1: tune's choice.
Status check_against_sequential(RankContext& ctx, const std::vector<std::int64_t>& pooling,
                                std::int64_t dim, std::int64_t local_batch, std::uint64_t seed,
                                int calls, GemvTransport transport, int row_loads = 4) {
  const int world = ctx.comm.world, rank = ctx.comm.rank;
  const EmbeddingAllToAllShape shape = make_shape(pooling, dim, local_batch, world);
  const std::string what = "rank " + std::to_string(rank) + " dim " + std::to_string(dim) + " B " +
                           std::to_string(local_batch) + " (" + to_string(transport) + ")";
  cudaStream_t s = ctx.compute_stream;
  OVERLAPSIM_TRY(quiesce(ctx, "embedding-a2a test alloc"));
  Inputs in;
  OVERLAPSIM_TRY(make_inputs(shape, rank, seed, 1, s, &in));
  const std::size_t count = received_count(shape);
  DeviceBuffer seq, own;
  OVERLAPSIM_TRY(seq.allocate(count * 2));
  OVERLAPSIM_TRY(own.allocate(count * 2));
  EmbeddingAllToAll fused;
  EmbeddingAllToAllOptions options;
  options.timeout_s = 30;
  options.transport = transport;
  options.row_loads = row_loads > 0 ? row_loads : 4;
  OVERLAPSIM_TRY(fused.initialize(&ctx.comm, shape, DType::BF16, options));
  OVERLAPSIM_TRY(quiesce(ctx, "embedding-a2a test ready"));
  if (row_loads < 0) OVERLAPSIM_TRY(fused.tune(in.table_ptrs.data(), in.index_ptrs.data(), s));
  OVERLAPSIM_TRY(poison(seq.data(), count, s));
  OVERLAPSIM_TRY(poison(own.data(), count, s));
  OVERLAPSIM_TRY(fused.run_sequential(in.table_ptrs.data(), in.index_ptrs.data(), seq.data(), s));
  OVERLAPSIM_TRY(
      fused.run_sequential_own(in.table_ptrs.data(), in.index_ptrs.data(), own.data(), s));
  OVERLAPSIM_TRY(wait_stream(ctx.comm, s, "embedding-a2a sequential"));
  std::uint64_t unwritten = 0;
  OVERLAPSIM_TRY(count_nonfinite(seq.data(), count, DType::BF16, s, &unwritten));
  if (unwritten != 0)
    return Status::failure(what + ": sequential left " + std::to_string(unwritten) + " unwritten");
  OVERLAPSIM_TRY(compare_bits(own.data(), seq.data(), count, s, what + " sequential_own"));
  for (int call = 0; call < calls; ++call) {
    if (row_loads == 0) OVERLAPSIM_TRY(fused.set_row_loads(call % 2 == 1 ? 8 : 4));
    OVERLAPSIM_TRY(fused.run(in.table_ptrs.data(), in.index_ptrs.data(), s));
    OVERLAPSIM_TRY(wait_stream(ctx.comm, s, "embedding-a2a fused"));
    OVERLAPSIM_TRY(fused.check_timeout(s));
    OVERLAPSIM_TRY(compare_bits(fused.received(), seq.data(), count, s,
                                what + " fused call " + std::to_string(call)));
    // Every rank has compared before any rank's next call overwrites a parity.
    OVERLAPSIM_TRY(quiesce(ctx, "embedding-a2a compared"));
  }
  return quiesce(ctx, "embedding-a2a test done");
}

TEST(EmbeddingAllToAll, MatchesSequentialBits) {
  OVERLAPSIM_REQUIRE_GPUS(2);
  const std::uint64_t seed = fresh_seed();
  const Status status = run_ranks(blocking(), [&](RankContext& ctx) -> Status {
    for (GemvTransport transport : {GemvTransport::PeerPointers, GemvTransport::NcclWindow}) {
      OVERLAPSIM_TRY(check_against_sequential(ctx, kDcnPooling, 128, 64, seed, 3, transport));
      OVERLAPSIM_TRY(check_against_sequential(ctx, kDcnPooling, 128, 1, seed, 2, transport));
      OVERLAPSIM_TRY(check_against_sequential(ctx, {1, 9, 3, 33, 8}, 64, 45, seed, 2, transport));
      OVERLAPSIM_TRY(check_against_sequential(ctx, {2, 100, 7}, 256, 13, seed, 2, transport));
      // 8 row loads; alternating depths (enough bags for the two grids to differ); tuned.
      OVERLAPSIM_TRY(
          check_against_sequential(ctx, {1, 9, 3, 33, 8}, 64, 45, seed, 2, transport, 8));
      OVERLAPSIM_TRY(check_against_sequential(ctx, kDcnPooling, 128, 512, seed, 4, transport, 0));
      OVERLAPSIM_TRY(check_against_sequential(ctx, kDcnPooling, 128, 64, seed, 2, transport, -1));
    }
    return Status::success();
  });
  ASSERT_TRUE(status.ok) << status.message;
}

TEST(EmbeddingAllToAll, SmallForSanitizer) {
  OVERLAPSIM_REQUIRE_GPUS(2);
  const std::uint64_t seed = fresh_seed();
  const Status status = run_ranks(blocking(), [&](RankContext& ctx) -> Status {
    OVERLAPSIM_TRY(
        check_against_sequential(ctx, {3, 1, 12, 9}, 128, 8, seed, 2, GemvTransport::PeerPointers));
    OVERLAPSIM_TRY(check_against_sequential(ctx, {3, 1, 40, 9}, 128, 8, seed, 2,
                                            GemvTransport::PeerPointers, 0));
    return check_against_sequential(ctx, {3, 1, 12, 9}, 128, 8, seed, 2, GemvTransport::NcclWindow);
  });
  ASSERT_TRUE(status.ok) << status.message;
}

// 200 calls enqueued back to back (indices rotating over 3 sets, 4 and 8 row loads
// alternating), each followed on the stream by a copy of its received rows (the consumer),
// no host synchronisation between them: the counters and the receive buffers' parity must
// keep every call's rows apart while ranks drift by up to a call.
TEST(EmbeddingAllToAll, BackToBack200Calls) {
  OVERLAPSIM_REQUIRE_GPUS(2);
  const std::uint64_t seed = fresh_seed();
  constexpr int kCalls = 200, kSets = 3;
  const Status status = run_ranks(blocking(), [&](RankContext& ctx) -> Status {
    for (GemvTransport transport : {GemvTransport::PeerPointers, GemvTransport::NcclWindow}) {
      const int world = ctx.comm.world, rank = ctx.comm.rank;
      const EmbeddingAllToAllShape shape = make_shape(kDcnPooling, 128, 96, world);
      cudaStream_t s = ctx.compute_stream;
      OVERLAPSIM_TRY(quiesce(ctx, "b2b alloc"));
      Inputs in;
      OVERLAPSIM_TRY(make_inputs(shape, rank, seed, kSets, s, &in));
      const std::size_t count = received_count(shape);
      DeviceBuffer expected, out;
      OVERLAPSIM_TRY(expected.allocate(kSets * count * 2));
      OVERLAPSIM_TRY(out.allocate(kCalls * count * 2));
      EmbeddingAllToAll fused;
      EmbeddingAllToAllOptions options;
      options.transport = transport;
      OVERLAPSIM_TRY(fused.initialize(&ctx.comm, shape, DType::BF16, options));
      OVERLAPSIM_TRY(quiesce(ctx, "b2b ready"));
      for (int set = 0; set < kSets; ++set) {
        const auto idx = index_set(shape, rank, in, set);
        OVERLAPSIM_TRY(fused.run_sequential(in.table_ptrs.data(), idx.data(),
                                            expected.as<std::uint16_t>() + set * count, s));
      }
      OVERLAPSIM_TRY(poison(out.data(), kCalls * count, s));
      OVERLAPSIM_TRY(wait_stream(ctx.comm, s, "b2b expected"));
      std::vector<std::vector<const std::int32_t*>> sets;
      for (int set = 0; set < kSets; ++set) sets.push_back(index_set(shape, rank, in, set));
      for (int call = 0; call < kCalls; ++call) {
        // The row loads (and with them the grid) alternate: the counters' expected counts
        // follow each call's grid.
        OVERLAPSIM_TRY(fused.set_row_loads(call % 2 == 1 ? 8 : 4));
        OVERLAPSIM_TRY(fused.run(in.table_ptrs.data(), sets[call % kSets].data(), s));
        CUDA_CHECK(cudaMemcpyAsync(out.as<std::uint16_t>() + call * count, fused.received(),
                                   count * 2, cudaMemcpyDeviceToDevice, s));
      }
      OVERLAPSIM_TRY(wait_stream(ctx.comm, s, "b2b calls"));
      OVERLAPSIM_TRY(fused.check_timeout(s));
      for (int call = 0; call < kCalls; ++call)
        OVERLAPSIM_TRY(compare_bits(out.as<std::uint16_t>() + call * count,
                                    expected.as<std::uint16_t>() + (call % kSets) * count, count, s,
                                    "rank " + std::to_string(rank) + " call " +
                                        std::to_string(call) + " (" + to_string(transport) + ")"));
      OVERLAPSIM_TRY(quiesce(ctx, "b2b done"));
    }
    return Status::success();
  });
  ASSERT_TRUE(status.ok) << status.message;
}

TEST(EmbeddingAllToAllColdStart, Child) {
  if (std::getenv("OVERLAPSIM_EMBEDDING_A2A_COLD_CHILD") == nullptr)
    GTEST_SKIP() << "runs only as the child of FreshProcessFirstCallCompletes";
  const std::uint64_t seed = 5;
  const Status status = run_ranks(blocking(), [&](RankContext& ctx) -> Status {
    const EmbeddingAllToAllShape shape = make_shape(kDcnPooling, 128, 512, ctx.comm.world);
    Inputs in;
    OVERLAPSIM_TRY(make_inputs(shape, ctx.comm.rank, seed, 1, ctx.compute_stream, &in));
    EmbeddingAllToAll fused;
    EmbeddingAllToAllOptions options;
    options.timeout_s = 20;
    OVERLAPSIM_TRY(fused.initialize(&ctx.comm, shape, DType::BF16, options));
    OVERLAPSIM_TRY(quiesce(ctx, "cold start ready"));
    // The fused kernel first, then kernels of other modules behind it on every rank.
    OVERLAPSIM_TRY(fused.run(in.table_ptrs.data(), in.index_ptrs.data(), ctx.compute_stream));
    OVERLAPSIM_TRY(fill_random(in.tables[0].data(), 64, DType::BF16, 7, ctx.compute_stream));
    OVERLAPSIM_TRY(fused.run(in.table_ptrs.data(), in.index_ptrs.data(), ctx.compute_stream));
    OVERLAPSIM_TRY(wait_stream(ctx.comm, ctx.compute_stream, "cold start"));
    return fused.check_timeout(ctx.compute_stream);
  });
  ASSERT_TRUE(status.ok) << status.message;
}

// A fresh process with lazy module loading: the first fused calls must complete (the
// kernels are loaded in initialize, before any rank waits on a peer).
TEST(EmbeddingAllToAllColdStart, FreshProcessFirstCallCompletes) {
  OVERLAPSIM_REQUIRE_GPUS(1);
  const testing::ChildEnd end = testing::run_lazy_loading_child(
      "EmbeddingAllToAllColdStart.Child", "OVERLAPSIM_EMBEDDING_A2A_COLD_CHILD");
  testing::expect_cold_start_child_passed(end);
}

}  // namespace
}  // namespace overlapsim::kernels::fused
