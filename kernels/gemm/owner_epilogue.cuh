#pragma once
// The own GEMM's owner epilogue (the tile-wise copy-engine transport); the epilogue concept
// and the default StoreEpilogue are in epilogue.cuh. Device-only, C++17.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "kernels/common/global_timer.cuh"
#include "kernels/gemm/epilogue.cuh"
#include "kernels/gemm/gemm_config.hpp"

namespace overlapsim::kernels::gemm::sm90 {

// The tile-wise copy-engine transport (kernels/tilewise/copy_engine_layout.hpp): every rank owns one
// part of the output (a block of tile rows) and computes it LAST (rotated scheduler order,
// tile_scheduler.hpp). Tiles of other ranks' parts are stored and signalled exactly as by
// StoreEpilogue; the copy engines carry each finished group to its owner's receive buffer
// and then write the owner's "arrived" flag (epoch-valued). A tile of the own part
// (tile_arrival[tile] >= 0) is instead:
//   reduce = 1 (ReduceScatter / AllReduce): waited for (one thread per consumer warpgroup
//     polls the flags of its group from every peer with ld.acquire.sys and nanosleep
//     back-off, then a named barrier of that warpgroup), summed with the peers' partial
//     tiles in rank order — own value rounded to the output type first, each term widened
//     to fp32, the first term not added to zero (keeps -0), one rounding at the end — and
//     stored at own_out + own_out_begin_elems + (tile_offset_elems[tile] − own_begin_elems);
//   reduce = 0 (All-to-All): stored there without waiting.
// With 2 ranks the sum is float(own) + float(peer) rounded once, commutative, so both ranks
// and NCCL's 2-rank bf16/fp16 sum agree bit for bit; with more ranks the rank-order sum is
// not NCCL's ring order (tolerance only).
// Why the wait cannot deadlock: a rank's own part is last in its order, so a CTA that waits
// has issued every tile of the other parts it was given; every peer computes this rank's
// part among its FIRST tiles without waiting on anything, its stores are signalled by the
// producer warpgroup's signaller warp, and the transport (stream memory waits, cudaMemcpy
// on peer pointers, stream memory writes) uses no SM, so it progresses while this GEMM
// holds all of them. A missing flag (a bug, a dead peer) ends the wait after timeout_ns:
// *timed_out is set and the tile is stored without the missing terms.

template <class T>
__device__ __forceinline__ float2 unpack_pair(uint32_t w);
template <>
__device__ __forceinline__ float2 unpack_pair<__nv_bfloat16>(uint32_t w) {
  // bf16 is the top half of an fp32: widening is a shift (exact, NaN and -0 kept).
  return make_float2(__uint_as_float(w << 16), __uint_as_float(w & 0xFFFF0000u));
}
template <>
__device__ __forceinline__ float2 unpack_pair<__half>(uint32_t w) {
  return __half22float2(*reinterpret_cast<const __half2*>(&w));
}
template <class T>
__device__ __forceinline__ float unpack_one(uint16_t b);
template <>
__device__ __forceinline__ float unpack_one<__nv_bfloat16>(uint16_t b) {
  return __uint_as_float(static_cast<uint32_t>(b) << 16);
}
template <>
__device__ __forceinline__ float unpack_one<__half>(uint16_t b) {
  return __half2float(__ushort_as_half(b));
}
template <class T>
__device__ __forceinline__ uint16_t pack_one(float x);
template <>
__device__ __forceinline__ uint16_t pack_one<__nv_bfloat16>(float x) {
  return __bfloat16_as_ushort(__float2bfloat16_rn(x));
}
template <>
__device__ __forceinline__ uint16_t pack_one<__half>(float x) {
  return __half_as_ushort(__float2half_rn(x));
}

// The tile's values plus the peers' partial values at the same place, in rank order.
// recv points at slot 0's copy of this tile; slot s is part_elems further. Peer data is
// read through L2 only (ld.global.cg): L1 is not coherent with the copy engines' writes
// and may still hold the previous call's values.
template <class T>
struct PeerSum {
  const T* recv = nullptr;
  int64_t part_elems = 0;
  int32_t world = 1;
  int32_t rank = 0;

  __device__ __forceinline__ uint32_t word(uint32_t own, int64_t at) const {
    float2 sum = make_float2(0.0f, 0.0f);
    for (int32_t s = 0; s < world; ++s) {
      const float2 v = s == rank ? unpack_pair<T>(own)
                                 : unpack_pair<T>(__ldcg(reinterpret_cast<const unsigned int*>(
                                       recv + static_cast<int64_t>(s) * part_elems + at)));
      if (s == 0) {
        sum = v;
      } else {
        sum.x += v.x;
        sum.y += v.y;
      }
    }
    return pack_pair<T>(sum.x, sum.y);
  }

  __device__ __forceinline__ uint16_t half(uint16_t own, int64_t at) const {
    float sum = 0.0f;
    for (int32_t s = 0; s < world; ++s) {
      const float v = s == rank ? unpack_one<T>(own)
                                : unpack_one<T>(__ldcg(reinterpret_cast<const unsigned short*>(
                                      recv + static_cast<int64_t>(s) * part_elems + at)));
      sum = s == 0 ? v : sum + v;
    }
    return pack_one<T>(sum);
  }
};

__device__ __forceinline__ uint32_t load_acquire_sys(const uint32_t* p) {
  uint32_t v;
  asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

// Replaces each value this thread stored with store_packed (same thread → element map)
// by sum.word / sum.half of it. Not unrolled: it runs beside the next tile's wgmma, whose
// accumulators hold most registers.
template <class T>
__device__ __forceinline__ void add_in_place(T* base, int64_t stride, const TileView& t,
                                             int consumer, const PeerSum<T>& sum) {
  const int lane = threadIdx.x % 32;
  const int warp = (threadIdx.x / 32) % 4;
  const int row0 = consumer * 64 + warp * 16 + lane / 4;
  const int col0 = 2 * (lane % 4);
  const bool paired = ((stride | reinterpret_cast<uintptr_t>(base) / sizeof(T)) & 1) == 0;
#pragma unroll 1
  for (int h = 0; h < 2; ++h) {
    const int row = row0 + 8 * h;
    if (row >= t.valid_rows) continue;
    const int64_t row_at = static_cast<int64_t>(row) * stride;
#pragma unroll 4
    for (int j = 0; j < 32; ++j) {
      const int col = 8 * j + col0;
      const int64_t at = row_at + col;
      if (paired && col + 1 < t.valid_cols) {
        uint32_t* word = reinterpret_cast<uint32_t*>(base + at);
        *word = sum.word(*word, at);
      } else {
        uint16_t* out = reinterpret_cast<uint16_t*>(base + at);
        if (col < t.valid_cols) out[0] = sum.half(out[0], at);
        if (col + 1 < t.valid_cols) out[1] = sum.half(out[1], at + 1);
      }
    }
  }
}

// A quarter (row half h, column half q) of a full 128×256 tile (row stride 256) of a
// 2-rank reduction: out = round(float(own) + float(peer)) for this thread's share
// (store_packed's thread → element map). The 16 peer words are loaded first (independent
// loads in flight together), then summed and stored.
template <class T>
__device__ __forceinline__ void store_reduced_pair(T* out, const T* peer,
                                                   const uint32_t (&packed)[64], int consumer,
                                                   int h, int q, T* mirror) {
  const int lane = threadIdx.x % 32;
  const int warp = (threadIdx.x / 32) % 4;
  const int row0 = consumer * 64 + warp * 16 + lane / 4;
  const int col0 = 2 * (lane % 4);
  const int64_t at = static_cast<int64_t>(row0 + 8 * h) * GemmConfig::kTileN + col0;
  const unsigned int* src = reinterpret_cast<const unsigned int*>(peer + at);
  uint32_t* dst = reinterpret_cast<uint32_t*>(out + at);
  uint32_t* dst2 = mirror != nullptr ? reinterpret_cast<uint32_t*>(mirror + at) : nullptr;
  // packed[2j + h] is indexed with a runtime h and q: select with unrolled branches so the
  // array stays in registers.
  uint32_t theirs[16];
#pragma unroll
  for (int j = 0; j < 16; ++j) theirs[j] = __ldcg(src + 4 * (16 * q + j));  // 8 elements apart
#pragma unroll
  for (int hh = 0; hh < 2; ++hh) {
#pragma unroll
    for (int qq = 0; qq < 2; ++qq) {
      if (hh != h || qq != q) continue;
#pragma unroll
      for (int j = 0; j < 16; ++j) {
        const float2 a = unpack_pair<T>(packed[2 * (16 * qq + j) + hh]);
        const float2 b = unpack_pair<T>(theirs[j]);
        const uint32_t v = pack_pair<T>(a.x + b.x, a.y + b.y);
        dst[4 * (16 * qq + j)] = v;
        if (dst2 != nullptr) dst2[4 * (16 * qq + j)] = v;
      }
    }
  }
}

// One column group's sums of store_reduced_pair_vec: the quad transposes its own words of
// group g (rows h), so each lane holds 8 consecutive columns; they are summed with the
// peer's 16 bytes `theirs` and stored (and mirrored).
template <class T>
__device__ __forceinline__ void sum_store_group_vec(T* out, const uint32_t (&packed)[64],
                                                    int64_t row_at, int g, int h, int q,
                                                    const uint4& theirs, T* mirror,
                                                    bool packed_sum) {
  uint32_t w[4];
#pragma unroll
  for (int k = 0; k < 4; ++k) w[k] = packed[2 * (4 * g + k) + h];
  quad_transpose(w, q);
  const uint32_t t[4] = {theirs.x, theirs.y, theirs.z, theirs.w};
  uint32_t sum[4];
#pragma unroll
  for (int c = 0; c < 4; ++c) {
    if (packed_sum) {
      sum[c] = add_pairs_rn<T>(w[c], t[c]);
    } else {
      const float2 a = unpack_pair<T>(w[c]);
      const float2 b = unpack_pair<T>(t[c]);
      sum[c] = pack_pair<T>(a.x + b.x, a.y + b.y);
    }
  }
  const uint4 v = make_uint4(sum[0], sum[1], sum[2], sum[3]);
  *reinterpret_cast<uint4*>(out + row_at + 8 * (4 * g + q)) = v;
  if (mirror != nullptr) *reinterpret_cast<uint4*>(mirror + row_at + 8 * (4 * g + q)) = v;
}

// The row offset (elements) of this thread's rows h of a full tile.
__device__ __forceinline__ int64_t reduced_row_at(int consumer, int h) {
  const int lane = threadIdx.x % 32;
  const int warp = (threadIdx.x / 32) % 4;
  return static_cast<int64_t>(consumer * 64 + warp * 16 + lane / 4 + 8 * h) * GemmConfig::kTileN;
}

// store_reduced_pair with 16-byte accesses (vector_stores): for each of the quarter's 4
// column groups the quad transposes its words (quad_transpose), so each lane sums 8
// consecutive columns: 4 peer loads of 16 bytes (issued together) and 4 stores of 16
// bytes per thread instead of 16 + 16 of 4 bytes. Same sums, bit for bit. 16-byte
// aligned out and peer needed (and mirror, where given).
// mirror (nullptr: none): a second destination of the same sums at the same offsets, the
// peer's P over NVLink when the epilogue itself does an all-reduce's phase 2.
// packed_sum: each pair summed by add_pairs_rn instead of through fp32 (same bits).
template <class T>
__device__ __forceinline__ void store_reduced_pair_vec(T* out, const T* peer,
                                                       const uint32_t (&packed)[64], int consumer,
                                                       int h, int half, T* mirror,
                                                       bool packed_sum) {
  const int q = threadIdx.x % 4;
#pragma unroll
  for (int hh = 0; hh < 2; ++hh) {
#pragma unroll
    for (int qq = 0; qq < 2; ++qq) {
      if (hh != h || qq != half) continue;  // warp-uniform: the shuffles see every lane
      const int64_t row_at = reduced_row_at(consumer, hh);
      uint4 theirs[4];
#pragma unroll
      for (int gg = 0; gg < 4; ++gg)
        theirs[gg] =
            __ldcg(reinterpret_cast<const uint4*>(peer + row_at + 8 * (4 * (4 * qq + gg) + q)));
#pragma unroll
      for (int gg = 0; gg < 4; ++gg)
        sum_store_group_vec<T>(out, packed, row_at, 4 * qq + gg, hh, q, theirs[gg], mirror,
                               packed_sum);
    }
  }
}

// All four quarters of store_reduced_pair_vec at once: the 16 peer loads are issued
// together, so the tile pays one memory latency instead of four. For a CTA's last tile,
// where no next tile's wgmma batches are left to hide the quarter steps behind and the
// accumulators are dead (their registers hold the loads). Same sums, bit for bit.
template <class T>
__device__ __forceinline__ void store_reduced_tile_vec(T* out, const T* peer,
                                                       const uint32_t (&packed)[64], int consumer,
                                                       T* mirror, bool packed_sum) {
  const int q = threadIdx.x % 4;
  uint4 theirs[2][8];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int64_t row_at = reduced_row_at(consumer, h);
#pragma unroll
    for (int g = 0; g < 8; ++g)
      theirs[h][g] = __ldcg(reinterpret_cast<const uint4*>(peer + row_at + 8 * (4 * g + q)));
  }
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int64_t row_at = reduced_row_at(consumer, h);
#pragma unroll
    for (int g = 0; g < 8; ++g)
      sum_store_group_vec<T>(out, packed, row_at, g, h, q, theirs[h][g], mirror, packed_sum);
  }
}

// Brings this thread's rows of a peer's partial tile toward L2 (prefetch.global.L2, no
// registers held): the lines that store_reduced_pair_vec's four quarter steps will load,
// one lane per quad and two 128-byte lines per row and column half.
template <class T>
__device__ __forceinline__ void prefetch_peer_tile_l2(const T* peer, int consumer) {
  const int lane = threadIdx.x % 32;
  if (lane % 4 != 0) return;
  const int warp = (threadIdx.x / 32) % 4;
#pragma unroll
  for (int hh = 0; hh < 2; ++hh) {
    const T* row = peer + static_cast<int64_t>(consumer * 64 + warp * 16 + lane / 4 + 8 * hh) *
                              GemmConfig::kTileN;
#pragma unroll
    for (int line = 0; line < 4; ++line)  // 256 columns of 2 bytes = 4 lines of 128 bytes
      asm volatile("prefetch.global.L2 [%0];" ::"l"(row + 64 * line));
  }
}

// Named barriers 1 and 2: one per consumer warpgroup (0 is __syncthreads, 8..15 the
// after-tile ring of own_gemm_sm90.cuh).
constexpr uint32_t kArrivalBarrier = 1;

struct OwnerEpilogue {
  // A reduced tile's store is spread over 5 steps (one per k-block of the next tile): the
  // arrival check, then a quarter of the tile per step. Other full tiles take
  // Params::store_steps steps (up to 8) as in StoreEpilogue.
  static constexpr int kReducedSteps = 5;
  static constexpr int kStoreSteps = 8;
  struct Params {
    void* c = nullptr;
    const int64_t* tile_offset_elems = nullptr;
    uint32_t* group_counters = nullptr;
    const int32_t* tile_group = nullptr;  // -1: the tile signals nothing
    int32_t* order_record = nullptr;
    const int32_t* tile_arrival = nullptr;  // own-part group of each tile, -1 elsewhere
    const uint32_t* arrived = nullptr;      // [world][own_groups] epoch flags
    int32_t own_groups = 0;
    const void* recv = nullptr;  // [world][part_elems], the peers' partial own parts
    int64_t part_elems = 0;
    int64_t own_begin_elems = 0;
    void* own_out = nullptr;
    int64_t own_out_begin_elems = 0;
    // All-reduce phase 2 by the epilogue (2 ranks, full tiles; EpilogueArgs::peer_out):
    // each reduced own tile is also stored at peer_out + its part-relative offset.
    void* peer_out = nullptr;
    int32_t prefetch_peer = 0;  // EpilogueArgs::prefetch_peer_l2
    int32_t packed_sum = 0;     // EpilogueArgs::packed_sum
    int32_t world = 1;
    int32_t rank = 0;
    int32_t reduce = 0;
    uint32_t epoch = 0;
    uint64_t timeout_ns = 0;
    int* timed_out = nullptr;
    int32_t system_scope_signal = 1;  // 1: fence.sc.sys + atomicAdd, 0: red.release.gpu
    int32_t store_steps = 1;          // tiles of other parts: StoreEpilogue's store shape
    int32_t vector_stores = 0;
  };

  // The tile's table entries, once per tile (prefetch brought them into L1 when the tile's
  // mainloop started).
  static __device__ __forceinline__ void annotate(const Params& p, TileView& t) {
    t.offset_elems = p.tile_offset_elems[t.tile];
    t.arrival = p.tile_arrival[t.tile];
  }

  static __device__ __forceinline__ void wait_arrivals(const Params& p, int32_t group,
                                                       int consumer) {
    if (threadIdx.x % 128 == 0) {
      const uint64_t deadline = global_timer_ns() + p.timeout_ns;
      for (int32_t s = 0; s < p.world; ++s) {
        if (s == p.rank) continue;
        const uint32_t* flag = p.arrived + static_cast<int64_t>(s) * p.own_groups + group;
        unsigned sleep_ns = 64;
        // Epochs only grow (modulo 2^32): arrived once the flag is at or past this call's.
        while (static_cast<int32_t>(load_acquire_sys(flag) - p.epoch) < 0) {
          if (global_timer_ns() > deadline) {
            if (p.timed_out != nullptr) atomicExch(p.timed_out, 1);
            break;
          }
          __nanosleep(sleep_ns);
          if (sleep_ns < 1024) sleep_ns *= 2;
        }
      }
    }
    named_barrier_sync_128(kArrivalBarrier + static_cast<uint32_t>(consumer));
  }

  // The 2-rank fast path's wait: every thread polls the one flag itself (a warp's loads of
  // one address are one request), so its own later loads are ordered by its own acquire
  // and no barrier is needed; the poll's latency overlaps the wgmma batches in flight.
  static __device__ __forceinline__ void wait_arrival_each_thread(const Params& p, int32_t group) {
    const uint32_t* flag = p.arrived + static_cast<int64_t>(1 - p.rank) * p.own_groups + group;
    if (static_cast<int32_t>(load_acquire_sys(flag) - p.epoch) >= 0) return;
    const uint64_t deadline = global_timer_ns() + p.timeout_ns;
    unsigned sleep_ns = 64;
    while (static_cast<int32_t>(load_acquire_sys(flag) - p.epoch) < 0) {
      if (global_timer_ns() > deadline) {
        if (p.timed_out != nullptr) atomicExch(p.timed_out, 1);
        return;
      }
      __nanosleep(sleep_ns);
      if (sleep_ns < 1024) sleep_ns *= 2;
    }
  }

  static __device__ __forceinline__ void named_barrier_sync_128(uint32_t id) {
    asm volatile("bar.sync %0, 128;" ::"r"(id) : "memory");
  }

  // Brings the tile's table entries into L1 when its mainloop starts, so the deferred
  // store does not wait for them.
  static __device__ __forceinline__ void prefetch(const Params& p, int32_t tile) {
    asm volatile("prefetch.global.L1 [%0];" ::"l"(p.tile_offset_elems + tile));
    asm volatile("prefetch.global.L1 [%0];" ::"l"(p.tile_arrival + tile));
  }

  // An own-part tile's addresses: its offset inside the part, its place in own_out and the
  // one peer's partial of it in recv (2 ranks); mirror_at: its mirror in peer_out (or
  // nullptr), asked for only where the mirror is stored, so the branch stays there.
  template <class T>
  struct OwnTile {
    int64_t rel;
    T* out;
    const T* peer;
  };
  template <class T>
  static __device__ __forceinline__ OwnTile<T> own_tile(const Params& p, int64_t offset_elems) {
    const int64_t rel = offset_elems - p.own_begin_elems;
    return {rel, static_cast<T*>(p.own_out) + p.own_out_begin_elems + rel,
            static_cast<const T*>(p.recv) + static_cast<int64_t>(1 - p.rank) * p.part_elems + rel};
  }
  template <class T>
  static __device__ __forceinline__ T* mirror_at(const Params& p, int64_t rel) {
    return p.peer_out != nullptr ? static_cast<T*>(p.peer_out) + rel : nullptr;
  }

  // Step `step` (0..kStoreSteps−1) of the tile's store; returns true once the tile is
  // stored. Full tiles of a 2-rank reduction wait for the peer's group in step 0 and do a
  // quarter of the tile in each later step; every other tile is stored whole in step 0 and
  // is done there (the kernel then frees its packed registers for the next tile at once).
  template <class T>
  static __device__ __forceinline__ bool store_step(const Params& p, const TileView& t,
                                                    const uint32_t (&packed)[64], int consumer,
                                                    int step) {
    const int64_t offset = t.offset_elems;
    const int32_t group = t.arrival;
    if (group < 0) {
      T* base = static_cast<T*>(p.c) + offset;
      const bool full = t.valid_rows == GemmConfig::kTileM && t.valid_cols == GemmConfig::kTileN;
      if (!full || (reinterpret_cast<uintptr_t>(base) & 3) != 0) {
        store_packed<T>(base, t.valid_cols, t, packed, consumer);
        return true;
      }
      const bool vector = p.vector_stores != 0 && (reinterpret_cast<uintptr_t>(base) & 15) == 0;
      store_packed_part<T>(base, GemmConfig::kTileN, packed, consumer, step, p.store_steps, vector);
      return step + 1 >= p.store_steps;
    }
    const OwnTile<T> own = own_tile<T>(p, offset);
    const int64_t rel = own.rel;
    T* out = own.out;
    const T* peer_tile = own.peer;
    const bool paired = ((t.valid_cols | reinterpret_cast<uintptr_t>(out) / sizeof(T) |
                          reinterpret_cast<uintptr_t>(peer_tile) / sizeof(T)) &
                         1) == 0;
    const bool full = t.valid_rows == GemmConfig::kTileM && t.valid_cols == GemmConfig::kTileN;
    const bool out16 = (reinterpret_cast<uintptr_t>(out) & 15) == 0;
    if ((p.reduce == 0 || p.world < 2) && full && out16) {
      // Placed, not reduced (All-to-All, or the GEMM alone): the plain epilogue's store.
      store_packed_part<T>(out, GemmConfig::kTileN, packed, consumer, step, p.store_steps,
                           p.vector_stores != 0);
      return step + 1 >= p.store_steps;
    }
    const bool fast = p.reduce != 0 && p.world == 2 && paired && full;
    if (!fast) {
      store_general<T>(p, t, packed, consumer, group, rel, out);
      return true;
    }
    // The common case: one peer, full tile. Each later step loads 16 peer words per thread
    // together (one memory latency, not 16: run 1 measured the own part nearly twice as
    // slow with dependent per-word loads), sums them with the packed own values and
    // stores once.
    if (step == 0) {
      wait_arrival_each_thread(p, group);
      if (p.prefetch_peer != 0) prefetch_peer_tile_l2<T>(peer_tile, consumer);
      return false;
    }
    T* mirror = mirror_at<T>(p, rel);
    if (p.vector_stores != 0 && out16 && (reinterpret_cast<uintptr_t>(peer_tile) & 15) == 0 &&
        (reinterpret_cast<uintptr_t>(mirror) & 15) == 0) {
      store_reduced_pair_vec<T>(out, peer_tile, packed, consumer, (step - 1) >> 1, (step - 1) & 1,
                                mirror, p.packed_sum != 0);
    } else {
      store_reduced_pair<T>(out, peer_tile, packed, consumer, (step - 1) >> 1, (step - 1) & 1,
                            mirror);
    }
    return step == kReducedSteps - 1;
  }

  // The rest of a CTA's last tile from step `step` on, at once, where that is the 2-rank
  // reduction's 16-byte path: its quarter steps would otherwise run back to back after
  // the mainloop, each waiting for its own peer loads, with no wgmma left to hide them.
  // Returns false (nothing done) for every other tile: the caller steps through it.
  template <class T>
  static __device__ __forceinline__ bool store_rest(const Params& p, const TileView& t,
                                                    const uint32_t (&packed)[64], int consumer,
                                                    int step) {
    const int32_t group = t.arrival;
    if (group < 0 || step > 1 || p.reduce == 0 || p.world != 2 || p.vector_stores == 0)
      return false;
    if (t.valid_rows != GemmConfig::kTileM || t.valid_cols != GemmConfig::kTileN) return false;
    const OwnTile<T> own = own_tile<T>(p, t.offset_elems);
    T* out = own.out;
    const T* peer_tile = own.peer;
    T* mirror = mirror_at<T>(p, own.rel);
    if (((reinterpret_cast<uintptr_t>(out) | reinterpret_cast<uintptr_t>(peer_tile) |
          reinterpret_cast<uintptr_t>(mirror)) &
         15) != 0)
      return false;
    if (step == 0) wait_arrival_each_thread(p, group);
    store_reduced_tile_vec<T>(out, peer_tile, packed, consumer, mirror, p.packed_sum != 0);
    return true;
  }

  // Edge tiles, more than 2 ranks, or no reduction: own values first (no wait), then the
  // peers' terms added in place; the second pass re-reads only what this thread stored.
  template <class T>
  static __device__ __forceinline__ void store_general(const Params& p, const TileView& t,
                                                       const uint32_t (&packed)[64], int consumer,
                                                       int32_t group, int64_t rel, T* out) {
    store_packed<T>(out, t.valid_cols, t, packed, consumer);
    if (p.reduce == 0 || p.world < 2) return;
    wait_arrivals(p, group, consumer);
    PeerSum<T> sum;
    sum.recv = static_cast<const T*>(p.recv) + rel;
    sum.part_elems = p.part_elems;
    sum.world = p.world;
    sum.rank = p.rank;
    add_in_place<T>(out, t.valid_cols, t, consumer, sum);
  }

  static __device__ __forceinline__ bool needs_after_tile(const Params& p) {
    return signals_or_records(p);
  }

  static __device__ __forceinline__ void after_tile(const Params& p, const TileView& t) {
    record_order(p, t);
    if (p.group_counters != nullptr) {
      const int32_t group = p.tile_group[t.tile];
      if (group >= 0) {
        // The readers are this GPU's front end (cuStreamWaitValue32) and then a copy engine
        // (cudaMemcpyAsync after that wait on the same stream); both read this GPU's memory
        // through its L2, where a GPU-scope release already makes the tile's stores
        // visible. The system-scope fence is the default only because it measured no
        // slower (own_gemm.hpp, EpilogueArgs::system_scope_signal).
        // With peer_out the tile's stores also went to a peer over NVLink, whose reader
        // learns of them through a flag our stream writes after this counter: only the
        // system scope orders them before it.
        if (p.system_scope_signal != 0 || p.peer_out != nullptr) {
          __threadfence_system();
          atomicAdd(p.group_counters + group, 1u);
        } else {
          red_release_gpu_add(p.group_counters + group, 1u);
        }
      }
    }
  }
};

}  // namespace overlapsim::kernels::gemm::sm90
