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
  // The bag (row of the index matrix and of the output) of work item `item`.
  __device__ std::int64_t bag_of(std::int64_t item) const {
    return range.first + (item / range.count) * range.group_stride + item % range.count;
  }
  // Enough blocks for every bag when each warp takes `bags_per_warp` of them (the kernels
  // loop over the rest past 2^20 blocks).
  dim3 grid(std::int64_t bags_per_warp = 1) const {
    const std::int64_t per_block = EmbeddingBagConfig::kWarpsPerBlock * bags_per_warp;
    const std::int64_t blocks = (total_bags() + per_block - 1) / per_block;
    return dim3(
        static_cast<unsigned>(std::min<std::int64_t>(std::max<std::int64_t>(blocks, 1), 1 << 20)));
  }
};

// Scalar path (dim not a multiple of 8, or unaligned buffers): one element per lane per step.
template <typename T>
__global__ void __launch_bounds__(EmbeddingBagConfig::kThreads)
    embedding_bag_scalar_kernel(const EmbeddingBagGlobals g) {
  const int lane = threadIdx.x % 32;
  const std::int64_t warps = std::int64_t{gridDim.x} * EmbeddingBagConfig::kWarpsPerBlock;
  const T* table = static_cast<const T*>(g.table);
  T* out = static_cast<T*>(g.out);
  const std::int64_t dim = g.shape.dim;
  const std::int64_t pooling = g.shape.pooling;
  for (std::int64_t w =
           blockIdx.x * std::int64_t{EmbeddingBagConfig::kWarpsPerBlock} + threadIdx.x / 32;
       w < g.total_bags(); w += warps) {
    const std::int64_t bag = g.bag_of(w);
    const std::int32_t* bag_indices = g.indices + bag * pooling;
    for (std::int64_t col = lane; col < dim; col += 32) {
      float acc = 0.0f;
      for (std::int64_t j = 0; j < pooling; ++j)
        acc += to_float(table[static_cast<std::int64_t>(__ldg(bag_indices + j)) * dim + col]);
      out[bag * dim + col] = from_float<T>(acc);
    }
  }
}

// Vectorised path: 16-byte loads (8 elements per lane). A random row gather is latency
// bound, so the warp keeps many independent row loads in flight: its 32 lanes split into
// kGroups groups of 32 / kGroups lanes (one group spans a row of dim <= 256 / kGroups), and
// each group issues kUnroll row loads before it adds any. With kBagPerGroup each group sums
// its own bag (short bags: pooling 2 up to kGroups * kUnroll; pooling 1 goes to
// embedding_bag_short_kernel, several bags a group); otherwise the groups take interleaved
// indices of one bag and their partial sums meet through warp shuffles. A bag's indices
// come in with one coalesced load per batch and travel by shuffle.
template <typename T, int kGroups, int kUnroll, bool kBagPerGroup>
__global__ void __launch_bounds__(EmbeddingBagConfig::kThreads)
    embedding_bag_vector_kernel(const EmbeddingBagGlobals g) {
  constexpr int kVec = 8;
  constexpr int kGroupLanes = 32 / kGroups;
  constexpr int kBatch = kBagPerGroup ? kGroupLanes : 32;  // indices per coalesced load
  constexpr int kBagsPerWarp = kBagPerGroup ? kGroups : 1;
  constexpr int kStep = kBagPerGroup ? 1 : kGroups;  // index stride within a group
  constexpr unsigned kAll = 0xffffffffu;
  const int lane = threadIdx.x % 32;
  const int group = lane / kGroupLanes;
  const int group_lane = lane % kGroupLanes;
  const int batch_lane = kBagPerGroup ? group_lane : lane;
  const int offset = kBagPerGroup ? 0 : group;
  const std::int64_t warps = std::int64_t{gridDim.x} * EmbeddingBagConfig::kWarpsPerBlock;
  const std::int64_t total = g.total_bags();
  const T* table = static_cast<const T*>(g.table);
  T* out = static_cast<T*>(g.out);
  const std::int64_t dim = g.shape.dim;
  const std::int64_t pooling = g.shape.pooling;
  for (std::int64_t w =
           blockIdx.x * std::int64_t{EmbeddingBagConfig::kWarpsPerBlock} + threadIdx.x / 32;
       w * kBagsPerWarp < total; w += warps) {
    // Every lane stays in the loop (the shuffles need the whole warp); lanes of a group
    // past the last bag only load nothing.
    const std::int64_t item = w * kBagsPerWarp + (kBagPerGroup ? group : 0);
    const bool valid = item < total;
    const std::int64_t bag = valid ? g.bag_of(item) : 0;
    const std::int32_t* bag_indices = g.indices + bag * pooling;
    for (std::int64_t col0 = 0; col0 < dim; col0 += kGroupLanes * kVec) {
      const std::int64_t col = col0 + std::int64_t{group_lane} * kVec;
      const bool active = valid && col < dim;
      float acc[kVec];
#pragma unroll
      for (int v = 0; v < kVec; ++v) acc[v] = 0.0f;
      for (std::int64_t base = 0; base < pooling; base += kBatch) {
        const int n = static_cast<int>(pooling - base < kBatch ? pooling - base : kBatch);
        const std::int32_t mine =
            valid && batch_lane < n ? __ldg(bag_indices + base + batch_lane) : 0;
        for (int first = 0; first < n; first += kStep * kUnroll) {
          uint4 packed[kUnroll];
#pragma unroll
          for (int u = 0; u < kUnroll; ++u) {
            const int j = first + u * kStep + offset;
            const std::int32_t row = __shfl_sync(kAll, mine, j & (kBatch - 1), kBatch);
            packed[u] = make_uint4(0, 0, 0, 0);  // zero bits are +0 in bf16 and fp16
            if (j < n && active)
              packed[u] = __ldg(reinterpret_cast<const uint4*>(
                  table + static_cast<std::int64_t>(row) * dim + col));
          }
#pragma unroll
          for (int u = 0; u < kUnroll; ++u) {
            const T* values = reinterpret_cast<const T*>(&packed[u]);
#pragma unroll
            for (int v = 0; v < kVec; ++v) acc[v] += to_float(values[v]);
          }
        }
      }
      if constexpr (!kBagPerGroup) {
#pragma unroll
        for (int stride = kGroupLanes; stride < 32; stride *= 2)
#pragma unroll
          for (int v = 0; v < kVec; ++v) acc[v] += __shfl_xor_sync(kAll, acc[v], stride);
      }
      if (active && (kBagPerGroup || group == 0)) {
        uint4 result;
        T* values = reinterpret_cast<T*>(&result);
#pragma unroll
        for (int v = 0; v < kVec; ++v) values[v] = from_float<T>(acc[v]);
        *reinterpret_cast<uint4*>(out + bag * dim + col) = result;
      }
    }
  }
}

// Short bags (used at pooling 1): each lane group sums kBags bags of its own. A group
// with one bag has only `pooling` row loads in flight (a warp at pooling 1: kGroups
// loads), too few for a random gather; so the group first issues the row loads
// of all its kBags bags (kUnroll per bag per round), then adds them. Each bag's sum still
// runs over its indices in order, as in embedding_bag_vector_kernel, so the results are
// the same bits. Bag m of group g in warp w is item (w * kBags + m) * kGroups + g, so a
// warp's stores stay contiguous.
template <typename T, int kGroups, int kBags, int kUnroll>
__global__ void __launch_bounds__(EmbeddingBagConfig::kThreads, kBags * kUnroll <= 4 ? 2 : 3)
    embedding_bag_short_kernel(const EmbeddingBagGlobals g) {
  constexpr int kVec = 8;
  constexpr int kGroupLanes = 32 / kGroups;
  constexpr int kBatch = kGroupLanes;  // indices per coalesced load, one bag
  constexpr int kItemsPerWarp = kGroups * kBags;
  constexpr unsigned kAll = 0xffffffffu;
  const int lane = threadIdx.x % 32;
  const int group = lane / kGroupLanes;
  const int group_lane = lane % kGroupLanes;
  const std::int64_t warps = std::int64_t{gridDim.x} * EmbeddingBagConfig::kWarpsPerBlock;
  const std::int64_t total = g.total_bags();
  const T* table = static_cast<const T*>(g.table);
  T* out = static_cast<T*>(g.out);
  const std::int64_t dim = g.shape.dim;
  const std::int64_t pooling = g.shape.pooling;
  for (std::int64_t w =
           blockIdx.x * std::int64_t{EmbeddingBagConfig::kWarpsPerBlock} + threadIdx.x / 32;
       w * kItemsPerWarp < total; w += warps) {
    // Every lane stays in the loop (the shuffles need the whole warp); a bag past the last
    // one loads nothing and stores nothing.
    bool valid[kBags];
    std::int64_t bag[kBags];
#pragma unroll
    for (int m = 0; m < kBags; ++m) {
      const std::int64_t item = (w * kBags + m) * kGroups + group;
      valid[m] = item < total;
      bag[m] = valid[m] ? g.bag_of(item) : 0;
    }
    for (std::int64_t col0 = 0; col0 < dim; col0 += kGroupLanes * kVec) {
      const std::int64_t col = col0 + std::int64_t{group_lane} * kVec;
      float acc[kBags][kVec];
#pragma unroll
      for (int m = 0; m < kBags; ++m)
#pragma unroll
        for (int v = 0; v < kVec; ++v) acc[m][v] = 0.0f;
      for (std::int64_t base = 0; base < pooling; base += kBatch) {
        const int n = static_cast<int>(pooling - base < kBatch ? pooling - base : kBatch);
        std::int32_t mine[kBags];
#pragma unroll
        for (int m = 0; m < kBags; ++m)
          mine[m] = valid[m] && group_lane < n ? __ldg(g.indices + bag[m] * pooling + base +
                                                       group_lane)
                                               : 0;
        for (int first = 0; first < n; first += kUnroll) {
          uint4 packed[kBags][kUnroll];
#pragma unroll
          for (int u = 0; u < kUnroll; ++u) {
            const int j = first + u;
#pragma unroll
            for (int m = 0; m < kBags; ++m) {
              const std::int32_t row = __shfl_sync(kAll, mine[m], j & (kBatch - 1), kBatch);
              packed[m][u] = make_uint4(0, 0, 0, 0);  // zero bits are +0 in bf16 and fp16
              if (j < n && valid[m] && col < dim)
                packed[m][u] = __ldg(reinterpret_cast<const uint4*>(
                    table + static_cast<std::int64_t>(row) * dim + col));
            }
          }
#pragma unroll
          for (int m = 0; m < kBags; ++m)
#pragma unroll
            for (int u = 0; u < kUnroll; ++u) {
              const T* values = reinterpret_cast<const T*>(&packed[m][u]);
#pragma unroll
              for (int v = 0; v < kVec; ++v) acc[m][v] += to_float(values[v]);
            }
        }
      }
#pragma unroll
      for (int m = 0; m < kBags; ++m) {
        if (valid[m] && col < dim) {
          uint4 result;
          T* values = reinterpret_cast<T*>(&result);
#pragma unroll
          for (int v = 0; v < kVec; ++v) values[v] = from_float<T>(acc[m][v]);
          *reinterpret_cast<uint4*>(out + bag[m] * dim + col) = result;
        }
      }
    }
  }
}

template <typename T, int kGroups, int kBags, int kUnroll>
void launch_short(const EmbeddingBagGlobals& g, cudaStream_t stream) {
  // A warp takes kGroups * kBags bags, so fewer blocks cover them.
  embedding_bag_short_kernel<T, kGroups, kBags, kUnroll>
      <<<g.grid(kGroups * kBags), EmbeddingBagConfig::kThreads, 0, stream>>>(g);
}

// Launches the vectorised kernel with kGroups lane groups, each group its own bag when
// the bags are too short to fill the groups' loads; at pooling 1 the short-bag kernel
// instead, 4 bags a group. More bags a group cost registers (kBags * 8 sums, kBags
// 16-byte pieces) and with them resident warps, which also carry loads in flight; the
// launch bounds hold it to 2 blocks of 8 warps an SM without spills: 16 warps x 8 rows in
// flight, against about 40 warps x 2 rows with one bag a group.
template <typename T, int kGroups, int kUnroll>
void launch_vector(const EmbeddingBagGlobals& g, cudaStream_t stream) {
  constexpr int kThreads = EmbeddingBagConfig::kThreads;
  if (kGroups > 1 && g.shape.pooling < kGroups * kUnroll) {
    if (g.shape.pooling == 1) {
      launch_short<T, kGroups, 4, 1>(g, stream);
    } else {
      // Pooling 2 and up keeps one bag a group: 2 bags a group (4 loads each, 3 blocks an
      // SM) measured slower at 65536 x 3 on an H200 (33 against 27-29 us).
      embedding_bag_vector_kernel<T, kGroups, kUnroll, true>
          <<<g.grid(kGroups), kThreads, 0, stream>>>(g);
    }
  } else {
    embedding_bag_vector_kernel<T, kGroups, kUnroll, false><<<g.grid(), kThreads, 0, stream>>>(g);
  }
}

template <typename T>
Status launch(const EmbeddingBagGlobals& g, cudaStream_t stream) {
  const bool vectorised = g.shape.dim % 8 == 0 &&
                          reinterpret_cast<std::uintptr_t>(g.table) % 16 == 0 &&
                          reinterpret_cast<std::uintptr_t>(g.out) % 16 == 0;
  constexpr int kUnroll = 4;
  // Groups per warp: as many as keep every lane on a row (a row's 16-byte pieces per group).
  const std::int64_t pieces = g.shape.dim / 8;
  if (!vectorised)
    embedding_bag_scalar_kernel<T><<<g.grid(), EmbeddingBagConfig::kThreads, 0, stream>>>(g);
  else if (pieces <= 8)
    launch_vector<T, 4, kUnroll>(g, stream);
  else if (pieces <= 16)
    launch_vector<T, 2, kUnroll>(g, stream);
  else
    launch_vector<T, 1, kUnroll>(g, stream);
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
