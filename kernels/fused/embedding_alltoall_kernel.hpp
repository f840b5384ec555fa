#pragma once
// The fused embedding-bag + all-to-all kernel's launch interface (embedding_alltoall.cu):
// plain arguments, no classes, so the host design (embedding_alltoall.hpp) stays in C++20
// and the kernel in C++17. Host only.
#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdint>

#include "kernels/common/status.hpp"
#include "kernels/harness/dtype.hpp"

namespace overlapsim::kernels::fused::embedding_a2a {

constexpr int kMaxWorld = 8;
constexpr int kMaxSlots = 32;  // tables one rank owns
constexpr int kThreads = 256;  // 8 warps, a warp per bag (or per two bags, short bags)

struct KernelArgs {
  // This rank's tables, slot s = the s-th table it owns (global table table_id[s]).
  const void* tables[kMaxSlots] = {};
  const std::int32_t* indices[kMaxSlots] = {};  // [global batch][pooling[s]]
  std::int32_t pooling[kMaxSlots] = {};
  std::int32_t table_id[kMaxSlots] = {};
  int slots = 0;
  int tables_total = 0;          // tables of the model (the receive layout's first axis)
  std::int64_t local_batch = 0;  // B: bags a destination rank receives per table
  std::int64_t dim = 0;
  // Row loads a lane group keeps in flight on bags the warp's groups share (pooling of at
  // least groups x 4): 4 (4 CTAs an SM) or 8 (3 CTAs an SM, more rows in flight a warp).
  // The order of adds does not depend on it: the same bits.
  int row_loads = 4;
  int world = 1;
  int rank = 0;
  // push == false: the pooled rows stay here, out[slot][global batch][dim] (what the
  // sequential design hands to NCCL). push == true: bag b of slot s goes to rank b / B,
  // recv[b / B][parity][table_id[s]][b % B][dim], and each CTA then adds 1 to counter
  // [this rank] on every rank.
  bool push = false;
  void* out = nullptr;
  void* recv[kMaxWorld] = {};
  std::uint32_t* counters[kMaxWorld] = {};
  // NCCL's device API instead: one symmetric window per rank (receive buffer, then the
  // counters at counters_offset_bytes); the kernel takes each peer's address from it
  // (ncclGetPeerPointer: a load/store-accessible NVLink peer) and ignores recv, counters.
  ncclWindow_t window = nullptr;
  std::size_t counters_offset_bytes = 0;
  std::uint32_t epoch = 0;  // this call's number (> 0); its parity picks the receive half
  // What every source's counter reaches once this call's CTAs have all counted: the grids
  // of calls 1 .. epoch summed (mod 2^32; every rank launches the same grid per call).
  std::uint32_t expected = 0;
  std::uint64_t timeout_ns = 0;
  int* timed_out = nullptr;  // set to 1 when the wait for a source gives up
};

Status can_launch(std::int64_t dim, DType dtype);
// CTAs the launch of `args` uses: one task per warp, capped at what fits on the device at
// once (every rank launches the same number per call: the counters expect the calls'
// grids summed from every source).
Status launch_grid(const KernelArgs& args, DType dtype, int* grid);  // for args.row_loads
Status launch(const KernelArgs& args, DType dtype, int grid, cudaStream_t stream);
// Loads every instantiation onto the current device now (lazy module loading: a first
// load while a peer's CTA spins on this rank's counters must not wait behind it).
Status preload();

}  // namespace overlapsim::kernels::fused::embedding_a2a
