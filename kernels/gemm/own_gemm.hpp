#pragma once
// Host API of our own Hopper GEMM (sm_90a: TMA + wgmma, warp-specialised, persistent).
//
//   C[M×N] = A[M×K] · Bᵀ   A row-major M×K, B row-major N×K (a Linear weight W[N][K]),
//                          C row-major M×N; bf16 or fp16 in and out, fp32 accumulate.
//
// Use: can_implement → initialize → run (any number of times). Every call returns a
// kernels::Status; nothing throws. C++17; the only CUDA type here is cudaStream_t.
//
// Any M, N, K ≥ 1: edge tiles are zero-filled on load (TMA) and bounds-checked on store.
// TMA needs 16-byte aligned row strides and base addresses, so when K is not a multiple
// of 8 (or A/B are not 16-byte aligned) initialize() allocates a workspace and run()
// first copies A and B into zero-padded K' = round_up(K, 8) buffers (one extra pass over
// A and B, reported by padded()).
//
// Epilogue hook (EpilogueArgs): each tile is stored either at its natural place in C or,
// when tile_offset_elems is set, densely at C + tile_offset_elems[tile] as a
// rows×cols block (rows, cols = the tile's valid extent, row stride = cols); then, when
// group_counters is set, after all of the CTA's stores of the tile and a device-scope
// release fence, one thread adds 1 to group_counters[tile_group[tile]].
// tile = tile_m·tiles_n + tile_n everywhere.
//
// Owner epilogue (the tile-wise copy-engine transport, epilogue.cuh OwnerEpilogue): when
// tile_arrival is set, tiles of this rank's own part are reduced with the peers' partial
// tiles (after waiting for their arrival flags) or just placed, see EpilogueArgs; the
// rank-rotated order (SchedulerOptions::rotate_world) puts the own part last.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "kernels/common/status.hpp"
#include "kernels/gemm/gemm_config.hpp"
#include "kernels/gemm/tile_scheduler.hpp"

namespace overlapsim::kernels::gemm {

enum class DType { kBf16, kFp16 };

struct GemmArgs {
  int64_t m = 0;
  int64_t n = 0;
  int64_t k = 0;
  DType dtype = DType::kBf16;
  const void* a = nullptr;  // device, M×K
  const void* b = nullptr;  // device, N×K
  void* c = nullptr;        // device, M×N (or the remapped region, same element count)
};

// All pointers are device pointers; nullptr disables that part of the hook.
struct EpilogueArgs {
  const int64_t* tile_offset_elems = nullptr;  // [tiles] remapped dense destination
  uint32_t* group_counters = nullptr;          // [groups] incremented once per finished tile
  const int32_t* tile_group = nullptr;         // [tiles] counter index of each tile
  // Debug: record[2·tile] = work item, record[2·tile+1] = CTA that computed it.
  int32_t* order_record = nullptr;

  // Owner epilogue (all device pointers; tile_arrival == nullptr keeps the plain one).
  // A tile with tile_arrival[tile] = j >= 0 belongs to this rank's own part and to its
  // part-relative group j; it goes to own_out + own_out_begin_elems +
  // (tile_offset_elems[tile] − own_begin_elems). With reduce, it is first summed with
  // recv[s·part_elems + same relative offset] for every rank s ≠ rank, once
  // arrived[s·own_groups + j] has reached the call's epoch (OwnGemm::run's argument).
  // A tile_group of −1 signals nothing.
  const int32_t* tile_arrival = nullptr;
  const uint32_t* arrived = nullptr;
  int32_t own_groups = 0;
  const void* recv = nullptr;
  int64_t part_elems = 0;
  int64_t own_begin_elems = 0;
  void* own_out = nullptr;
  int64_t own_out_begin_elems = 0;
  int32_t world = 1;
  int32_t rank = 0;
  bool reduce = false;
  double wait_timeout_s = 60.0;  // a flag wait gives up after this and sets *timed_out
  int* timed_out = nullptr;
  // Scope of the owner epilogue's per-tile signal. Its readers (cuStreamWaitValue32, then a
  // copy engine's cudaMemcpyAsync) read this GPU's memory through its L2, where a GPU-scope
  // release (red.release.gpu, false) already makes the tile's stores visible, and that
  // measured bit-exact; but it was not cheaper than the system-scope fence + atomic (true,
  // 0 to 1.9 % slower over 10 shapes in one loop; docs/kernels/log.md), so the stronger one
  // stays the default.
  bool system_scope_signal = true;
  // All-reduce phase 2 by the epilogue (nullptr: none): every reduced own tile is also
  // stored at peer_out + (tile_offset_elems[tile] − own_begin_elems), i.e. peer_out is the
  // peer's P where that peer keeps this rank's part. Needs reduce, world = 2 and full tiles
  // (m % 128 = 0, n % 256 = 0: only the one-peer full-tile path mirrors its stores), and
  // 16-byte alignment; the tile's signal then always uses the system scope. Into another
  // GPU's memory these stores cost the GEMM 7-16 points on 2 x H100 at 4096^3,
  // 2048x8192x8192 and 8192x8192x2048, 1-2 at 8192^3 and 16384x8192x4096 (into local memory
  // 1-3; owner-epilogue-bench --peer-gpu, docs/kernels/log.md).
  void* peer_out = nullptr;
  // The one-peer reduction prefetches the peer's partial tile into L2 once its arrival is
  // seen, so the four quarter steps that load it (each between two wgmma batches) wait for
  // L2 rather than HBM. On one H200 (owner-epilogue-bench, docs/kernels/log.md) it took the
  // reducing GEMM from 2.6-11.9 % over the plain one to 1.3-5.9 %.
  bool prefetch_peer_l2 = true;
  // The one-peer reduction's 16-byte path sums each pair with the native paired add
  // (add.bf16x2 / add.f16x2, round to nearest: one instruction) instead of unpacking to
  // fp32, adding and rounding (seven): the same bits (the argument is at add_pairs_rn in
  // epilogue.cuh; owner-epilogue-bench found 0 differing elements in 90 calls). On one H100
  // it took the reducing GEMM 0.4 % (median, 15 runs) and the mirroring one 0.2 % closer to
  // the plain GEMM (docs/kernels/log.md, benchmarks/results/h100x1/owner_epilogue_packed_sum/).
  bool packed_sum = true;
};

// AllGather+GEMM (kernels/tilewise/allgather_gemm.hpp): GemmArgs::a is the gathered A
// [M x K] whose row blocks of M / world rows arrive from the peers while the GEMM runs; the
// producer waits for each chunk's flag before loading its rows (own_gemm_sm90.cuh
// GatherWait). The own block's rows are read from own_a (M / world x K) in place instead.
// Needs K % 8 == 0, 16-byte aligned a, own_a and b (no padding pass: it would read the
// whole gathered A before the GEMM) and M a multiple of 128 x world x chunks (no tile
// spans two chunks). flags == nullptr: the plain GEMM.
struct GatherArgs {
  const std::uint32_t* flags = nullptr;  // [world][chunks] arrival epochs, device memory
  const void* own_a = nullptr;           // this rank's rows, device
  int world = 1;
  int rank = 0;
  int chunks = 1;
  double wait_timeout_s = 60.0;  // a flag wait gives up after this and sets *timed_out
  int* timed_out = nullptr;
};

struct SchedulerOptions {
  int num_ctas = 0;  // persistent CTAs; 0 = one per SM (capped at the tile count)
  int group_m = GemmConfig::kDefaultGroupM;
  // Issue a finished tile's stores (and signal) after the next tile's first wgmma batch,
  // overlapping them with tensor-core work; false stores each tile before the next
  // starts (v1). Both give bit-identical results.
  bool defer_stores = true;
  // Rows split into row_blocks equal blocks visited alternately (tile_of_item_blocked);
  // the tile-wise ReduceScatter/All-to-All use one block per rank. Must divide the tile rows.
  int row_blocks = 1;
  // Rank-rotated order (tile_of_item_scheduled): with rotate_world = W > 1 the tile rows
  // form W equal parts, rank rotate_rank's part last and part rotate_rank + 1 first.
  // Needs row_blocks = 1, tiles_m % W == 0 and group_m dividing tiles_m / W.
  int rotate_world = 1;
  int rotate_rank = 0;
  // Slab order (tile_of_item_scheduled's row_period): the tile rows form rotate_slabs equal
  // slabs visited one after the other, and the rotation above applies inside each slab
  // (rank rotate_rank's sub-slab of every slab last). Needs rotate_world > 1 above 1, tile
  // rows divisible by rotate_world x rotate_slabs and group_m dividing the rows a sub-slab.
  int rotate_slabs = 1;
  // With rotate_slabs > 1: the skewed slab order (tile_of_item_scheduled's skew_world): the
  // sub-slabs are visited by steps slab + position, so the ring's hops are a step apart
  // rather than one sub-slab.
  bool skew_slabs = false;
  // v3: CTAs in clusters of cluster_m along M with TMA multicast of the shared B tile
  // (tile_of_item_clustered). A request: effective_cluster_m() falls back to 1 (v2) when
  // the shape or the other options do not allow pairs.
  int cluster_m = GemmConfig::kDefaultClusterM;
  // The plain epilogue's deferred store of a full tile, spread over the next tile's first
  // store_steps k-blocks (1, 2, 4 or 8), and with vector_stores as 16-byte stores after a
  // transpose inside each quad of lanes (epilogue.cuh store_packed_part). Bit-identical
  // results for every choice; the owner epilogue keeps its own steps.
  int store_steps = GemmConfig::kDefaultStoreSteps;
  bool vector_stores = GemmConfig::kDefaultVectorStores;
  // Split last wave (tile_scheduler.hpp split_tail_first / work_unit): 2..8 cuts each tile of
  // the last wave (the partial one, or the last full one) into that many ranges of K, each a
  // work item of its own, reduced in fp32 through a workspace by the tile's last part, which
  // alone runs the epilogue (store, signal, owner reduction), once per tile. A partial last
  // wave then takes 1/split of a tile's time per sub-wave and its tiles complete in split
  // steps rather than all at the GEMM's end. Costs a workspace of (split − 1) × 128 KiB a
  // tail tile. The split tiles' K sums are in another order than the unsplit GEMM's: within
  // fp32 rounding, not bit-identical (1 = off, the default; every bit-identity test compares
  // like configurations). Not with cluster_m = 2 (effective_cluster_m falls back to 1).
  int split_k_tail = 1;
};

// The cluster size the GEMM really uses for these options (the host replicas below and
// OwnGemm agree through it): cluster_m = 2 needs an even number of tile rows, row blocks of
// whole pairs ((tiles_m / 2) % row_blocks == 0), an even group_m, parts of whole groups
// under rotation (as can_implement already demands) and num_ctas 0 or even.
int effective_cluster_m(int64_t m, int64_t n, const SchedulerOptions& sched);

// The cyclic tile-row shift that realises the rotation (0 without one).
int32_t rotation_row_shift(int64_t m, const SchedulerOptions& sched);
// The slab order's rotation period in tile rows (0 without slabs).
int32_t rotation_row_period(int64_t m, const SchedulerOptions& sched);

// Host replica of the device schedule. Element i is the tile computed as work item i, by
// CTA i % num_ctas, in wave i / num_ctas. Uses the default cluster_m (and its fallback).
std::vector<TileCoord> tile_order(int64_t m, int64_t n, int num_ctas,
                                  int group_m = GemmConfig::kDefaultGroupM, int row_blocks = 1);
// The same for any scheduler options (rotation included).
std::vector<TileCoord> tile_order(int64_t m, int64_t n, const SchedulerOptions& sched);

// Offsets (elements) that place tiles densely in scheduler item order, so that the tiles
// of consecutive waves form one contiguous region; indexed by tile. Sum of sizes = M·N.
std::vector<int64_t> compact_offsets_in_item_order(int64_t m, int64_t n, int num_ctas,
                                                   int group_m = GemmConfig::kDefaultGroupM,
                                                   int row_blocks = 1);

class OwnGemm {
 public:
  OwnGemm() = default;
  ~OwnGemm();
  OwnGemm(const OwnGemm&) = delete;
  OwnGemm& operator=(const OwnGemm&) = delete;

  // Checks the GPU (sm_90 needed) and the arguments; no allocation.
  static Status can_implement(const GemmArgs& args, const SchedulerOptions& sched = {});
  // Builds the tensor maps, loads the kernels (so cross-stream waits cannot hit lazy
  // module loading), allocates the padding workspace when needed.
  Status initialize(const GemmArgs& args, const EpilogueArgs& epilogue = {},
                    const SchedulerOptions& sched = {});
  // The same for AllGather+GEMM (GatherArgs): the plain store epilogue, flags waited for.
  Status initialize_gathered(const GemmArgs& args, const GatherArgs& gather,
                             const SchedulerOptions& sched = {});
  Status run(cudaStream_t stream);
  // `epoch`: the sequence number the owner epilogue's arrival flags (or GatherArgs' flags)
  // must reach this call.
  Status run(cudaStream_t stream, uint32_t epoch);

  int num_ctas() const { return num_ctas_; }
  // The split tail as initialize() set it: first split tile item (tiles_m·tiles_n without a
  // split) and the parts a tail tile (1 without).
  int32_t split_first() const { return split_first_; }
  int split_parts() const { return split_parts_; }
  // True when a split tile's finisher gave up waiting for its parts (a bug; the result is
  // then wrong). Synchronises with the device.
  Status check_split_wait() const;
  int cluster_m() const { return cluster_m_; }  // effective: 1 = v2, 2 = v3
  int32_t tiles_m() const { return tiles_m_; }
  int32_t tiles_n() const { return tiles_n_; }
  bool padded() const { return workspace_ != nullptr; }
  // For a kernel that runs this GEMM's mainloop with an epilogue of its own
  // (kernels/fused/gemm_alltoall.cu): the operands' two CUtensorMap (128 bytes each), K'
  // and the schedule, all as initialize() set them.
  const void* tensor_maps() const { return tensor_maps_; }
  int64_t k_padded() const { return k_padded_; }
  const SchedulerOptions& scheduler() const { return sched_; }

 private:
  void release();

  GemmArgs args_{};
  EpilogueArgs epilogue_{};
  GatherArgs gather_{};
  SchedulerOptions sched_{};
  int num_ctas_ = 0;
  int cluster_m_ = 1;
  int32_t tiles_m_ = 0;
  int32_t tiles_n_ = 0;
  int64_t k_padded_ = 0;
  void* workspace_ = nullptr;  // padded A then padded B, when K % 8 != 0 or misaligned
  // Split tail: partials, then the counters and the timed-out flag (zeroed by the first run).
  void* split_workspace_ = nullptr;
  size_t split_partial_bytes_ = 0;
  bool split_zeroed_ = false;
  int32_t split_first_ = 0;
  int split_parts_ = 1;
  // Three CUtensorMap (128 bytes each, 64-byte aligned), kept opaque to stay free of cuda.h:
  // A, B, and with GatherArgs the own rows of A.
  alignas(64) unsigned char tensor_maps_[3][128] = {};
  bool initialized_ = false;
};

}  // namespace overlapsim::kernels::gemm
