#pragma once
// The fused all-to-all + embedding-bag backward kernel's launch interface
// (embedding_alltoall_backward.cu): plain arguments, no classes, so the host design
// (embedding_alltoall_backward.hpp) stays in C++20 and the kernel in C++17. Host only, but
// claim_part, which the kernel uses too.
//
// The kernel moves 16-byte pieces and adds nothing (the gradient it produces is the
// per-lookup sparse gradient: every value is a copy of its bag's pooled-row gradient), so
// it is one instantiation for every element type whose row is a multiple of 16 bytes.
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/common/status.hpp"
#include "kernels/fused/embedding_alltoall_kernel.hpp"
#include "kernels/harness/host_device.hpp"

namespace overlapsim::kernels::fused::embedding_a2a_backward {

constexpr int kMaxWorld = embedding_a2a::kMaxWorld;
constexpr int kMaxSlots = embedding_a2a::kMaxSlots;  // tables one rank owns
constexpr int kMaxTables = 64;                       // tables of the model
constexpr int kThreads = 256;                        // 8 warps
constexpr int kPushWarps = 2;  // default push warps a CTA (KernelArgs::push_warps)
// The fused expansion's tile counters: kClaimCounters of them, each on its own 128-byte
// line, a claim taking kClaimTiles tiles: one counter at one tile a claim would ask one
// address for an atomic every 4 KB the grid writes (every 1.4 ns at H100's HBM bandwidth).
constexpr int kClaimCounters = 4;
constexpr int kClaimStride = 32;  // u32 words between counters
constexpr int kClaimTiles = 2;    // the default of KernelArgs::claim_tiles

struct KernelArgs {
  // This rank's gradients of the pooled rows, [tables_total][B][row_pieces] 16-byte pieces
  // (the forward's receive layout).
  const void* grad = nullptr;
  int tables_total = 0;
  std::int32_t table_owner[kMaxTables] = {};
  std::int32_t table_slot[kMaxTables] = {};  // the table's slot at its owner
  std::int32_t owner_slots[kMaxWorld] = {};  // slots each rank owns (its receive layout)
  // The tables this rank owns, slot s = the s-th (global table table_id[s]).
  int slots = 0;
  std::int32_t table_id[kMaxSlots] = {};
  std::int32_t pooling[kMaxSlots] = {};
  // Where slot s's values start in `values`, in pieces: values[slot][G][pooling][row].
  std::int64_t values_offset[kMaxSlots] = {};
  // Expansion tiles of one source's B bags of slot s (the same for every source), and their
  // sum over slots (plan_tiles fills both).
  std::int32_t slot_tiles[kMaxSlots] = {};
  std::int32_t source_tiles = 0;
  std::int64_t local_batch = 0;  // B
  std::int64_t row_pieces = 0;   // 16-byte pieces a row (dim x element bytes / 16)
  int world = 1;
  int rank = 0;
  void* values = nullptr;
  // push == false (sequential): the other ranks' rows are in `gathered`, [slots][G][row]
  // (NCCL's receive buffer; this rank's own block unused), statically split over the grid.
  // push == true (fused): every CTA's first push_warps warps store this rank's rows of the
  // tables other ranks own into recv[owner][parity][slot][this rank's B bags][row] over
  // NVLink, owner by owner in push_order, and after each owner's count the CTA on it
  // (counters[owner][this rank] += 1); all warps then claim expansion tiles from `claims`
  // (local rows first, then each source's once its counter reached `expected`).
  bool push = false;
  const void* gathered = nullptr;
  void* recv[kMaxWorld] = {};
  std::uint32_t* counters[kMaxWorld] = {};
  std::int32_t push_order[kMaxWorld] = {};  // the other ranks: rank + 1, rank + 2, ...
  // Spread (true): CTA b starts its owner loop at push_order[b % (world - 1)], so a third
  // of the grid (at 4 ranks) pushes to each owner at once and a source's pushes use all its
  // links together; false: every CTA in push_order (one owner's links at a time). The host
  // design picks spread with one push warp for large blocks, the shift with two below.
  bool push_spread = false;
  std::int32_t push_warps = kPushWarps;  // 1 .. kThreads / 32 - 1
  // This rank's tile counters (kClaimCounters, kClaimStride apart), never reset, and their
  // values when this call starts. Counter p hands out, source by source (this rank, then
  // rank - 1, rank - 2, ...: the order the pushes arrive in), part p of each source's
  // tiles (claim_part), kClaimTiles a claim.
  std::uint32_t* claims = nullptr;
  std::uint32_t claims_base[kClaimCounters] = {};
  std::int32_t claim_tiles = kClaimTiles;  // tiles a claim takes
  std::uint32_t epoch = 0;                 // this call's number (> 0); its parity picks recv's half
  // What every source's counter reaches once this call's CTAs have all counted: the grids
  // of calls 1 .. epoch summed (mod 2^32; every rank launches the same grid).
  std::uint32_t expected = 0;
  std::uint64_t timeout_ns = 0;
  int* timed_out = nullptr;  // set to 1 when a wait for a source gives up
};

// 16-byte pieces per tile (a warp's unit of work): 32 lanes x 8.
constexpr int kTilePieces = 256;

// Fills slot_tiles and source_tiles from slots, pooling, local_batch, row_pieces and world;
// fails where a slot's pieces or the call's tiles would not fit the kernel's 32-bit counts.
Status plan_tiles(KernelArgs* args);
// The expansion tiles of one call: every source's of every slot.
inline std::int64_t call_tiles(const KernelArgs& args) {
  return static_cast<std::int64_t>(args.source_tiles) * args.world;
}
// Part p of a source's tiles: [*start, *start + *count).
OVERLAPSIM_HD void claim_part(std::int64_t source_tiles, int p, int* start, int* count) {
  *start = static_cast<int>(source_tiles * p / kClaimCounters);
  *count = static_cast<int>(source_tiles * (p + 1) / kClaimCounters) - *start;
}
// Successful claims of counter p in one call (each warp adds one failed claim on top).
inline std::int64_t part_claims(const KernelArgs& args, int p) {
  int start = 0, count = 0;
  claim_part(args.source_tiles, p, &start, &count);
  return (static_cast<std::int64_t>(count) * args.world + args.claim_tiles - 1) / args.claim_tiles;
}

// CTAs a launch uses: at most what fits on the device at once (the fused kernel's warps
// wait on peers, so every CTA of every rank must be resident), and no more than the work.
Status launch_grid(const KernelArgs& args, int* grid);
Status launch(const KernelArgs& args, int grid, cudaStream_t stream);
// Loads the kernel onto the current device now (lazy module loading: a first load while a
// peer's warps wait on this rank's counters must not wait behind it).
Status preload();

}  // namespace overlapsim::kernels::fused::embedding_a2a_backward
