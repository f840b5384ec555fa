// The fused all-to-all + embedding-bag backward kernel (design:
// docs/kernels/embedding_alltoall.md, "Backward"). The gradient it writes is the per-lookup
// sparse gradient of sum pooling: for every lookup j of bag g of an owned table, the value
// is bag g's pooled-row gradient, values[slot][g][j][dim] (the index of that value is the
// forward's index idx[g][j]: the index array is the gradient's indices as it stands). Every
// value is a copy, so the result is the same bits whatever order the work runs in.
//
// Work is counted in 16-byte pieces and split into tiles of kTilePieces (a warp's unit).
//   push (fused): the first push_warps warps of every CTA store this rank's rows of the
//     tables other ranks own straight into the owner's receive buffer over NVLink (tiles
//     split statically over those warps of the grid), owner by owner, rank + 1 first, then
//     rank + 2, ... (a shift: at each step every rank receives from one source), or, with
//     push_spread, each CTA starting at owner b % (world - 1) of that order (a source's rows
//     go to all owners at once, over all its links); after each owner they pass a named
//     barrier, and one thread issues a system-scope release fence and adds 1 to this rank's
//     counter on that owner.
//   expand: tiles of (source rank, slot), numbered source by source from this rank's own
//     (read from `grad`, no exchange), then rank - 1, rank - 2, ...: the order in which the
//     shift delivers them. Sequential: the grid
//     takes them statically, the other ranks' rows from NCCL's receive buffer. Fused: every
//     warp (the push warps once they have signalled) claims tiles from kClaimCounters
//     counters (each a part of every source's tiles, in that order; a warp drains one, then
//     helps the next), and before its first tile of a source waits (acquire, nanosleep
//     back-off, deadline) until that source's counter shows all its CTAs: while the rows
//     are on NVLink the grid expands this rank's own rows.
// The fused grid is at most what fits at once (warps wait on peers whose pushes come from
// their whole grid), and no warp waits before its own pushes are out.
#include <cuda_runtime.h>

#include <algorithm>
#include <string>

#include "kernels/common/global_timer.cuh"
#include "kernels/fused/embedding_alltoall_backward_kernel.hpp"
#include "kernels/fused/system_scope.cuh"

namespace overlapsim::kernels::fused::embedding_a2a_backward {
namespace {

constexpr int kWarps = kThreads / 32;
constexpr int kPerLane = kTilePieces / 32;  // pieces a lane moves per tile
static_assert(kPushWarps >= 1 && kPushWarps < kWarps, "some warps push, some expand first");
// (launch checks KernelArgs::push_warps the same way)

// Tile `tile` of a block of `count` pieces: bag b's `bag_pieces` pieces at out are its row
// (row_pieces pieces at rows + b * row_pieces) repeated; all loads of the tile are issued
// before its stores. Pushes are the case bag_pieces == row_pieces (a plain copy).
__device__ __forceinline__ void copy_tile(const uint4* rows, uint4* out, int count, int bag_pieces,
                                          int row_pieces, int tile, int lane) {
  const int first = tile * kTilePieces + lane;
  uint4 v[kPerLane];
#pragma unroll
  for (int u = 0; u < kPerLane; ++u) {
    const int q = first + u * 32;
    if (q < count) {
      const int bag = q / bag_pieces;
      v[u] = rows[static_cast<std::int64_t>(bag) * row_pieces + q % row_pieces];
    }
  }
#pragma unroll
  for (int u = 0; u < kPerLane; ++u) {
    const int q = first + u * 32;
    if (q < count) out[q] = v[u];
  }
}

// Row 0 of source `src`'s bags of slot s: this rank's own from grad, the others' from the
// fused receive buffer (this call's parity) or NCCL's.
__device__ __forceinline__ const uint4* source_rows(const KernelArgs& a, int s, int src) {
  const std::int64_t R = a.row_pieces, B = a.local_batch, G = B * a.world;
  if (src == a.rank)
    return static_cast<const uint4*>(a.grad) + static_cast<std::int64_t>(a.table_id[s]) * B * R;
  if (a.push) {
    const std::int64_t parity = a.epoch & 1u;
    return static_cast<const uint4*>(a.recv[a.rank]) + ((parity * a.slots + s) * G + src * B) * R;
  }
  return static_cast<const uint4*>(a.gathered) + (s * G + src * B) * R;
}

// Expansion tile k of the call (source order rank, rank - 1, rank - 2, ...).
__device__ __forceinline__ void expand(const KernelArgs& a, int k, int* src_out, int* slot_out,
                                       int* tile_out) {
  const int order = k / a.source_tiles;
  int rest = k - order * a.source_tiles;
  int s = 0;
  while (rest >= a.slot_tiles[s]) rest -= a.slot_tiles[s++];
  *src_out = (a.rank - order + a.world) % a.world;
  *slot_out = s;
  *tile_out = rest;
}

__device__ __forceinline__ void expand_tile(const KernelArgs& a, int src, int s, int tile,
                                            int lane) {
  const int R = static_cast<int>(a.row_pieces);
  const int bag_pieces = a.pooling[s] * R;
  const int count = static_cast<int>(a.local_batch) * bag_pieces;
  uint4* out =
      static_cast<uint4*>(a.values) + a.values_offset[s] + static_cast<std::int64_t>(src) * count;
  copy_tile(source_rows(a, s, src), out, count, bag_pieces, R, tile, lane);
}

// This rank's rows of the tables others own into their receive buffers, tiles split over
// the grid's push warps.
__device__ __forceinline__ void push(const KernelArgs& a, int push_warp, int push_warps, int lane) {
  const int R = static_cast<int>(a.row_pieces);
  const std::int64_t B = a.local_batch, G = B * a.world;
  const int count = static_cast<int>(B) * R;
  const int tiles = (count + kTilePieces - 1) / kTilePieces;
  const std::int64_t parity = a.epoch & 1u;
  const int owners = a.world - 1;
  const int start = a.push_spread && owners > 0 ? static_cast<int>(blockIdx.x) % owners : 0;
  for (int i = 0; i < owners; ++i) {
    const int owner = a.push_order[(start + i) % owners];
    // The table's first tile in the grid's numbering: its place among the pushed tables in
    // table order, whatever order this CTA visits the owners in.
    int first = 0;
    for (int t = 0; t < a.tables_total; ++t) {
      if (a.table_owner[t] == a.rank) continue;
      if (a.table_owner[t] != owner) {
        first += tiles;
        continue;
      }
      const int r = (push_warp - first) % push_warps;
      const uint4* rows = static_cast<const uint4*>(a.grad) + static_cast<std::int64_t>(t) * B * R;
      uint4* out = static_cast<uint4*>(a.recv[owner]) +
                   ((parity * a.owner_slots[owner] + a.table_slot[t]) * G + a.rank * B) * R;
      for (int tile = r < 0 ? r + push_warps : r; tile < tiles; tile += push_warps)
        copy_tile(rows, out, count, R, R, tile, lane);
      first += tiles;
    }
    // The push warps' stores to this owner, then one release for all of them.
    asm volatile("bar.sync 1, %0;" ::"r"(a.push_warps * 32) : "memory");
    if (threadIdx.x == 0) {
      fence_release_sys();
      add_relaxed_sys(a.counters[owner] + a.rank, 1u);
    }
  }
}

// Waits until source src's counter shows this call's CTAs; false when the deadline passed.
__device__ __forceinline__ bool wait_source(const KernelArgs& a, int src) {
  const std::uint32_t* counter = a.counters[a.rank] + src;
  const std::uint64_t deadline = global_timer_ns() + a.timeout_ns;
  unsigned sleep_ns = 0;
  while (static_cast<std::int32_t>(acquire_sys(counter) - a.expected) < 0) {
    if (global_timer_ns() > deadline) {
      atomicExch(a.timed_out, 1);
      return false;
    }
    if (sleep_ns > 0) __nanosleep(sleep_ns);
    sleep_ns = sleep_ns == 0 ? 32 : (sleep_ns < 512 ? 2 * sleep_ns : sleep_ns);
  }
  return true;
}

__global__ void __launch_bounds__(kThreads) embedding_alltoall_backward_kernel(const KernelArgs a) {
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int warp_in_cta = static_cast<int>(threadIdx.x) / 32;
  const int tiles = a.source_tiles * a.world;
  if (!a.push) {
    const int warps = static_cast<int>(gridDim.x) * kWarps;
    for (int k = static_cast<int>(blockIdx.x) * kWarps + warp_in_cta; k < tiles; k += warps) {
      int src = 0, s = 0, tile = 0;
      expand(a, k, &src, &s, &tile);
      expand_tile(a, src, s, tile, lane);
    }
    return;
  }
  const int warp = static_cast<int>(blockIdx.x) * kWarps + warp_in_cta;
  if (warp_in_cta < a.push_warps)
    push(a, static_cast<int>(blockIdx.x) * a.push_warps + warp_in_cta,
         static_cast<int>(gridDim.x) * a.push_warps, lane);
  // Claim tiles until every counter's are gone: a warp drains its counter, then the next,
  // making exactly one failed claim on each (the host adds each counter's claims plus
  // grid x warps to its base per call).
  unsigned ready = 1u << a.rank;
  for (int visited = 0, p = warp % kClaimCounters; visited < kClaimCounters;) {
    int start = 0, count = 0;
    claim_part(a.source_tiles, p, &start, &count);
    const int claimable = count * a.world;
    std::uint32_t claim = 0;
    if (lane == 0) claim = atomicAdd(a.claims + p * kClaimStride, 1u);
    claim = __shfl_sync(0xffffffffu, claim, 0);
    const int first = static_cast<std::int32_t>(claim - a.claims_base[p]) * a.claim_tiles;
    if (first >= claimable) {
      ++visited;
      p = (p + 1) % kClaimCounters;
      continue;
    }
    for (int j = first; j < first + a.claim_tiles && j < claimable; ++j) {
      const int order = j / count;
      int src = 0, s = 0, tile = 0;
      expand(a, order * a.source_tiles + start + (j - order * count), &src, &s, &tile);
      if (((ready >> src) & 1u) == 0) {
        if (!__all_sync(0xffffffffu, wait_source(a, src))) return;
        ready |= 1u << src;
      }
      expand_tile(a, src, s, tile, lane);
    }
  }
}

}  // namespace

Status plan_tiles(KernelArgs* args) {
  KernelArgs& a = *args;
  std::int64_t total = 0;
  for (int s = 0; s < a.slots; ++s) {
    const std::int64_t pieces = a.local_batch * a.pooling[s] * a.row_pieces;
    if (pieces >= (std::int64_t{1} << 31) - kTilePieces)
      return Status::failure("embedding all-to-all backward: slot " + std::to_string(s) +
                             " has over 2^31 16-byte pieces a source");
    a.slot_tiles[s] = static_cast<std::int32_t>((pieces + kTilePieces - 1) / kTilePieces);
    total += a.slot_tiles[s];
  }
  if (a.local_batch * a.row_pieces >= (std::int64_t{1} << 31) - kTilePieces ||
      (total + kThreads) * a.world >= (std::int64_t{1} << 30))
    return Status::failure("embedding all-to-all backward: over 2^30 tiles a call");
  a.source_tiles = static_cast<std::int32_t>(total);
  return Status::success();
}

Status launch_grid(const KernelArgs& a, int* grid) {
  int device = 0, sms = 0, per_sm = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
      &per_sm, embedding_alltoall_backward_kernel, kThreads, 0));
  const std::int64_t work = std::max<std::int64_t>(call_tiles(a), 1);
  *grid = static_cast<int>(std::max<std::int64_t>(
      1, std::min<std::int64_t>((work + kWarps - 1) / kWarps, std::int64_t{sms} * per_sm)));
  return Status::success();
}

Status launch(const KernelArgs& a, int grid, cudaStream_t stream) {
  if (a.slots < 0 || a.slots > kMaxSlots || a.world < 1 || a.world > kMaxWorld || grid < 1 ||
      a.local_batch < 1 || a.row_pieces < 1 || a.tables_total > kMaxTables ||
      (a.slots > 0 && a.values == nullptr) ||
      (a.push && (a.epoch == 0 || a.timed_out == nullptr || a.claims == nullptr ||
                  a.push_warps < 1 || a.push_warps >= kWarps || a.claim_tiles < 1)) ||
      (!a.push && a.world > 1 && a.slots > 0 && a.gathered == nullptr))
    return Status::failure("embedding all-to-all backward: bad launch (slots " +
                           std::to_string(a.slots) + ", world " + std::to_string(a.world) +
                           ", grid " + std::to_string(grid) + ")");
  embedding_alltoall_backward_kernel<<<grid, kThreads, 0, stream>>>(a);
  CUDA_CHECK(cudaGetLastError());
  return Status::success();
}

Status preload() {
  cudaFuncAttributes attributes{};
  CUDA_CHECK(cudaFuncGetAttributes(&attributes, embedding_alltoall_backward_kernel));
  return Status::success();
}

}  // namespace overlapsim::kernels::fused::embedding_a2a_backward
