#pragma once
// Embedding-bag lookup with sum pooling (DLRM's sparse features): out[b][:] =
// sum_j table[indices[b * pooling + j]][:], fp32 accumulation, output in the table's type.
// Multi-hot with a fixed pooling factor per bag. Our own kernel: one warp per bag; when
// dim is a multiple of 8, 16-byte row loads, several independent row loads in flight per
// lane, and for dim <= 128 the warp's lane groups split the bag's indices. C++17.
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/common/status.hpp"
#include "kernels/harness/dtype.hpp"

namespace overlapsim::kernels {

struct EmbeddingBagShape {
  std::int64_t table_rows = 0;
  std::int64_t dim = 0;      // elements per row
  std::int64_t bags = 0;     // output rows
  std::int64_t pooling = 0;  // indices per bag
};

// Bags one launch computes: `groups` runs of `count` consecutive bags, run g starting at
// first + g * group_stride (the decomposed design's chunk of every rank's block).
struct BagRange {
  std::int64_t first = 0;
  std::int64_t count = 0;
  int groups = 1;
  std::int64_t group_stride = 0;
};

Status embedding_bag_can_implement(const EmbeddingBagShape& shape, DType dtype);

Status embedding_bag_sum(const void* table, const std::int32_t* indices, void* out,
                         const EmbeddingBagShape& shape, const BagRange& range, DType dtype,
                         cudaStream_t stream);

}  // namespace overlapsim::kernels
