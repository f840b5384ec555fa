#pragma once
// Compile-time launch constants of the own Hopper GEMM (sm_90a). Host- and device-visible,
// C++17, no CUDA types, so tests and the tile-order helpers can use them without nvcc.
#include <cstdint>

namespace overlapsim::kernels::gemm {

struct GemmConfig {
  // Block tile: 128×256 outputs per CTA, K consumed 64 elements (128 bytes of bf16) at a
  // time, which is exactly one 128-byte swizzle row for TMA and wgmma.
  static constexpr int kTileM = 128;
  static constexpr int kTileN = 256;
  static constexpr int kTileK = 64;
  // 4 stages × 48 KiB = 192 KiB of the 227 KiB a block may hold: deep enough to hide
  // HBM latency behind two consumer warpgroups, leaving room for the barriers.
  static constexpr int kStages = 4;
  // Warpgroup 0 produces (TMA), warpgroups 1 and 2 consume (wgmma m64n256k16), each
  // owning 64 rows of the tile.
  static constexpr int kConsumerWarpgroups = 2;
  static constexpr int kThreads = 128 * (1 + kConsumerWarpgroups);
  static constexpr int kElementBytes = 2;  // bf16 and fp16
  static constexpr int kStageBytesA = kTileM * kTileK * kElementBytes;
  static constexpr int kStageBytesB = kTileN * kTileK * kElementBytes;
  static constexpr int kStageBytes = kStageBytesA + kStageBytesB;
  // 1 KiB alignment slack (128-byte swizzle needs 1024-byte aligned tiles) + barriers.
  static constexpr int kSharedBytes = kStages * kStageBytes + 1024 + 256;
  // Register budget after setmaxnreg: 128×40 + 256×232 = 64,512 ≤ 65,536 per SM.
  static constexpr int kProducerRegisters = 40;
  static constexpr int kConsumerRegisters = 232;
  // Default grouped raster: 8 tile-rows of A share B tiles while they sit in L2.
  static constexpr int kDefaultGroupM = 8;
  // SchedulerOptions::cluster_m = 2: CTAs run in clusters of 2 along M; the pair computes
  // tile rows 2p and 2p+1 of one tile column, and each CTA loads half of the shared B tile
  // (128 of its 256 rows) with TMA multicast into both CTAs' shared memory, so each CTA
  // pulls 32 KiB instead of 48 KiB from L2 per k-block. Measured on one H200 (docs/kernels/log.md,
  // runs 2-4): bit-identical, L2 throughput 61 -> 56 %, but no faster (geo-mean own/cuBLAS
  // 0.956 vs 0.961 without clusters, 10 shapes, same run), so the default stays 1: no
  // co-scheduling constraint beside NCCL's CTAs.
  static constexpr int kMaxClusterM = 2;
  static constexpr int kDefaultClusterM = 1;
  // Epilogue store shape (SchedulerOptions::store_steps, vector_stores). Measured on one
  // H200 (docs/kernels/log.md, runs 3-4): 16-byte vector stores +5.6 % geo-mean over 10 shapes
  // (+11 % at K = 2048); spreading the store over 2/4/8 k-blocks lost 1-7 %.
  static constexpr int kDefaultStoreSteps = 1;
  static constexpr bool kDefaultVectorStores = true;
};

}  // namespace overlapsim::kernels::gemm
