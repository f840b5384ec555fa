#pragma once
// The fused GEMV + all-reduce kernel's launch interface (gemv_allreduce.cu): plain
// arguments, no classes, so the host design (gemv_allreduce.hpp) stays in C++20 and the
// kernel in C++17. Host only.
#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdint>

#include "kernels/common/status.hpp"

namespace overlapsim::kernels::fused {

// Output rows (columns of y) one slice holds: a CTA computes a slice's partial with two
// 16-row tensor-core tiles, so a slice is also the unit of every push.
constexpr int kSliceCols = 32;
constexpr int kMaxTokens = 64;
constexpr int kMaxWorld = 8;
constexpr int kMaxKSplits = 16;
constexpr int kThreads = 256;  // 8 warps, each a share of K
// Bytes a rank's receive buffer holds per output element and source: a bf16 pair travels
// with the call's epoch beside it (8 bytes per 2 elements), so a reader needs no flag.
constexpr int kLineBytesPerElem = 4;
// The finer last wave (GemvKernelArgs::last_wave_slices): its K ranges are whole multiples
// of this many chunks of 32 (a whole loop iteration of the CTA at every token tile), and it
// is built for up to this many tokens (one and two token tiles, where the decode bars are).
constexpr int kLastWaveChunks = 32;
constexpr int kLastWaveMaxTokens = 16;

struct GemvKernelArgs {
  const std::uint16_t* x = nullptr;  // tokens x k, row-major, bf16
  const std::uint16_t* w = nullptr;  // n x k, row-major (a Linear weight), bf16
  std::uint16_t* y = nullptr;        // tokens x n, row-major, bf16
  int tokens = 0;
  std::int64_t n = 0;
  std::int64_t k = 0;
  // W's loads also ask L2 for the whole 256-byte block around each access (.L2::256B).
  // The same values: the same bits.
  bool l2_prefetch = false;
  // Work units: every slice's K split into k_splits equal ranges (1 .. kMaxKSplits). With
  // more than one, the splits' fp32 partials meet in `partials` ([slice][split][tokens][32]),
  // `arrivals` (one u32 per slice, counting 0 .. k_splits - 1 and back to 0 each call; 0
  // before a call) names the last split to arrive, which sums them in split order and rounds
  // once.
  int k_splits = 1;
  float* partials = nullptr;
  std::uint32_t* arrivals = nullptr;
  // Units past the grid's first are handed out by `tickets` (+units per call when
  // units > grid); ticket_base is its value at this call's start.
  unsigned long long* tickets = nullptr;
  unsigned long long ticket_base = 0;
  // With one token tile (tokens <= 8) and units past the grid: a CTA takes its next ticket
  // before its unit's last loop iteration and has L2 fetch the head of that unit, so the
  // next unit starts on W in L2 (gemv_allreduce.cu). The same units, the same bits; other
  // token counts ignore it.
  bool early_claim = false;
  // The finer last wave: the last last_wave_slices slices (0: none) are each split into
  // last_wave_splits (2 .. kMaxKSplits) ranges of whole kLastWaveChunks, and their units are
  // numbered after every other slice's, so the counter hands them out last: CTAs that free
  // up near the end take small pieces while the bulk keeps its large units. Their splits
  // meet like k_splits' (in split order, one rounding); `partials` is strided by
  // max(k_splits, last_wave_splits) per slice. Up to kLastWaveMaxTokens tokens, without
  // early_claim.
  std::int64_t last_wave_slices = 0;
  int last_wave_splits = 1;
  // Communication; world == 1 or push == false: y = this rank's partial, nothing else.
  bool push = false;
  int world = 1;
  int rank = 0;
  // recv[r]: rank r's receive buffer, [2 parities][world sources][n / kSliceCols slices]
  // [tokens * 4 threads][2 lines of 16 bytes: bf16 pair, epoch, bf16 pair, epoch].
  std::uint16_t* recv[kMaxWorld] = {};
  // NCCL's device API instead: one symmetric window per rank holding the receive buffer;
  // the kernel asks NCCL for each peer's address in it (ncclGetPeerPointer, a
  // load/store-accessible NVLink peer) and ignores recv.
  ncclWindow_t window = nullptr;
  std::uint32_t epoch = 0;  // this call's number (> 0); its parity picks the recv half
  std::uint64_t timeout_ns = 0;
  int* timed_out = nullptr;  // set to 1 when a wait for a peer's partial gives up
  // Diagnostics: when set, thread 0 of CTA c writes the global timer (ns) at its start, after
  // its last unit's push, after its last slice's lines all arrived, and at its end into
  // trace[4 c .. 4 c + 3].
  std::uint64_t* trace = nullptr;
};

// CTAs that fit on the device at once for `tokens` (all must be resident: a CTA waits for
// peers' partials only after every unit of its rank has been handed out).
Status gemv_allreduce_max_ctas(int tokens, int* ctas);
Status launch_gemv_allreduce(const GemvKernelArgs& args, int grid, cudaStream_t stream);
// Loads every instantiation onto the current device now: under lazy module loading a
// first launch while a peer's kernel spins on this rank's partials could wait for a load
// that waits for that kernel.
Status preload_gemv_allreduce();

}  // namespace overlapsim::kernels::fused
