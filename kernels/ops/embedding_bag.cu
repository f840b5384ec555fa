#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <string>

#include "kernels/ops/embedding_bag.hpp"
#include "kernels/ops/half_float.cuh"

namespace overlapsim::kernels {
namespace {

// Launch constants of the embedding-bag kernel.
struct EmbeddingBagConfig {
  static constexpr int kWarpsPerBlock = 8;
  static constexpr int kThreads = kWarpsPerBlock * 32;
};

struct EmbeddingBagGlobals {
  const void* table;
  const std::int32_t* indices;
  void* out;
  EmbeddingBagShape shape;
  BagRange range;
  __host__ __device__ std::int64_t total_bags() const { return range.count * range.groups; }
  dim3 grid() const {
    const std::int64_t blocks = (total_bags() + EmbeddingBagConfig::kWarpsPerBlock - 1) /
                                EmbeddingBagConfig::kWarpsPerBlock;
    return dim3(
        static_cast<unsigned>(std::min<std::int64_t>(std::max<std::int64_t>(blocks, 1), 1 << 20)));
  }
};

// kVec elements per lane per step: 8 (one 16-byte load) when rows allow it, else 1.
template <typename T, int kVec>
__global__ void __launch_bounds__(EmbeddingBagConfig::kThreads)
    embedding_bag_kernel(const EmbeddingBagGlobals g) {
  const int lane = threadIdx.x % 32;
  const std::int64_t warps = std::int64_t{gridDim.x} * EmbeddingBagConfig::kWarpsPerBlock;
  const T* table = static_cast<const T*>(g.table);
  T* out = static_cast<T*>(g.out);
  const std::int64_t dim = g.shape.dim;
  const std::int64_t pooling = g.shape.pooling;
  for (std::int64_t w =
           blockIdx.x * std::int64_t{EmbeddingBagConfig::kWarpsPerBlock} + threadIdx.x / 32;
       w < g.total_bags(); w += warps) {
    const std::int64_t bag =
        g.range.first + (w / g.range.count) * g.range.group_stride + w % g.range.count;
    const std::int32_t* bag_indices = g.indices + bag * pooling;
    for (std::int64_t col = std::int64_t{lane} * kVec; col < dim; col += 32 * kVec) {
      float acc[kVec];
#pragma unroll
      for (int v = 0; v < kVec; ++v) acc[v] = 0.0f;
      for (std::int64_t j = 0; j < pooling; ++j) {
        const T* row = table + static_cast<std::int64_t>(__ldg(bag_indices + j)) * dim + col;
        if constexpr (kVec == 8) {
          const uint4 packed = __ldg(reinterpret_cast<const uint4*>(row));
          const T* values = reinterpret_cast<const T*>(&packed);
#pragma unroll
          for (int v = 0; v < kVec; ++v) acc[v] += to_float(values[v]);
        } else {
          acc[0] += to_float(row[0]);
        }
      }
      T* dst = out + bag * dim + col;
      if constexpr (kVec == 8) {
        uint4 packed;
        T* values = reinterpret_cast<T*>(&packed);
#pragma unroll
        for (int v = 0; v < kVec; ++v) values[v] = from_float<T>(acc[v]);
        *reinterpret_cast<uint4*>(dst) = packed;
      } else {
        dst[0] = from_float<T>(acc[0]);
      }
    }
  }
}

template <typename T>
Status launch(const EmbeddingBagGlobals& g, cudaStream_t stream) {
  const bool vectorised = g.shape.dim % 8 == 0 &&
                          reinterpret_cast<std::uintptr_t>(g.table) % 16 == 0 &&
                          reinterpret_cast<std::uintptr_t>(g.out) % 16 == 0;
  if (vectorised)
    embedding_bag_kernel<T, 8><<<g.grid(), EmbeddingBagConfig::kThreads, 0, stream>>>(g);
  else
    embedding_bag_kernel<T, 1><<<g.grid(), EmbeddingBagConfig::kThreads, 0, stream>>>(g);
  CUDA_CHECK(cudaGetLastError());
  return Status::success();
}

}  // namespace

Status embedding_bag_can_implement(const EmbeddingBagShape& shape, DType dtype) {
  if (dtype == DType::FP8_E4M3) return Status::failure("embedding bag: bf16 or fp16 tables only");
  if (shape.table_rows < 1 || shape.dim < 1 || shape.bags < 1 || shape.pooling < 1)
    return Status::failure("embedding bag: table_rows, dim, bags and pooling must be >= 1");
  if (shape.table_rows > (std::int64_t{1} << 31) - 1)
    return Status::failure("embedding bag: table_rows must fit int32 indices");
  return Status::success();
}

Status embedding_bag_sum(const void* table, const std::int32_t* indices, void* out,
                         const EmbeddingBagShape& shape, const BagRange& range, DType dtype,
                         cudaStream_t stream) {
  OVERLAPSIM_TRY(embedding_bag_can_implement(shape, dtype));
  const std::int64_t last = range.first + (range.groups - 1) * range.group_stride + range.count;
  if (range.count < 1 || range.groups < 1 || range.first < 0 || last > shape.bags)
    return Status::failure("embedding bag: bag range outside [0, " + std::to_string(shape.bags) +
                           ")");
  const EmbeddingBagGlobals g{table, indices, out, shape, range};
  return dtype == DType::BF16 ? launch<__nv_bfloat16>(g, stream) : launch<__half>(g, stream);
}

}  // namespace overlapsim::kernels
