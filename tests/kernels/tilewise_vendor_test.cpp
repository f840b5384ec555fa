// The per-chunk vendor designs on the copy-engine transport (kernels/tilewise:
// vendor_row_gemms, partial_sum, allgather_gemm with vendor_gemm, vendor_reduce_scatter).
// Host (run everywhere): shape and option errors.
// GPU: the partial sum bit for bit against the host's rank-order fp32 sum (one GPU); on every
// visible GPU (>= 2), AllGather+GEMM bit for bit against NCCL all-gather + the design's own
// cuBLASLt chunk GEMMs (on one stream and on two alternating ones) and within bf16
// tolerance of one cuBLASLt GEMM over all rows;
// GEMM+ReduceScatter bit for bit against the same cuBLASLt chunk GEMMs summed on the host in
// rank order (fp32, one rounding); each with calls back to back and no host sync.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/collectives/nccl_collectives.hpp"
#include "kernels/gemm/cublaslt_gemm.hpp"
#include "kernels/harness/device_buffer.hpp"
#include "kernels/harness/fill.hpp"
#include "kernels/tilewise/allgather_gemm.hpp"
#include "kernels/tilewise/partial_sum.hpp"
#include "kernels/tilewise/vendor_reduce_scatter.hpp"
#include "kernels/tilewise/vendor_row_gemms.hpp"
#include "tests/kernels/gpu_test_support.hpp"

namespace overlapsim::kernels::tilewise {
namespace {

using testing::fresh_seed;

float bf16_to_float(std::uint16_t bits) {
  const std::uint32_t u = static_cast<std::uint32_t>(bits) << 16;
  float f = 0;
  std::memcpy(&f, &u, 4);
  return f;
}

// Round to nearest even, as __float2bfloat16_rn on finite values.
std::uint16_t float_to_bf16(float f) {
  std::uint32_t u = 0;
  std::memcpy(&u, &f, 4);
  u += 0x7FFFu + ((u >> 16) & 1u);
  return static_cast<std::uint16_t>(u >> 16);
}

std::vector<std::uint16_t> to_host_bits(const void* data, std::size_t count) {
  std::vector<std::uint16_t> bits(count);
  EXPECT_EQ(cudaMemcpy(bits.data(), data, count * 2, cudaMemcpyDeviceToHost), cudaSuccess);
  return bits;
}

// ---------------------------------------------------------------- host

TEST(TilewiseVendor, ShapeAndOptionErrors) {
  AllGatherGemmOptions ag;
  ag.vendor_gemm = true;
  EXPECT_TRUE(AllGatherGemmDesign::can_implement(4 * 100, 700, 300, 4, ag).ok);  // no tile rule
  ag.chunks = 3;
  EXPECT_FALSE(AllGatherGemmDesign::can_implement(4 * 100, 700, 300, 4, ag).ok);
  ag.chunks = 1;
  ag.vendor_streams = 3;
  EXPECT_FALSE(AllGatherGemmDesign::can_implement(4 * 100, 700, 300, 4, ag).ok);
  ag.vendor_streams = 2;
  EXPECT_TRUE(AllGatherGemmDesign::can_implement(4 * 100, 700, 300, 4, ag).ok);
  ag.vendor_gemm = false;
  EXPECT_FALSE(AllGatherGemmDesign::can_implement(2048, 1536, 512, 4, ag).ok);  // own GEMM
  ag.vendor_gemm = true;
  ag.vendor_streams = 1;
  ag.split_k_tail = 2;
  const Status split = AllGatherGemmDesign::can_implement(2048, 1536, 512, 4, ag);
  EXPECT_FALSE(split.ok);
  EXPECT_NE(split.message.find("split"), std::string::npos) << split.message;

  VendorReduceScatterOptions rs;
  EXPECT_TRUE(VendorReduceScatterDesign::can_implement(4 * 100, 700, 300, 4, rs).ok);
  rs.chunks = 2;
  EXPECT_TRUE(VendorReduceScatterDesign::can_implement(4 * 100, 700, 300, 4, rs).ok);
  rs.chunks = 3;
  const Status rows = VendorReduceScatterDesign::can_implement(4 * 100, 700, 300, 4, rs);
  EXPECT_FALSE(rows.ok);
  EXPECT_NE(rows.message.find("multiple of 4 ranks x 3 chunks"), std::string::npos) << rows.message;
  rs.chunks = 0;
  EXPECT_FALSE(VendorReduceScatterDesign::can_implement(4 * 100, 700, 300, 4, rs).ok);
  rs.chunks = 1;
  EXPECT_FALSE(VendorReduceScatterDesign::can_implement(4 * 100, 700, 300, 17, rs).ok);
}

// ---------------------------------------------------------------- one GPU

TEST(TilewiseVendorGpu, PartialSumIsTheRankOrderSumRoundedOnce) {
  OVERLAPSIM_REQUIRE_GPUS(1);
  const std::uint64_t seed = fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  for (const std::size_t elems : {std::size_t{8 * 1000}, std::size_t{777}}) {  // vector, scalar
    for (const int count : {1, 2, 3, 4, 8}) {
      DeviceBuffer parts, out;
      ASSERT_TRUE(parts.allocate(elems * static_cast<std::size_t>(count) * 2).ok);
      ASSERT_TRUE(out.allocate(elems * 2).ok);
      ASSERT_TRUE(fill_random(parts.data(), elems * static_cast<std::size_t>(count), DType::BF16,
                              seed + count, nullptr)
                      .ok);
      ASSERT_TRUE(poison(out.data(), elems, nullptr).ok);
      const Status st =
          sum_partials(parts.data(), elems, count, out.data(), elems, DType::BF16, nullptr);
      ASSERT_TRUE(st.ok) << st.message;
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      const auto in = to_host_bits(parts.data(), elems * static_cast<std::size_t>(count));
      const auto got = to_host_bits(out.data(), elems);
      std::size_t off = 0;
      for (std::size_t i = 0; i < elems; ++i) {
        float acc = 0;
        for (int s = 0; s < count; ++s)
          acc += bf16_to_float(in[static_cast<std::size_t>(s) * elems + i]);
        off += got[i] != float_to_bf16(acc);
      }
      EXPECT_EQ(off, 0u) << elems << " elements, " << count << " partials";
    }
  }
  EXPECT_FALSE(sum_partials(nullptr, 0, 17, nullptr, 0, DType::BF16, nullptr).ok);
}

// ---------------------------------------------------------------- every visible GPU

// AllGather+GEMM with vendor_gemm: `calls` calls back to back alternating two shards and
// two outputs, then each output against NCCL all-gather + run_vendor_on_gathered (bit for
// bit) and against one cuBLASLt GEMM over all rows (bf16 tolerance).
void run_vendor_allgather(std::int64_t m, std::int64_t n, std::int64_t k, int chunks, int calls,
                          bool align_start = true, int streams = 1) {
  const int world = visible_gpu_count();
  const std::uint64_t seed = fresh_seed();
  SCOPED_TRACE("vendor allgather+gemm on " + std::to_string(world) + " GPUs, " + std::to_string(m) +
               "x" + std::to_string(n) + "x" + std::to_string(k) + ", " + std::to_string(chunks) +
               " chunk(s), " + std::to_string(calls) + " call(s)" +
               (align_start ? "" : ", unaligned") + ", " + std::to_string(streams) +
               " stream(s), seed " + std::to_string(seed));
  HarnessOptions harness;
  harness.blocking_comms = true;
  std::vector<std::uint64_t> diff(static_cast<std::size_t>(world), 1),
      far(static_cast<std::size_t>(world), 1), unwritten(static_cast<std::size_t>(world), 1);
  const Status status = run_ranks(harness, [&](RankContext& ctx) -> Status {
    cudaStream_t s = ctx.compute_stream;
    const int rank = ctx.comm.rank;
    const std::size_t shard = static_cast<std::size_t>(m / world * k);
    const std::size_t mn = static_cast<std::size_t>(m * n);
    DeviceBuffer a[2], c[2], b, gathered, ref, whole;
    for (auto& x : a) OVERLAPSIM_TRY(x.allocate(shard * 2));
    for (auto& x : c) OVERLAPSIM_TRY(x.allocate(mn * 2));
    OVERLAPSIM_TRY(b.allocate(static_cast<std::size_t>(n * k) * 2));
    OVERLAPSIM_TRY(gathered.allocate(static_cast<std::size_t>(m * k) * 2));
    OVERLAPSIM_TRY(ref.allocate(mn * 2));
    OVERLAPSIM_TRY(whole.allocate(mn * 2));
    for (int i = 0; i < 2; ++i) {
      OVERLAPSIM_TRY(fill_random(a[i].data(), shard, DType::BF16, seed + 10 * rank + i, s));
      OVERLAPSIM_TRY(poison(c[i].data(), mn, s));
    }
    OVERLAPSIM_TRY(
        fill_random(b.data(), static_cast<std::size_t>(n * k), DType::BF16, seed + 99 + rank, s));
    AllGatherGemmDesign d;
    AllGatherGemmOptions o;
    o.chunks = chunks;
    o.vendor_gemm = true;
    o.align_start = align_start;
    o.vendor_streams = streams;
    OVERLAPSIM_TRY(d.initialize(&ctx.comm, m, n, k, DType::BF16, o));
    for (int i = 0; i < calls; ++i)
      OVERLAPSIM_TRY(d.run(a[i % 2].data(), b.data(), c[i % 2].data(), s, ctx.comm_stream));
    CUDA_CHECK(cudaStreamSynchronize(s));
    std::uint64_t& my_diff = diff[static_cast<std::size_t>(rank)];
    std::uint64_t& my_far = far[static_cast<std::size_t>(rank)];
    std::uint64_t& my_bad = unwritten[static_cast<std::size_t>(rank)];
    my_diff = my_far = my_bad = 0;
    gemm::CublasLtGemm lt;
    OVERLAPSIM_TRY(
        lt.initialize({m, n, k, gemm::DType::kBf16, gathered.data(), b.data(), whole.data()}));
    for (int i = 0; i < std::min(calls, 2); ++i) {
      OVERLAPSIM_TRY(all_gather(ctx.comm, a[i].data(), gathered.data(), shard, DType::BF16, s));
      OVERLAPSIM_TRY(d.run_vendor_on_gathered(gathered.data(), b.data(), ref.data(), s));
      OVERLAPSIM_TRY(lt.run(s));
      OVERLAPSIM_TRY(wait_stream(ctx.comm, s, "vendor allgather+gemm against NCCL + cuBLASLt"));
      std::uint64_t d_i = 0, f_i = 0, bad_i = 0;
      OVERLAPSIM_TRY(count_mismatches(c[i].data(), ref.data(), mn, DType::BF16, 0, 0, s, &d_i));
      OVERLAPSIM_TRY(
          count_mismatches(c[i].data(), whole.data(), mn, DType::BF16, 1.0 / 64, 0.05, s, &f_i));
      OVERLAPSIM_TRY(count_nonfinite(c[i].data(), mn, DType::BF16, s, &bad_i));
      my_diff += d_i;
      my_far += f_i;
      my_bad += bad_i;
    }
    return Status::success();
  });
  ASSERT_TRUE(status.ok) << status.message;
  for (int r = 0; r < world; ++r) {
    EXPECT_EQ(diff[static_cast<std::size_t>(r)], 0u)
        << "rank " << r << ": not NCCL all-gather + the same cuBLASLt chunk GEMMs bit for bit";
    EXPECT_EQ(far[static_cast<std::size_t>(r)], 0u)
        << "rank " << r << ": off one cuBLASLt GEMM beyond bf16 tolerance";
    EXPECT_EQ(unwritten[static_cast<std::size_t>(r)], 0u) << "rank " << r << ": unwritten";
  }
}

TEST(TilewiseVendorGpu, AllGatherBitIdenticalToNcclThenTheSameChunkGemms) {
  OVERLAPSIM_REQUIRE_GPUS(2);
  const std::int64_t w = visible_gpu_count();
  run_vendor_allgather(512 * w, 1536, 512, 1, 1);
  run_vendor_allgather(512 * w, 700, 264, 2, 3);  // edge columns
  run_vendor_allgather(100 * w, 700, 300, 1, 2);  // no tile multiple, K % 8 != 0
  run_vendor_allgather(1024 * w, 2048, 1024, 4, 2, false);
}

// Two alternating streams (PyTorch's issue order): the same chunk plans, so the same bits.
TEST(TilewiseVendorGpu, AllGatherOnTwoStreamsBitIdentical) {
  OVERLAPSIM_REQUIRE_GPUS(2);
  const std::int64_t w = visible_gpu_count();
  run_vendor_allgather(512 * w, 1536, 512, 1, 3, true, 2);
  run_vendor_allgather(512 * w, 700, 264, 2, 3, true, 2);  // edge columns
  run_vendor_allgather(100 * w, 700, 300, 1, 2, false, 2);  // no tile multiple, K % 8 != 0
  run_vendor_allgather(512 * w, 2048, 512, 2, 200, true, 2);  // back to back
  run_vendor_allgather(512 * w, 2048, 512, 1, 200, false, 2);
}

TEST(TilewiseVendorGpu, AllGatherBackToBackCallsWithoutHostSync) {
  OVERLAPSIM_REQUIRE_GPUS(2);
  const std::int64_t w = visible_gpu_count();
  run_vendor_allgather(512 * w, 2048, 512, 1, 200);
  run_vendor_allgather(512 * w, 2048, 512, 2, 200, false);
}

// GEMM+ReduceScatter: `calls` calls back to back alternating two inputs and two outputs;
// each rank's partial A_r·B_rᵀ from the same cuBLASLt plans (a block's rows for its own
// block, a chunk's for the others, as the design runs them) goes to the host, and every
// output must be the rank-order fp32 sum of its block, rounded once, bit for bit.
void run_vendor_reduce_scatter(std::int64_t m, std::int64_t n, std::int64_t k, int chunks,
                               int calls) {
  const int world = visible_gpu_count();
  const std::uint64_t seed = fresh_seed();
  SCOPED_TRACE("vendor gemm+reducescatter on " + std::to_string(world) + " GPUs, " +
               std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k) + ", " +
               std::to_string(chunks) + " chunk(s), " + std::to_string(calls) + " call(s), seed " +
               std::to_string(seed));
  const std::int64_t block_rows = m / world, chunk_rows = block_rows / chunks;
  const std::size_t mn = static_cast<std::size_t>(m * n);
  const std::size_t block = static_cast<std::size_t>(block_rows * n);
  // [input set][rank]: each rank's partial on the host.
  std::vector<std::vector<std::vector<std::uint16_t>>> partials(
      2, std::vector<std::vector<std::uint16_t>>(static_cast<std::size_t>(world)));
  std::vector<std::uint64_t> diff(static_cast<std::size_t>(world), 1);
  const Status status = run_ranks(HarnessOptions{}, [&](RankContext& ctx) -> Status {
    cudaStream_t s = ctx.compute_stream;
    const int rank = ctx.comm.rank;
    DeviceBuffer a[2], out[2], b, partial;
    for (auto& x : a) OVERLAPSIM_TRY(x.allocate(static_cast<std::size_t>(m * k) * 2));
    for (auto& x : out) OVERLAPSIM_TRY(x.allocate(block * 2));
    OVERLAPSIM_TRY(b.allocate(static_cast<std::size_t>(n * k) * 2));
    OVERLAPSIM_TRY(partial.allocate(mn * 2));
    for (int i = 0; i < 2; ++i) {
      OVERLAPSIM_TRY(fill_random(a[i].data(), static_cast<std::size_t>(m * k), DType::BF16,
                                 seed + 10 * rank + i, s));
      OVERLAPSIM_TRY(poison(out[i].data(), block, s));
    }
    OVERLAPSIM_TRY(
        fill_random(b.data(), static_cast<std::size_t>(n * k), DType::BF16, seed + 99 + rank, s));
    VendorReduceScatterDesign d;
    VendorReduceScatterOptions o;
    o.chunks = chunks;
    OVERLAPSIM_TRY(d.initialize(&ctx.comm, m, n, k, DType::BF16, o));
    for (int i = 0; i < calls; ++i)
      OVERLAPSIM_TRY(d.run(a[i % 2].data(), b.data(), out[i % 2].data(), s, ctx.comm_stream));
    CUDA_CHECK(cudaStreamSynchronize(s));
    CUDA_CHECK(cudaStreamSynchronize(ctx.comm_stream));
    VendorRowGemms plans;
    OVERLAPSIM_TRY(plans.initialize(n, k, DType::BF16, {block_rows, chunk_rows}, chunk_rows));
    for (int i = 0; i < 2; ++i) {
      for (int j = 0; j < world; ++j) {
        if (j == rank) {
          OVERLAPSIM_TRY(
              plans.run(block_rows, j * block_rows, a[i].data(), b.data(), partial.data(), s));
          continue;
        }
        for (int ch = 0; ch < chunks; ++ch)
          OVERLAPSIM_TRY(plans.run(chunk_rows, j * block_rows + ch * chunk_rows, a[i].data(),
                                   b.data(), partial.data(), s));
      }
      CUDA_CHECK(cudaStreamSynchronize(s));
      partials[static_cast<std::size_t>(i)][static_cast<std::size_t>(rank)] =
          to_host_bits(partial.data(), mn);
    }
    OVERLAPSIM_TRY(quiesce(ctx, "vendor reducescatter test: partials on the host"));
    std::uint64_t& off = diff[static_cast<std::size_t>(rank)];
    off = 0;
    for (int set = 0; set < std::min(calls, 2); ++set) {  // output `set` came from input `set`
      const auto got = to_host_bits(out[set].data(), block);
      for (std::size_t e = 0; e < block; ++e) {
        float acc = 0;
        for (int r = 0; r < world; ++r)
          acc += bf16_to_float(partials[static_cast<std::size_t>(set)][static_cast<std::size_t>(r)]
                                       [static_cast<std::size_t>(rank) * block + e]);
        off += got[e] != float_to_bf16(acc);
      }
    }
    return Status::success();
  });
  ASSERT_TRUE(status.ok) << status.message;
  for (int r = 0; r < world; ++r)
    EXPECT_EQ(diff[static_cast<std::size_t>(r)], 0u)
        << "rank " << r << ": not the rank-order sum of the cuBLASLt chunk partials";
}

TEST(TilewiseVendorGpu, ReduceScatterBitIdenticalToTheRankOrderSumOfChunkGemms) {
  OVERLAPSIM_REQUIRE_GPUS(2);
  const std::int64_t w = visible_gpu_count();
  run_vendor_reduce_scatter(512 * w, 1536, 512, 1, 1);
  run_vendor_reduce_scatter(512 * w, 700, 264, 2, 3);  // edge columns
  run_vendor_reduce_scatter(100 * w, 700, 300, 1, 2);  // scalar sum path, K % 8 != 0
  run_vendor_reduce_scatter(1024 * w, 2048, 1024, 4, 2);
}

TEST(TilewiseVendorGpu, ReduceScatterBackToBackCallsWithoutHostSync) {
  OVERLAPSIM_REQUIRE_GPUS(2);
  const std::int64_t w = visible_gpu_count();
  run_vendor_reduce_scatter(512 * w, 2048, 512, 1, 200);
  run_vendor_reduce_scatter(512 * w, 2048, 512, 2, 201);
}

}  // namespace
}  // namespace overlapsim::kernels::tilewise
