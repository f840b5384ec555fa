#pragma once
// Per-tile epilogues of the own GEMM. The mainloop hands each consumer warpgroup its
// 64×256 fp32 accumulator block; an epilogue decides where the tile goes and what to
// publish afterwards. The kernel is a template over the epilogue type, so issue 5's
// variants plug in here without touching the mainloop. Device-only, C++17.
//
// Epilogue concept:
//   struct E {
//     struct Params { ... };                        // runtime arguments, in kernel params
//     template <class T> static __device__ void store(const Params&, const TileView&,
//                                                     const float (&acc)[128], int consumer);
//     static __device__ bool needs_after_tile(const Params&);  // uniform across the CTA
//     static __device__ void after_tile(const Params&, const TileView&);  // one thread,
//         // after every consumer thread's stores of the tile (named barrier)
//   };
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "kernels/gemm/gemm_config.hpp"

namespace overlapsim::kernels::gemm::sm90 {

struct TileView {
  int32_t tile_m = 0;
  int32_t tile_n = 0;
  int32_t tile = 0;       // tile_m·tiles_n + tile_n
  int32_t item = 0;       // scheduler work item
  int32_t valid_rows = 0; // ≤ kTileM at the bottom edge
  int32_t valid_cols = 0; // ≤ kTileN at the right edge
  int32_t m = 0;
  int32_t n = 0;
};

template <class T>
struct PackedPair;
template <>
struct PackedPair<__nv_bfloat16> {
  using type = __nv_bfloat162;
  static __device__ __forceinline__ type pack(float a, float b) { return __floats2bfloat162_rn(a, b); }
  static __device__ __forceinline__ __nv_bfloat16 one(float a) { return __float2bfloat16_rn(a); }
};
template <>
struct PackedPair<__half> {
  using type = __half2;
  static __device__ __forceinline__ type pack(float a, float b) { return __floats2half2_rn(a, b); }
  static __device__ __forceinline__ __half one(float a) { return __float2half_rn(a); }
};

// Stores one consumer warpgroup's 64×256 block of the tile at base + row·stride + col,
// skipping rows/cols beyond the tile's valid extent. wgmma's fp32 accumulator layout:
// register 4j+2h+e of thread (warp w, lane l) holds row 16w + l/4 + 8h, column
// 8j + 2(l%4) + e of the warpgroup's 64-row block.
template <class T>
__device__ __forceinline__ void store_accumulators(T* base, int64_t stride, const TileView& t,
                                                   const float (&acc)[128], int consumer) {
  const int lane = threadIdx.x % 32;
  const int warp = (threadIdx.x / 32) % 4;
  const int row0 = consumer * 64 + warp * 16 + lane / 4;
  const int col0 = 2 * (lane % 4);
  // Pairs are stored as one 4-byte word when every pair start is 4-byte aligned.
  const bool paired = ((stride | reinterpret_cast<uintptr_t>(base) / sizeof(T)) & 1) == 0;
  const bool full_tile = t.valid_rows == GemmConfig::kTileM && t.valid_cols == GemmConfig::kTileN;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int row = row0 + 8 * h;
    T* row_ptr = base + static_cast<int64_t>(row) * stride;
    if (full_tile && paired) {
#pragma unroll
      for (int j = 0; j < 32; ++j) {
        *reinterpret_cast<typename PackedPair<T>::type*>(row_ptr + 8 * j + col0) =
            PackedPair<T>::pack(acc[4 * j + 2 * h], acc[4 * j + 2 * h + 1]);
      }
    } else if (row < t.valid_rows) {
#pragma unroll
      for (int j = 0; j < 32; ++j) {
        const int col = 8 * j + col0;
        if (paired && col + 1 < t.valid_cols) {
          *reinterpret_cast<typename PackedPair<T>::type*>(row_ptr + col) =
              PackedPair<T>::pack(acc[4 * j + 2 * h], acc[4 * j + 2 * h + 1]);
        } else {
          if (col < t.valid_cols) row_ptr[col] = PackedPair<T>::one(acc[4 * j + 2 * h]);
          if (col + 1 < t.valid_cols) row_ptr[col + 1] = PackedPair<T>::one(acc[4 * j + 2 * h + 1]);
        }
      }
    }
  }
}

// The default epilogue: natural or remapped store, optional per-group completion signal,
// optional record of the schedule (debug). All choices are runtime pointers, uniform
// across the CTA, so one instantiation serves every mode.
struct StoreEpilogue {
  struct Params {
    void* c = nullptr;
    const int64_t* tile_offset_elems = nullptr;
    uint32_t* group_counters = nullptr;
    const int32_t* tile_group = nullptr;
    int32_t* order_record = nullptr;
  };

  template <class T>
  static __device__ __forceinline__ void store(const Params& p, const TileView& t,
                                               const float (&acc)[128], int consumer) {
    T* c = static_cast<T*>(p.c);
    if (p.tile_offset_elems != nullptr) {
      // Dense valid_rows × valid_cols block: the regions of consecutive tiles abut.
      store_accumulators<T>(c + p.tile_offset_elems[t.tile], t.valid_cols, t, acc, consumer);
    } else {
      T* base = c + static_cast<int64_t>(t.tile_m) * GemmConfig::kTileM * t.n +
                static_cast<int64_t>(t.tile_n) * GemmConfig::kTileN;
      store_accumulators<T>(base, t.n, t, acc, consumer);
    }
  }

  static __device__ __forceinline__ bool needs_after_tile(const Params& p) {
    return p.group_counters != nullptr || p.order_record != nullptr;
  }

  // Runs on one thread once all consumer threads stored the tile (named barrier): the
  // device-scope fence makes every one of those stores visible before the counter moves,
  // the same cumulativity argument as a grid-wide barrier.
  static __device__ __forceinline__ void after_tile(const Params& p, const TileView& t) {
    if (p.order_record != nullptr) {
      p.order_record[2 * t.tile] = t.item;
      p.order_record[2 * t.tile + 1] = static_cast<int32_t>(blockIdx.x);
    }
    if (p.group_counters != nullptr) {
      __threadfence();
      atomicAdd(p.group_counters + p.tile_group[t.tile], 1u);
    }
  }
};

}  // namespace overlapsim::kernels::gemm::sm90
