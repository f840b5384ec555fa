#pragma once
// The own GEMM's push epilogue (epilogue.cuh's concept) for the fused GEMM + all-to-all
// (MoE combine): every tile goes straight to the rank that owns its rows, at its place in
// that rank's receive buffer (NCCL all-to-all layout: [source][rows_per_rank][n]), over
// NVLink through a peer pointer; after the tile's stores one thread counts it done on the
// destination. Device-only, C++17.
#include <cstdint>

#include "kernels/fused/gemm_alltoall_kernel.hpp"
#include "kernels/gemm/epilogue.cuh"
#include "kernels/gemm/gemm_config.hpp"

namespace overlapsim::kernels::fused::gemm_a2a {

using gemm::GemmConfig;
using gemm::sm90::TileView;

struct PushEpilogue {
  static constexpr int kStoreSteps = 8;
  struct Params {
    PushArgs push;
    std::int32_t store_steps = 1;    // SchedulerOptions::store_steps
    std::int32_t vector_stores = 0;  // 16-byte stores after a quad transpose
  };

  static __device__ __forceinline__ int destination(const Params& p, const TileView& t) {
    return static_cast<int>(static_cast<std::int64_t>(t.tile_m) * GemmConfig::kTileM /
                            p.push.rows_per_rank);
  }

  static __device__ __forceinline__ void prefetch(const Params&, std::int32_t) {}

  // Destination rank in t.arrival, the tile's offset in its receive buffer in offset_elems.
  static __device__ __forceinline__ void annotate(const Params& p, TileView& t) {
    const int d = destination(p, t);
    const std::int64_t row =
        static_cast<std::int64_t>(t.tile_m) * GemmConfig::kTileM - d * p.push.rows_per_rank;
    t.arrival = d;
    t.offset_elems = p.push.rank * p.push.rows_per_rank * t.n + row * t.n +
                     static_cast<std::int64_t>(t.tile_n) * GemmConfig::kTileN;
  }

  template <class T>
  static __device__ __forceinline__ bool store_step(const Params& p, const TileView& t,
                                                    const std::uint32_t (&packed)[64], int consumer,
                                                    int step) {
    const std::int64_t stride = t.n;
    T* base = static_cast<T*>(p.push.recv[t.arrival]) + t.offset_elems;
    const bool full = t.valid_rows == GemmConfig::kTileM && t.valid_cols == GemmConfig::kTileN;
    const bool paired = ((stride | reinterpret_cast<uintptr_t>(base) / sizeof(T)) & 1) == 0;
    if (!full || !paired) {
      gemm::sm90::store_packed<T>(base, stride, t, packed, consumer);
      return true;
    }
    const bool vector =
        p.vector_stores != 0 && stride % 8 == 0 && (reinterpret_cast<uintptr_t>(base) & 15) == 0;
    gemm::sm90::store_packed_part<T>(base, stride, packed, consumer, step, p.store_steps, vector);
    return step + 1 >= p.store_steps;
  }

  template <class T>
  static __device__ __forceinline__ bool store_rest(const Params&, const TileView&,
                                                    const std::uint32_t (&)[64], int, int) {
    return false;
  }

  static __device__ __forceinline__ bool needs_after_tile(const Params&) { return true; }

  // One thread, after every consumer thread's stores of the tile (named barrier): a
  // system-scope fence (cumulative over the barrier, so the consumers' NVLink stores are
  // ordered before it) and a relaxed system-scope add on the destination's counter of
  // this source, which the destination's wait kernel reads with ld.acquire.sys.
  static __device__ __forceinline__ void after_tile(const Params& p, const TileView& t) {
    const int d = destination(p, t);
    asm volatile("fence.acq_rel.sys;" ::: "memory");
    asm volatile("red.relaxed.sys.global.add.u32 [%0], %1;" ::"l"(p.push.counters[d] + p.push.rank),
                 "r"(1u)
                 : "memory");
  }
};

}  // namespace overlapsim::kernels::fused::gemm_a2a
