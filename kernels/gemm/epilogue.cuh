#pragma once
// Per-tile epilogues of the own GEMM. The mainloop hands each consumer warpgroup its
// 64×256 block, rounded to the output type and packed in pairs (64 registers, so the
// stores can be issued while the next tile's wgmma run); an epilogue decides where the
// tile goes and what to publish afterwards. The kernel is a template over the epilogue type, so
// the tile-wise variants plug in here without touching the mainloop. Device-only, C++17.
//
// Epilogue concept:
//   struct E {
//     struct Params { ... };                        // runtime arguments, in kernel params
//     static constexpr int kStoreSteps;             // a tile's store, in steps
//     template <class T> static __device__ bool store_step(const Params&, const TileView&,
//         const uint32_t (&packed)[64], int consumer, int step);  // true: the tile is stored
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
  // Filled once per tile by epilogues with kStoreSteps > 1 (annotate), so that the store
  // steps do not look their tables up again.
  int64_t offset_elems = 0;
  int32_t arrival = -1;
};

// One relaxed-free add with release semantics at GPU scope: every store that happens
// before it (this thread's, and the consumers' through the after-tile named barrier:
// release is cumulative) is visible at GPU scope, i.e. in L2, before the counter moves.
// Replaces fence.sc (__threadfence) + atomicAdd: one instruction, no full fence.
__device__ __forceinline__ void red_release_gpu_add(uint32_t* counter, uint32_t value) {
  asm volatile("red.release.gpu.global.add.u32 [%0], %1;" ::"l"(counter), "r"(value) : "memory");
}

// The sum of two packed pairs rounded once to T by the native paired add (add.bf16x2 /
// add.f16x2 on sm_90, round to nearest even), in one instruction instead of seven. It
// should equal unpacking both to fp32, adding and rounding: the fp32 sum of two values of
// T is exact while their exponents differ by at most 15 (bf16; 12 for fp16), and beyond
// that the smaller one is too small to move the sum onto a rounding tie of T.
template <class T>
__device__ __forceinline__ uint32_t add_pairs_rn(uint32_t a, uint32_t b);
template <>
__device__ __forceinline__ uint32_t add_pairs_rn<__nv_bfloat16>(uint32_t a, uint32_t b) {
  const __nv_bfloat162 s = __hadd2(*reinterpret_cast<const __nv_bfloat162*>(&a),
                                   *reinterpret_cast<const __nv_bfloat162*>(&b));
  return *reinterpret_cast<const uint32_t*>(&s);
}
template <>
__device__ __forceinline__ uint32_t add_pairs_rn<__half>(uint32_t a, uint32_t b) {
  const __half2 s =
      __hadd2(*reinterpret_cast<const __half2*>(&a), *reinterpret_cast<const __half2*>(&b));
  return *reinterpret_cast<const uint32_t*>(&s);
}

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

// Lane q of a quad holds word q of chunks k = 0..3 (w[k], a chunk = 8 consecutive bf16/fp16
// columns of its row); afterwards it holds all 4 words of chunk q, in order: a 4×4
// transpose across the quad in two butterfly steps. Step b (bit 1, then 2) swaps with lane
// q ^ b the two words whose index differs from q in that bit. All 32 lanes take part.
__device__ __forceinline__ void quad_transpose(uint32_t (&w)[4], int q) {
#pragma unroll
  for (int b = 1; b <= 2; b <<= 1) {
    const bool high = (q & b) != 0;
    // The words this lane gives away: indices with bit b != q's (lo/hi pair).
    const uint32_t give0 = high ? w[0] : w[b == 1 ? 1 : 2];
    const uint32_t give1 = high ? w[b == 1 ? 2 : 1] : w[3];
    const uint32_t got0 = __shfl_xor_sync(0xFFFFFFFFu, give0, b);
    const uint32_t got1 = __shfl_xor_sync(0xFFFFFFFFu, give1, b);
    if (b == 1) {
      w[0] = high ? got0 : w[0];
      w[2] = high ? got1 : w[2];
      w[1] = high ? w[1] : got0;
      w[3] = high ? w[3] : got1;
    } else {
      w[0] = high ? got0 : w[0];
      w[1] = high ? got1 : w[1];
      w[2] = high ? w[2] : got0;
      w[3] = high ? w[3] : got1;
    }
  }
}

// A full tile's share of this thread in parts: column group g (32 columns: j = 4g..4g+3)
// belongs to step g / (8 / steps) of `steps` (1, 2, 4 or 8), so a deferred store can be
// spread over several k-blocks of the next tile instead of queueing all 64 stores of
// every consumer thread at once behind the tensor cores' shared-memory reads.
// vector: the four lanes of a quad first transpose their 4×4 words of each column group
// (shuffles), so each lane holds 8 consecutive columns of its row and stores them with one
// 16-byte st.global.v4 (16 stores per thread per tile instead of 64; a warp's store then
// covers 8 rows × 64 contiguous bytes). Needs a 16-byte aligned base and stride % 8 == 0.
// The element → value map is that of store_packed (bit-identical results).
template <class T>
__device__ __forceinline__ void store_packed_part(T* base, int64_t stride,
                                                  const uint32_t (&packed)[64], int consumer,
                                                  int step, int steps, bool vector) {
  const int lane = threadIdx.x % 32;
  const int warp = (threadIdx.x / 32) % 4;
  const int q = lane % 4;
  const int row0 = consumer * 64 + warp * 16 + lane / 4;
  const int groups_per_step = 8 / steps;
#pragma unroll
  for (int g = 0; g < 8; ++g) {
    if (g / groups_per_step != step) continue;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      T* row_ptr = base + static_cast<int64_t>(row0 + 8 * h) * stride;
      uint32_t w[4];
#pragma unroll
      for (int k = 0; k < 4; ++k) w[k] = packed[2 * (4 * g + k) + h];
      if (!vector) {
#pragma unroll
        for (int k = 0; k < 4; ++k)
          *reinterpret_cast<uint32_t*>(row_ptr + 8 * (4 * g + k) + 2 * q) = w[k];
        continue;
      }
      quad_transpose(w, q);
      const uint32_t out[4] = {w[0], w[1], w[2], w[3]};
      *reinterpret_cast<uint4*>(row_ptr + 8 * (4 * g + q)) =
          make_uint4(out[0], out[1], out[2], out[3]);
    }
  }
}

// What every epilogue's after_tile starts with: whether it has anything to do (a group
// counter to move or the schedule to record; uniform across the CTA), and the record of
// which item and CTA produced the tile (debug).
template <class Params>
__device__ __forceinline__ bool signals_or_records(const Params& p) {
  return p.group_counters != nullptr || p.order_record != nullptr;
}
template <class Params>
__device__ __forceinline__ void record_order(const Params& p, const TileView& t) {
  if (p.order_record != nullptr) {
    p.order_record[2 * t.tile] = t.item;
    p.order_record[2 * t.tile + 1] = static_cast<int32_t>(blockIdx.x);
  }
}

// The default epilogue: natural or remapped store, optional per-group completion signal,
// optional record of the schedule (debug). All choices are runtime pointers, uniform
// across the CTA, so one instantiation serves every mode.
struct StoreEpilogue {
  // Up to 8 steps (Params::store_steps at run time): a deferred tile's store is spread over
  // the next tile's first store_steps k-blocks (own_gemm_sm90.cuh).
  static constexpr int kStoreSteps = 8;
  struct Params {
    void* c = nullptr;
    const int64_t* tile_offset_elems = nullptr;
    uint32_t* group_counters = nullptr;
    const int32_t* tile_group = nullptr;
    int32_t* order_record = nullptr;
    int32_t store_steps = 1;    // 1, 2, 4 or 8 (SchedulerOptions::store_steps)
    int32_t vector_stores = 0;  // 1: 16-byte stores after a quad transpose
  };

  static __device__ __forceinline__ void prefetch(const Params& p, int32_t tile) {
    if (p.tile_offset_elems != nullptr)
      asm volatile("prefetch.global.L1 [%0];" ::"l"(p.tile_offset_elems + tile));
  }

  // Where the tile starts (elements from c) and its row stride, once per tile.
  static __device__ __forceinline__ void annotate(const Params& p, TileView& t) {
    t.offset_elems = p.tile_offset_elems != nullptr
                         ? p.tile_offset_elems[t.tile]
                         : static_cast<int64_t>(t.tile_m) * GemmConfig::kTileM * t.n +
                               static_cast<int64_t>(t.tile_n) * GemmConfig::kTileN;
  }

  // Step `step` of the tile's store; true once it is complete. Edge tiles (and unaligned
  // destinations) are stored whole in step 0 by the general path.
  template <class T>
  static __device__ __forceinline__ bool store_step(const Params& p, const TileView& t,
                                                    const uint32_t (&packed)[64], int consumer,
                                                    int step) {
    // Dense valid_rows × valid_cols block when remapped: the regions of consecutive tiles
    // abut.
    const int64_t stride = p.tile_offset_elems != nullptr ? t.valid_cols : t.n;
    T* base = static_cast<T*>(p.c) + t.offset_elems;
    const bool full = t.valid_rows == GemmConfig::kTileM && t.valid_cols == GemmConfig::kTileN;
    const bool paired = ((stride | reinterpret_cast<uintptr_t>(base) / sizeof(T)) & 1) == 0;
    if (!full || !paired) {
      store_packed<T>(base, stride, t, packed, consumer);
      return true;
    }
    const bool vector =
        p.vector_stores != 0 && stride % 8 == 0 && (reinterpret_cast<uintptr_t>(base) & 15) == 0;
    store_packed_part<T>(base, stride, packed, consumer, step, p.store_steps, vector);
    return step + 1 >= p.store_steps;
  }

  // A CTA's last tile at once (see OwnerEpilogue::store_rest): the plain stores have no
  // dependent loads to gain from, so the kernel steps through them as usual.
  template <class T>
  static __device__ __forceinline__ bool store_rest(const Params&, const TileView&,
                                                    const uint32_t (&)[64], int, int) {
    return false;
  }

  static __device__ __forceinline__ bool needs_after_tile(const Params& p) {
    return signals_or_records(p);
  }

  // Runs on one thread once all consumer threads stored the tile (named barrier): the
  // GPU-scope release makes every one of those stores visible before the counter moves,
  // the same cumulativity argument as a grid-wide barrier. The readers (the wait kernel's
  // atomic, cuStreamWaitValue32, then NCCL's kernels) are on this GPU.
  static __device__ __forceinline__ void after_tile(const Params& p, const TileView& t) {
    record_order(p, t);
    if (p.group_counters != nullptr)
      red_release_gpu_add(p.group_counters + p.tile_group[t.tile], 1u);
  }
};

}  // namespace overlapsim::kernels::gemm::sm90
