#pragma once
// Per-tile epilogues of the own GEMM. The mainloop hands each consumer warpgroup its
// 64×256 block, rounded to the output type and packed in pairs (64 registers, so the
// stores can be issued while the next tile's wgmma run); an epilogue decides where the
// tile goes and what to publish afterwards. The kernel is a template over the epilogue type, so
// issue 5's variants plug in here without touching the mainloop. Device-only, C++17.
//
// Epilogue concept:
//   struct E {
//     struct Params { ... };                        // runtime arguments, in kernel params
//     template <class T> static __device__ void store(const Params&, const TileView&,
//                                                     const uint32_t (&packed)[64], int consumer);
//     static __device__ bool needs_after_tile(const Params&);  // uniform across the CTA
//     static __device__ void after_tile(const Params&, const TileView&);  // one thread of
//         // the producer warpgroup's signaller warp, after every consumer thread's stores
//         // of the tile (named barrier: consumers bar.arrive, the signaller bar.syncs)
//   };
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "kernels/gemm/gemm_config.hpp"

namespace overlapsim::kernels::gemm::sm90 {

struct TileView {
  int32_t tile_m = 0;
  int32_t tile_n = 0;
  int32_t tile = 0;        // tile_m·tiles_n + tile_n
  int32_t item = 0;        // scheduler work item
  int32_t valid_rows = 0;  // ≤ kTileM at the bottom edge
  int32_t valid_cols = 0;  // ≤ kTileN at the right edge
  int32_t m = 0;
  int32_t n = 0;
};

// Two adjacent outputs rounded to T, the first in the low half (memory order).
template <class T>
__device__ __forceinline__ uint32_t pack_pair(float a, float b);
template <>
__device__ __forceinline__ uint32_t pack_pair<__nv_bfloat16>(float a, float b) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(a, b);
  return *reinterpret_cast<const uint32_t*>(&v);
}
template <>
__device__ __forceinline__ uint32_t pack_pair<__half>(float a, float b) {
  const __half2 v = __floats2half2_rn(a, b);
  return *reinterpret_cast<const uint32_t*>(&v);
}

// wgmma's fp32 accumulator layout: register 4j+2h+e of thread (warp w, lane l) holds row
// 16w + l/4 + 8h, column 8j + 2(l%4) + e of the warpgroup's 64-row block. packed[2j+h]
// holds the pair (e = 0, 1).
template <class T>
__device__ __forceinline__ void pack_accumulators(const float (&acc)[128], uint32_t (&packed)[64]) {
#pragma unroll
  for (int j = 0; j < 32; ++j) {
#pragma unroll
    for (int h = 0; h < 2; ++h)
      packed[2 * j + h] = pack_pair<T>(acc[4 * j + 2 * h], acc[4 * j + 2 * h + 1]);
  }
}

// Stores one consumer warpgroup's 64×256 block of the tile at base + row·stride + col,
// skipping rows/cols beyond the tile's valid extent.
template <class T>
__device__ __forceinline__ void store_packed(T* base, int64_t stride, const TileView& t,
                                             const uint32_t (&packed)[64], int consumer) {
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
        *reinterpret_cast<uint32_t*>(row_ptr + 8 * j + col0) = packed[2 * j + h];
      }
    } else if (row < t.valid_rows) {
#pragma unroll
      for (int j = 0; j < 32; ++j) {
        const int col = 8 * j + col0;
        const uint32_t pair = packed[2 * j + h];
        if (paired && col + 1 < t.valid_cols) {
          *reinterpret_cast<uint32_t*>(row_ptr + col) = pair;
        } else {
          uint16_t* out = reinterpret_cast<uint16_t*>(row_ptr);
          if (col < t.valid_cols) out[col] = static_cast<uint16_t>(pair & 0xFFFF);
          if (col + 1 < t.valid_cols) out[col + 1] = static_cast<uint16_t>(pair >> 16);
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
                                               const uint32_t (&packed)[64], int consumer) {
    T* c = static_cast<T*>(p.c);
    if (p.tile_offset_elems != nullptr) {
      // Dense valid_rows × valid_cols block: the regions of consecutive tiles abut.
      store_packed<T>(c + p.tile_offset_elems[t.tile], t.valid_cols, t, packed, consumer);
    } else {
      T* base = c + static_cast<int64_t>(t.tile_m) * GemmConfig::kTileM * t.n +
                static_cast<int64_t>(t.tile_n) * GemmConfig::kTileN;
      store_packed<T>(base, t.n, t, packed, consumer);
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
