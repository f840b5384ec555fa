#pragma once
// The own GEMM's kernel for sm_90a, a template over element type and epilogue.
//
// One CTA per SM, persistent: CTA b computes work items b, b+grid, b+2·grid, ... in the
// order of tile_scheduler.hpp. Warpgroup 0 is the producer: one thread issues the TMA
// loads of A (128×64) and B (256×64) into a ring of kStages shared-memory stages, each
// stage guarded by a "full" mbarrier (TMA bytes landed) and an "empty" mbarrier (both
// consumers finished reading it). Warpgroups 1 and 2 are consumers: each issues
// wgmma m64n256k16 on its 64 rows of A against all 256 columns of B, keeping one batch of
// wgmma in flight while releasing the previous stage, then runs the epilogue from
// registers. The producer runs ahead into the next tile during the epilogue.
// kDeferStores: a finished tile is packed to the output type (64 registers) and its
// stores (and signal) are issued right after the next tile's first wgmma batch, so they
// drain while the tensor cores work instead of leaving them idle.
// kClusterM = 2 (v3): the grid runs in clusters of 2 CTAs along M computing tile rows 2p and
// 2p+1 of one tile column (tile_of_item_clustered). Each producer loads its own A box and
// HALF of the shared B box (128 of 256 rows) with TMA multicast into both CTAs, so a
// stage's full barrier counts 48 KiB from two producers; a stage may be refilled only when
// the consumers of BOTH CTAs released it (the peer's multicast writes into it too), so each
// consumer warp arrives on the empty barrier of both CTAs (16 arrivals a phase). The
// cluster synchronises after barrier initialisation and before exit (no remote arrival
// into an exited CTA). The wgmma sequence, hence the k-accumulation order and every
// result bit, is the same for both.
// C++17, device code only for sm_90a (other targets compile to a trap).
#include <cuda.h>

#include <cstdint>

#include "kernels/common/global_timer.cuh"
#include "kernels/gemm/epilogue.cuh"
#include "kernels/gemm/gemm_config.hpp"
#include "kernels/gemm/sm90_primitives.cuh"
#include "kernels/gemm/tile_scheduler.hpp"
#include "kernels/gemm/wgmma_sm90.cuh"

namespace overlapsim::kernels::gemm::sm90 {

// AllGather+GEMM (kernels/tilewise/allgather_gemm.hpp): A is the gathered [M x K], whose
// row blocks (M / world rows each, one per rank) are written into this GPU's memory by the
// peers' copy engines while the GEMM runs. Block `own_block` is this rank's own rows, read
// in place through map_a_own and never waited for; before the first TMA load of A for a
// tile in chunk c of block s, the producer thread waits until flags[s * chunks + c] has
// reached `epoch` (ld.acquire.sys; written by the sender's stream after its copy), then
// fences the generic proxy against the async proxy so the TMA reads what the copy wrote.
// flags == nullptr: no waits, map_a for every row (the plain GEMM).
struct GatherWait {
  const uint32_t* flags = nullptr;
  uint32_t epoch = 0;
  int32_t own_block = -1;
  int32_t block_tile_rows = 1;  // tile rows per block (M / world / 128)
  int32_t chunk_tile_rows = 1;  // tile rows per chunk of a block
  int32_t chunks = 1;           // chunks per block
  uint64_t timeout_ns = 0;
  int* timed_out = nullptr;
};

template <class Epilogue>
struct KernelParams {
  CUtensorMap map_a;  // K-major A: dims {K', M}, box {64, 128}, 128-byte swizzle
  CUtensorMap map_b;  // K-major B: dims {K', N}, box {64, 256 / kClusterM}
  CUtensorMap map_a_own;  // GatherWait: the own block's rows in place, dims {K', M / world}
  int32_t m = 0;
  int32_t n = 0;
  int32_t k_blocks = 0;  // ceil(K' / 64)
  int32_t tiles_m = 0;
  int32_t tiles_n = 0;
  int32_t group_m = 1;
  int32_t row_blocks = 1;  // tile_of_item_blocked(): 1 = plain grouped raster
  int32_t row_shift = 0;   // tile_of_item_scheduled(): rank-rotated order, 0 = none
  int32_t row_period = 0;  // tile_of_item_scheduled(): slab order's rotation period, 0 = none
  int32_t skew_world = 0;  // tile_of_item_scheduled(): skewed slab order's world, 0 = plain
  int32_t cluster_m = 1;   // tile_of_item_clustered(): the kernel's kClusterM
  // Split last wave (tile_scheduler.hpp work_unit): items from split_first on are parts of
  // `split` per tile. split_partials: parts 0 .. split − 2 of each tail tile, fp32 in the
  // accumulators' register order ([tail·(split − 1) + part][consumer][32][128] float4, so
  // every store and load of a warp is 512 contiguous bytes); split_counters: [tail][consumer],
  // zero between calls (the finisher resets its own after the wait).
  int32_t split = 1;
  int32_t split_first = 0;
  float4* split_partials = nullptr;
  uint32_t* split_counters = nullptr;
  uint64_t split_timeout_ns = 0;
  int* split_timed_out = nullptr;  // set when a finisher gave up waiting
  GatherWait gather;
  typename Epilogue::Params epilogue;
};

__device__ __forceinline__ uint32_t load_flag_acquire_sys(const uint32_t* p) {
  uint32_t v;
  asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

// The producer's wait for a gathered chunk of A (GatherWait). Epochs only grow (modulo
// 2^32): the chunk is in once its flag is at or past this call's. On timeout it flags
// timed_out and goes on (the result is then wrong, and the host reports the timeout).
__device__ __forceinline__ void wait_gathered_chunk(const GatherWait& g, int32_t flag_index) {
  const uint32_t* flag = g.flags + flag_index;
  if (static_cast<int32_t>(load_flag_acquire_sys(flag) - g.epoch) < 0) {
    const uint64_t deadline = global_timer_ns() + g.timeout_ns;
    unsigned sleep_ns = 32;
    while (static_cast<int32_t>(load_flag_acquire_sys(flag) - g.epoch) < 0) {
      if (global_timer_ns() > deadline) {
        if (g.timed_out != nullptr) atomicExch(g.timed_out, 1);
        break;
      }
      __nanosleep(sleep_ns);
      if (sleep_ns < 512) sleep_ns *= 2;
    }
  }
  // The copy engine's writes are generic-proxy writes made visible by the acquire; the TMA
  // loads that follow read through the async proxy, which needs this fence to see them.
  asm volatile("fence.proxy.async.global;" ::: "memory");
}

template <class T>
struct MmaTag;
template <>
struct MmaTag<__nv_bfloat16> {
  using type = Bf16Tag;
};
template <>
struct MmaTag<__half> {
  using type = Fp16Tag;
};

// Forces the compiler to treat the accumulators as rewritten here, so no read of them is
// scheduled before the wgmma that produced them has been waited for.
__device__ __forceinline__ void fence_accumulators(float (&acc)[128]) {
#pragma unroll
  for (int i = 0; i < 128; ++i) asm volatile("" : "+f"(acc[i])::"memory");
}

// The after-tile step (the tile-wise completion signal: fence + atomic) runs on a signaller
// warp of the producer warpgroup, not on a consumer: the consumers only bar.arrive after
// their stores, so the fence's latency never stalls the tensor cores (it cost ~8 % of the
// GEMM when a consumer thread did it). Eight named barriers (8..15) are used in turn by
// the CTA's tile count, so the consumers may run up to seven tiles ahead of the signaller
// (a fence takes ~1-2 us; even a one-k-block tile takes longer than that per 7 tiles).
constexpr uint32_t kAfterTileBarrier = 8;  // 8..15; 0 is __syncthreads
constexpr uint32_t kAfterTileRing = 8;
constexpr uint32_t kAfterTileThreads = GemmConfig::kConsumerWarpgroups * 128 + 32;

// Stores a finished tile (the CTA's `local_tile`-th) and, if the epilogue asks for it,
// hands it to the signaller warp once this thread's stores are issued.
template <class T, class Epilogue>
__device__ __forceinline__ void finish_tile(const typename Epilogue::Params& params,
                                            const TileView& view, const uint32_t (&packed)[64],
                                            int consumer, uint32_t local_tile) {
#pragma unroll 1
  for (int step = 0; step < Epilogue::kStoreSteps; ++step)
    if (Epilogue::template store_step<T>(params, view, packed, consumer, step)) break;
  if (Epilogue::needs_after_tile(params))
    named_barrier_arrive(kAfterTileBarrier + local_tile % kAfterTileRing, kAfterTileThreads);
}

// Epilogues with kStoreSteps > 1 (OwnerEpilogue) spread a deferred tile's store over the
// next tile's first kStoreSteps k-blocks (one store_step each, between wgmma batches), so
// each step's memory latency hides behind tensor-core work; the after-tile barrier is
// arrived at after the last step. Steps left when a tile ends early (fewer k-blocks) are
// flushed before its accumulators are packed over `packed`.
// A tile that needs fewer steps (the epilogue's store_step returns true once it is done:
// a tile that is not reduced is stored whole in step 0) finishes early.
template <class T, class Epilogue>
__device__ __forceinline__ void store_step(const typename Epilogue::Params& params,
                                           const TileView& view, const uint32_t (&packed)[64],
                                           int consumer, uint32_t& step, uint32_t& local_tile,
                                           bool& pending) {
  const bool done =
      Epilogue::template store_step<T>(params, view, packed, consumer, static_cast<int>(step));
  if (++step == static_cast<uint32_t>(Epilogue::kStoreSteps) || done) {
    if (Epilogue::needs_after_tile(params))
      named_barrier_arrive(kAfterTileBarrier + local_tile % kAfterTileRing, kAfterTileThreads);
    ++local_tile;
    step = 0;
    pending = false;
  }
}

// The split tail's named barriers, one per consumer warpgroup (1 and 2 are the owner
// epilogue's arrival barriers, 8..15 the after-tile ring).
constexpr uint32_t kSplitBarrier = 3;

__device__ __forceinline__ void split_barrier(int consumer) {
  asm volatile("bar.sync %0, 128;" ::"r"(kSplitBarrier + static_cast<uint32_t>(consumer))
               : "memory");
}

// A non-final part of a split tile: this warpgroup's accumulators to the workspace, then,
// once all 128 threads' stores are issued, one release add on the tile's counter (release
// is cumulative over the barrier, as for the after-tile signal).
template <class Params>
__device__ __forceinline__ void store_split_part(const Params& p, const WorkUnit& u, int consumer,
                                                 const float (&acc)[128]) {
  const int tid = threadIdx.x % 128;
  float4* dst = p.split_partials +
                (static_cast<int64_t>(u.tail * (p.split - 1) + u.part) * 2 + consumer) * 32 * 128 +
                tid;
#pragma unroll
  for (int i = 0; i < 32; ++i)
    __stcg(dst + i * 128, make_float4(acc[4 * i], acc[4 * i + 1], acc[4 * i + 2], acc[4 * i + 3]));
  split_barrier(consumer);
  if (tid == 0) red_release_gpu_add(p.split_counters + 2 * u.tail + consumer, 1u);
}

// The finisher of a split tile: waits until the tile's other parts are stored (thread 0
// acquires the counter, then resets it for the next call), then adds them to its own sum in
// part order, so the result does not depend on which part finished first.
template <class Params>
__device__ __forceinline__ void add_split_parts(const Params& p, const WorkUnit& u, int consumer,
                                                float (&acc)[128]) {
  const int tid = threadIdx.x % 128;
  if (tid == 0) {
    uint32_t* counter = p.split_counters + 2 * u.tail + consumer;
    const uint32_t want = static_cast<uint32_t>(p.split - 1);
    uint32_t seen;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(seen) : "l"(counter) : "memory");
    if (seen < want) {
      const uint64_t deadline = global_timer_ns() + p.split_timeout_ns;
      while (seen < want) {
        if (global_timer_ns() > deadline) {
          if (p.split_timed_out != nullptr) atomicExch(p.split_timed_out, 1);
          break;
        }
        __nanosleep(64);
        asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(seen) : "l"(counter) : "memory");
      }
    }
    asm volatile("st.relaxed.gpu.global.u32 [%0], %1;" ::"l"(counter), "r"(0u) : "memory");
  }
  split_barrier(consumer);
#pragma unroll 1
  for (int part = 0; part < p.split - 1; ++part) {
    const float4* src =
        p.split_partials +
        (static_cast<int64_t>(u.tail * (p.split - 1) + part) * 2 + consumer) * 32 * 128 + tid;
    // kSplitLoads loads at a time (ptxas schedules them; no fence between the batches: an
    // asm memory clobber here pushed the accumulators to local memory).
    constexpr int kSplitLoads = 4;
#pragma unroll
    for (int c = 0; c < 32 / kSplitLoads; ++c) {
      float4 v[kSplitLoads];
#pragma unroll
      for (int i = 0; i < kSplitLoads; ++i) v[i] = __ldcg(src + (kSplitLoads * c + i) * 128);
#pragma unroll
      for (int i = 0; i < kSplitLoads; ++i) {
        const int a = 4 * (kSplitLoads * c + i);
        acc[a] += v[i].x;
        acc[a + 1] += v[i].y;
        acc[a + 2] += v[i].z;
        acc[a + 3] += v[i].w;
      }
    }
  }
}

__device__ __forceinline__ TileView make_view(const TileCoord& tc, int item, int32_t m, int32_t n,
                                              int32_t tiles_n) {
  TileView view;
  view.tile_m = tc.tile_m;
  view.tile_n = tc.tile_n;
  view.tile = tc.tile_m * tiles_n + tc.tile_n;
  view.item = item;
  view.m = m;
  view.n = n;
  const int32_t rows_left = m - tc.tile_m * GemmConfig::kTileM;
  const int32_t cols_left = n - tc.tile_n * GemmConfig::kTileN;
  view.valid_rows = rows_left < GemmConfig::kTileM ? rows_left : GemmConfig::kTileM;
  view.valid_cols = cols_left < GemmConfig::kTileN ? cols_left : GemmConfig::kTileN;
  return view;
}

// Hands a stage back: to this CTA's producer, and with clusters to the peer's too.
template <int kClusterM>
__device__ __forceinline__ void release_stage(uint64_t* empty_bar) {
  if constexpr (kClusterM == 1) {
    mbarrier_arrive(empty_bar);
  } else {
#pragma unroll
    for (uint32_t cta = 0; cta < kClusterM; ++cta) mbarrier_arrive_cluster(empty_bar, cta);
  }
}

// kSplit: the split last wave (KernelParams::split); a separate instantiation, so the unsplit
// kernel's code (and its register allocation, tight beside 128 accumulators and a pending
// tile) is exactly what it was without the option.
template <class T, class Epilogue, bool kDeferStores, int kClusterM, bool kSplit = false>
__global__ void __launch_bounds__(GemmConfig::kThreads, 1)
    own_gemm_kernel(const __grid_constant__ KernelParams<Epilogue> p) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using Cfg = GemmConfig;
  extern __shared__ unsigned char smem_raw[];
  // 128-byte swizzled tiles must start on 1 KiB boundaries.
  unsigned char* smem = reinterpret_cast<unsigned char*>(
      (reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~static_cast<uintptr_t>(1023));
  uint64_t* full = reinterpret_cast<uint64_t*>(smem + Cfg::kStages * Cfg::kStageBytes);
  uint64_t* empty = full + Cfg::kStages;

  // Read through a shuffle from lane 0, so the compiler knows it is the same in every lane
  // of a warp: the consumers' stage addresses and wgmma descriptors then live in uniform
  // registers instead of being computed per thread and moved over (R2UR) for every wgmma.
  const int warpgroup = __shfl_sync(0xffffffffu, static_cast<int>(threadIdx.x / 128), 0);
  const int num_tiles = p.tiles_m * p.tiles_n;
  // Without kSplit these are constants: one item per tile, all of K.
  const int32_t split = kSplit ? p.split : 1;
  const int32_t split_first = kSplit ? p.split_first : num_tiles;
  const int num_items = split_work_items(num_tiles, split_first, split);

  if (threadIdx.x == 0) {
    prefetch_tensor_map(&p.map_a);
    prefetch_tensor_map(&p.map_b);
    if (p.gather.flags != nullptr) prefetch_tensor_map(&p.map_a_own);
    for (int s = 0; s < Cfg::kStages; ++s) {
      mbarrier_init(&full[s], 1);
      // One arrival per consumer warp (8, 16 with a pair): a stage is free once every warp
      // (of both CTAs) waited for the wgmma that read it.
      mbarrier_init(&empty[s], Cfg::kConsumerWarpgroups * 4 * kClusterM);
    }
    fence_barrier_init();
  }
  if constexpr (kClusterM > 1) {
    cluster_sync();  // the peer's barriers exist before any multicast or remote arrival
  } else {
    __syncthreads();
  }
  const uint32_t cta_rank = kClusterM > 1 ? cluster_ctarank() : 0;

  if (warpgroup == 0) {
    setmaxnreg_dec<Cfg::kProducerRegisters>();
    if (threadIdx.x / 32 == 1 && Epilogue::needs_after_tile(p.epilogue)) {
      // Signaller warp: waits for both consumer warpgroups' stores of each tile, in the
      // CTA's tile order, then one thread runs the epilogue's after-tile step.
      uint32_t local_tile = 0;
      for (int item = blockIdx.x; item < num_items; item += gridDim.x) {
        const WorkUnit u = work_unit(item, p.k_blocks, split_first, split);
        if (!u.final) continue;  // a tile's earlier parts run no epilogue
        const TileCoord tc =
            tile_of_item_clustered(u.tile_item, p.tiles_m, p.tiles_n, p.group_m, p.row_blocks,
                                   p.row_shift, kClusterM, p.row_period, p.skew_world);
        named_barrier_sync(kAfterTileBarrier + local_tile % kAfterTileRing, kAfterTileThreads);
        if (threadIdx.x == 32)
          Epilogue::after_tile(p.epilogue, make_view(tc, u.tile_item, p.m, p.n, p.tiles_n));
        ++local_tile;
      }
    }
    if (threadIdx.x == 0) {
      uint32_t iteration = 0;
      int32_t passed_flag = -1;  // the last gathered chunk seen complete (it stays so)
      for (int item = blockIdx.x; item < num_items; item += gridDim.x) {
        const WorkUnit u = work_unit(item, p.k_blocks, split_first, split);
        const TileCoord tc =
            tile_of_item_clustered(u.tile_item, p.tiles_m, p.tiles_n, p.group_m, p.row_blocks,
                                   p.row_shift, kClusterM, p.row_period, p.skew_world);
        const void* map_a = &p.map_a;
        int32_t a_row = tc.tile_m * Cfg::kTileM;
        if (p.gather.flags != nullptr) {
          const int32_t block = tc.tile_m / p.gather.block_tile_rows;
          const int32_t in_block = tc.tile_m - block * p.gather.block_tile_rows;
          if (block == p.gather.own_block) {
            map_a = &p.map_a_own;
            a_row = in_block * Cfg::kTileM;
          } else {
            const int32_t flag = block * p.gather.chunks + in_block / p.gather.chunk_tile_rows;
            if (flag != passed_flag) {
              wait_gathered_chunk(p.gather, flag);
              passed_flag = flag;
            }
          }
        }
        for (int kb = u.kb_begin; kb < u.kb_end; ++kb, ++iteration) {
          const uint32_t stage = iteration % Cfg::kStages;
          const uint32_t round = iteration / Cfg::kStages;
          // A fresh barrier counts as having completed the phase before phase 0.
          mbarrier_wait(&empty[stage], (round & 1) ^ 1);
          mbarrier_arrive_expect_tx(&full[stage], Cfg::kStageBytes);
          unsigned char* stage_a = smem + stage * Cfg::kStageBytes;
          unsigned char* stage_b = stage_a + Cfg::kStageBytesA;
          tma_load_2d(stage_a, map_a, &full[stage], kb * Cfg::kTileK, a_row);
          if constexpr (kClusterM == 1) {
            tma_load_2d(stage_b, &p.map_b, &full[stage], kb * Cfg::kTileK, tc.tile_n * Cfg::kTileN);
          } else {
            // This CTA's slice of B, 128-byte rows: 1 KiB-aligned, so the 128-byte swizzle
            // of the slices equals that of one 256-row box.
            constexpr int kSliceRows = Cfg::kTileN / kClusterM;
            tma_load_2d_multicast(
                stage_b + cta_rank * kSliceRows * Cfg::kTileK * 2, &p.map_b, &full[stage],
                kb * Cfg::kTileK,
                tc.tile_n * Cfg::kTileN + static_cast<int32_t>(cta_rank) * kSliceRows,
                static_cast<uint16_t>((1u << kClusterM) - 1));
          }
        }
      }
    }
  } else {
    setmaxnreg_inc<Cfg::kConsumerRegisters>();
    const int consumer = warpgroup - 1;
    const bool warp_leader = (threadIdx.x % 32) == 0;
    float acc[128];
#pragma unroll
    for (int i = 0; i < 128; ++i) acc[i] = 0.0f;
    uint32_t packed[64];
    bool pending = false;  // packed holds a finished tile not yet stored (kDeferStores)
    TileView pending_view;
    uint32_t local_tile = 0;  // the CTA's tiles finished so far (after-tile barrier parity)
    uint32_t step = 0;        // next store step of the pending tile (kStoreSteps > 1)
    uint32_t iteration = 0;
    for (int item = blockIdx.x; item < num_items; item += gridDim.x) {
      // Only the item and the k-block count stay live through the mainloop (the accumulators
      // and a pending tile leave few registers); the unit is worked out again after it.
      int32_t k_count = p.k_blocks;
      {
        const WorkUnit u = work_unit(item, p.k_blocks, split_first, split);
        k_count = u.kb_end - u.kb_begin;
        if constexpr (Epilogue::kStoreSteps > 1) {
          if (u.final) {
            const TileCoord tc =
                tile_of_item_clustered(u.tile_item, p.tiles_m, p.tiles_n, p.group_m, p.row_blocks,
                                       p.row_shift, kClusterM, p.row_period, p.skew_world);
            Epilogue::prefetch(p.epilogue, tc.tile_m * p.tiles_n + tc.tile_n);
          }
        }
      }
      for (int kb = 0; kb < k_count; ++kb, ++iteration) {
        const uint32_t stage = iteration % Cfg::kStages;
        mbarrier_wait(&full[stage], (iteration / Cfg::kStages) & 1);
        unsigned char* stage_a = smem + stage * Cfg::kStageBytes + consumer * 64 * 128;
        unsigned char* stage_b = smem + stage * Cfg::kStageBytes + Cfg::kStageBytesA;
        const uint64_t desc_a = smem_descriptor_sw128(stage_a);
        const uint64_t desc_b = smem_descriptor_sw128(stage_b);
        wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < Cfg::kTileK / 16; ++kk) {
          // Each k16 step is 32 bytes further along the swizzled 128-byte rows.
          wgmma_m64n256k16(typename MmaTag<T>::type{}, acc, desc_a + 2 * kk, desc_b + 2 * kk,
                           (kb > 0 || kk > 0) ? 1u : 0u);
        }
        wgmma_commit();
        if (kDeferStores && pending) {
          // The previous tile's stores go out while this batch runs on the tensor cores.
          if constexpr (Epilogue::kStoreSteps == 1) {
            finish_tile<T, Epilogue>(p.epilogue, pending_view, packed, consumer, local_tile++);
            pending = false;
          } else {
            store_step<T, Epilogue>(p.epilogue, pending_view, packed, consumer, step, local_tile,
                                    pending);
          }
        }
        if (kb > 0) {
          // The batch issued for the previous stage is done: hand that stage back.
          wgmma_wait<1>();
          if (warp_leader) release_stage<kClusterM>(&empty[(iteration - 1) % Cfg::kStages]);
        }
      }
      if constexpr (kDeferStores && Epilogue::kStoreSteps > 1) {
        while (pending)
          store_step<T, Epilogue>(p.epilogue, pending_view, packed, consumer, step, local_tile,
                                  pending);
      }
      wgmma_wait<0>();
      fence_accumulators(acc);
      if (warp_leader) release_stage<kClusterM>(&empty[(iteration - 1) % Cfg::kStages]);

      int32_t item_again = item;
      // Split: recomputed here rather than kept live through the mainloop.
      if constexpr (kSplit) asm volatile("" : "+r"(item_again));
      const WorkUnit u = work_unit(item_again, p.k_blocks, split_first, split);
      const TileCoord tc =
          tile_of_item_clustered(u.tile_item, p.tiles_m, p.tiles_n, p.group_m, p.row_blocks,
                                 p.row_shift, kClusterM, p.row_period, p.skew_world);
      if (u.tail >= 0) {
        if (!u.final) {
          // An earlier part of a split tile: its sum goes to the finisher; no epilogue, and
          // `packed` (a deferred tile may still be pending there) is left alone.
          store_split_part(p, u, consumer, acc);
          continue;
        }
        add_split_parts(p, u, consumer, acc);
      }
      pack_accumulators<T>(acc, packed);
      TileView view = make_view(tc, u.tile_item, p.m, p.n, p.tiles_n);
      if constexpr (Epilogue::kStoreSteps > 1) Epilogue::annotate(p.epilogue, view);
      if (kDeferStores) {
        pending = true;
        pending_view = view;
      } else {
        finish_tile<T, Epilogue>(p.epilogue, view, packed, consumer, local_tile++);
      }
    }
    if constexpr (Epilogue::kStoreSteps == 1) {
      if (kDeferStores && pending)
        finish_tile<T, Epilogue>(p.epilogue, pending_view, packed, consumer, local_tile++);
    } else {
      // The CTA's last tile: nothing left to overlap its store steps with, so an epilogue
      // that can store the rest at once (OwnerEpilogue's reduction) does.
      if (kDeferStores && pending &&
          Epilogue::template store_rest<T>(p.epilogue, pending_view, packed, consumer,
                                           static_cast<int>(step))) {
        if (Epilogue::needs_after_tile(p.epilogue))
          named_barrier_arrive(kAfterTileBarrier + local_tile % kAfterTileRing, kAfterTileThreads);
        ++local_tile;
        pending = false;
      }
      while (kDeferStores && pending)
        store_step<T, Epilogue>(p.epilogue, pending_view, packed, consumer, step, local_tile,
                                pending);
    }
  }
  if constexpr (kClusterM > 1) cluster_sync();  // no remote arrival or multicast into an exited CTA
#else
  (void)p;
  __trap();
#endif
}

// Copies a rows×k row-major matrix into rows×k_padded with zeros beyond k, so that TMA
// sees 16-byte aligned rows. 2-byte elements.
__global__ void pad_k_kernel(const uint16_t* src, uint16_t* dst, int64_t rows, int64_t k,
                             int64_t k_padded);

}  // namespace overlapsim::kernels::gemm::sm90
