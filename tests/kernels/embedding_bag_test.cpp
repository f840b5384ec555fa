// Embedding-bag sum pooling against a host reference: vectorised and scalar paths,
// bag ranges with groups (the decomposed design's chunks).
#include "kernels/ops/embedding_bag.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "kernels/harness/device_buffer.hpp"
#include "kernels/harness/fill.hpp"
#include "kernels/harness/random_values.hpp"
#include "tests/kernels/gpu_test_support.hpp"

namespace overlapsim::kernels {
namespace {

using testing::fresh_seed;
using testing::to_host;

// Fills a table and indices, poisons the output, runs `range`, and returns how many bags
// inside the range are wrong and how many outside it were touched.
void check(const EmbeddingBagShape& shape, const BagRange& range, DType dtype) {
  const std::uint64_t table_seed = fresh_seed();
  const std::uint64_t index_seed = fresh_seed();
  DeviceBuffer table, indices, out;
  ASSERT_TRUE(table.allocate(shape.table_rows * shape.dim * 2).ok);
  ASSERT_TRUE(indices.allocate(shape.bags * shape.pooling * 4).ok);
  ASSERT_TRUE(out.allocate(shape.bags * shape.dim * 2).ok);
  ASSERT_TRUE(
      fill_random(table.data(), shape.table_rows * shape.dim, dtype, table_seed, nullptr).ok);
  ASSERT_TRUE(fill_indices(indices.as<std::int32_t>(), shape.bags * shape.pooling,
                           static_cast<std::int32_t>(shape.table_rows), index_seed, nullptr)
                  .ok);
  ASSERT_TRUE(poison(out.data(), shape.bags * shape.dim, nullptr).ok);
  const Status status = embedding_bag_sum(table.data(), indices.as<std::int32_t>(), out.data(),
                                          shape, range, dtype, nullptr);
  ASSERT_TRUE(status.ok) << status.message;
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::vector<double> got = to_host(out.data(), shape.bags * shape.dim, dtype);
  std::vector<bool> in_range(static_cast<std::size_t>(shape.bags), false);
  for (int g = 0; g < range.groups; ++g)
    for (std::int64_t i = 0; i < range.count; ++i)
      in_range[static_cast<std::size_t>(range.first + g * range.group_stride + i)] = true;
  std::int64_t wrong = 0, touched = 0;
  for (std::int64_t bag = 0; bag < shape.bags; ++bag) {
    for (std::int64_t d = 0; d < shape.dim; ++d) {
      const double value = got[bag * shape.dim + d];
      if (!in_range[bag]) {
        touched += !std::isnan(value);
        continue;
      }
      double ref = 0, sq = 0;
      for (std::int64_t j = 0; j < shape.pooling; ++j) {
        const std::int32_t row = random_index(index_seed, bag * shape.pooling + j,
                                              static_cast<std::int32_t>(shape.table_rows));
        const double v = random_value(dtype, table_seed, row * shape.dim + d);
        ref += v;
        sq += v * v;
      }
      const double tol = 4 * 0x1p-8 * (std::fabs(ref) + std::sqrt(sq));
      wrong += !(std::fabs(value - ref) <= tol);
    }
  }
  EXPECT_EQ(wrong, 0);
  EXPECT_EQ(touched, 0);
}

TEST(EmbeddingBag, VectorisedRowsMatchHostSums) {
  OVERLAPSIM_REQUIRE_GPUS(1);
  check({5000, 128, 300, 17}, {0, 300, 1, 0}, DType::BF16);
  check({5000, 64, 77, 3}, {0, 77, 1, 0}, DType::FP16);
}

TEST(EmbeddingBag, PoolingOneAndHundredBothTypes) {
  OVERLAPSIM_REQUIRE_GPUS(1);
  // DLRM-DCNv2's extremes (Criteo multi-hot pooling 1 and 100) at dim 128.
  for (DType dtype : {DType::BF16, DType::FP16}) {
    check({20000, 128, 200, 1}, {0, 200, 1, 0}, dtype);
    check({20000, 128, 50, 100}, {0, 50, 1, 0}, dtype);
  }
}

TEST(EmbeddingBag, LaneGroupsAndIndexBatchesCoverEveryRowAndIndex) {
  OVERLAPSIM_REQUIRE_GPUS(1);
  // dim 16 and 64: four lane groups per warp; 256: one; 200: one with idle lanes; 520: two
  // column passes. Pooling 33 and 65 cross the 32-index batches and leave unroll tails;
  // pooling 7 and 11 at dims 64 and 16 give each group its own bag and cross its 8-index
  // batches.
  check({4000, 16, 70, 33}, {0, 70, 1, 0}, DType::BF16);
  check({4000, 64, 70, 65}, {0, 70, 1, 0}, DType::FP16);
  check({4000, 256, 40, 7}, {0, 40, 1, 0}, DType::BF16);
  check({4000, 200, 40, 33}, {0, 40, 1, 0}, DType::BF16);
  check({4000, 520, 20, 5}, {0, 20, 1, 0}, DType::FP16);
  check({4000, 64, 70, 7}, {0, 70, 1, 0}, DType::BF16);
  check({4000, 16, 70, 11}, {0, 70, 1, 0}, DType::FP16);
}

TEST(EmbeddingBag, ScalarPathForOddDims) {
  OVERLAPSIM_REQUIRE_GPUS(1);
  check({1000, 100, 64, 5}, {0, 64, 1, 0}, DType::BF16);
  check({1000, 13, 64, 100}, {0, 64, 1, 0}, DType::FP16);
}

TEST(EmbeddingBag, GroupedRangesComputeOnlyTheirBags) {
  OVERLAPSIM_REQUIRE_GPUS(1);
  // Chunk 1 of 4 of two rank blocks of 64 bags: bags 16..31 and 80..95.
  check({3000, 128, 128, 8}, {16, 16, 2, 64}, DType::BF16);
  // Short bags: each lane group sums bags of its own; 15 bags per run leave a group idle.
  check({3000, 128, 128, 2}, {16, 15, 2, 64}, DType::BF16);
}

TEST(EmbeddingBag, ShortBagsSeveralPerLaneGroup) {
  OVERLAPSIM_REQUIRE_GPUS(1);
  // Bags shorter than a warp's loads: each lane group takes several bags (4 at pooling 1,
  // 2 above), so bag counts that leave a warp's last bags empty, one bag, and pooling over
  // one and two load rounds (dim 128: 2 groups of 4 loads; dim 64 and 16: 4 groups, two
  // index batches at pooling 9 and 15).
  for (std::int64_t pooling : {1, 2, 3, 5, 7}) {
    check({5000, 128, 1, pooling}, {0, 1, 1, 0}, DType::BF16);
    check({5000, 128, 1037, pooling}, {0, 1037, 1, 0}, DType::FP16);
  }
  for (std::int64_t pooling : {1, 3, 9, 15}) {
    check({5000, 64, 203, pooling}, {0, 203, 1, 0}, DType::BF16);
    check({5000, 16, 101, pooling}, {0, 101, 1, 0}, DType::FP16);
  }
  // Grouped ranges at pooling 1: a warp's bags cross from one run to the next.
  check({3000, 128, 200, 1}, {3, 13, 3, 64}, DType::BF16);
}

TEST(EmbeddingBag, RejectsRangesOutsideTheBags) {
  EXPECT_FALSE(embedding_bag_sum(nullptr, nullptr, nullptr, {10, 8, 4, 1}, {2, 3, 1, 0},
                                 DType::BF16, nullptr)
                   .ok);
  EXPECT_FALSE(embedding_bag_can_implement({0, 8, 4, 1}, DType::BF16).ok);
}

}  // namespace
}  // namespace overlapsim::kernels
