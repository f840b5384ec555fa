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
// 16-row tensor-core tiles, so a slice is also the unit of every push and flag.
constexpr int kSliceCols = 32;
constexpr int kMaxTokens = 64;
constexpr int kMaxWorld = 8;
constexpr int kThreads = 256;  // 8 warps, each a share of K

struct GemvKernelArgs {
  const std::uint16_t* x = nullptr;  // tokens x k, row-major, bf16
  const std::uint16_t* w = nullptr;  // n x k, row-major (a Linear weight), bf16
  std::uint16_t* y = nullptr;        // tokens x n, row-major, bf16
  int tokens = 0;
  std::int64_t n = 0;
  std::int64_t k = 0;
  // Communication; world == 1 or push == false: y = this rank's partial, nothing else.
  bool push = false;
  int world = 1;
  int rank = 0;
  // recv[r]: rank r's receive buffer, [2 parities][world sources][n / kSliceCols slices]
  // [tokens][kSliceCols] bf16; flags[r]: rank r's flags, [world sources][slices] u32.
  std::uint16_t* recv[kMaxWorld] = {};
  std::uint32_t* flags[kMaxWorld] = {};
  // NCCL's device API instead: one symmetric window per rank (receive buffer, then the
  // flags at flags_offset_bytes); the kernel asks NCCL for each peer's address in it
  // (ncclGetPeerPointer, a load/store-accessible NVLink peer) and ignores recv and flags.
  ncclWindow_t window = nullptr;
  std::size_t flags_offset_bytes = 0;
  std::uint32_t epoch = 0;  // this call's number (> 0); its parity picks the recv half
  std::uint64_t timeout_ns = 0;
  int* timed_out = nullptr;  // set to 1 when a flag wait gives up
};

// CTAs that fit on the device at once for `tokens` (all must be resident: every CTA waits
// for peers' CTAs only after pushing all its own slices).
Status gemv_allreduce_max_ctas(int tokens, int* ctas);
Status launch_gemv_allreduce(const GemvKernelArgs& args, int grid, cudaStream_t stream);
// Loads every instantiation onto the current device now: under lazy module loading a
// first launch while a peer's kernel spins on this rank's flags could wait for a load that
// waits for that kernel.
Status preload_gemv_allreduce();

}  // namespace overlapsim::kernels::fused
