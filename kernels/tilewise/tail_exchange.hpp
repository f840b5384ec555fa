#pragma once
// Phase 2 of an all-reduce's last own group by the SMs, launched on the compute stream right
// behind the GEMM (CopyEnginePhase2::TailKernel, copy_engine_design.hpp).
//
// Why: the last own group's tiles finish with the GEMM's last wave, so whatever carries them
// to the peers is the call's tail. By the copy engine that tail is a counter wait seen by the
// stream's front end, the copy, a flag written by the stream and a peer stream waiting for it
// (2 × H100, 4096³: 51–69 µs after the GEMM for an 8 MiB copy of 27 µs; docs/kernels/log.md
// "the first 2 × H100 run"). Here stream order replaces the counter wait, every SM copies (the GEMM is
// done, so nothing is slowed down), and the flags are polled by the receiving kernel itself.
//
// The region is cut into kTailSlices equal slices (16-byte multiples, the last one shorter).
// CTA c copies slices c, c + grid, ... to each peer in turn (peers in rotated order, as the
// copy engine's phase 2), then after one system-scope fence releases the epoch into that
// peer's flags [rank][slice] of those slices; then it waits (acquire) for every peer's flags
// [peer][slice] of the same slices. The kernel ends once all slices of all peers are in this
// rank's P. The slice count is fixed so ranks agree on it whatever their SM counts; with no
// bytes the kernel is a handshake alone on slice 0's flags (after a copy on the same stream,
// say). It is launched as a programmatic dependent of the kernel before it and waits for
// that kernel itself. No deadlock: a CTA's stores and flags come before its waits, and every
// rank's grid is resident once its GEMM has ended (ranks sharing a GPU: world × grid <= SMs,
// as their GEMMs). A wait gives up after timeout_s and sets *timed_out. C++17 host header;
// the kernel is in tail_exchange.cu.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <functional>

#include "kernels/common/status.hpp"

namespace overlapsim::kernels::tilewise {

inline constexpr int kTailSlices = 128;
inline constexpr int kTailMaxPeers = 7;  // world <= 8

struct TailExchangeArgs {
  const char* src = nullptr;  // the reduced group in this rank's P
  std::size_t bytes = 0;
  int peers = 0;                                      // world − 1, in the order they are served
  char* dst[kTailMaxPeers] = {};                      // where each peer keeps this group
  std::uint32_t* out_flags[kTailMaxPeers] = {};       // each peer's flags of this rank's slices
  const std::uint32_t* in_flags[kTailMaxPeers] = {};  // this rank's flags of each peer's slices
  std::uint32_t epoch = 0;
  int grid = 0;                            // CTAs, 1..kTailSlices
  int threads = 512;                       // per CTA: 256, 512 or 1024
  std::uint32_t* reset_counter = nullptr;  // the group's tile counter, zeroed for the next call
  double timeout_s = 60.0;
  int* timed_out = nullptr;
};

// Fills args->peers, dst, out_flags and in_flags for `rank` of `world`: peers served in
// rotated order (rank + 1, rank + 2, ...; every link busy at once), dst_of(d) where peer d
// keeps this rank's region, flags_of(d) peer d's flag array and my_flags this rank's, both
// laid out [source rank][kTailSlices]. The one place that layout is written down.
void set_tail_peers(int world, int rank, const std::function<char*(int)>& dst_of,
                    const std::function<std::uint32_t*(int)>& flags_of, std::uint32_t* my_flags,
                    TailExchangeArgs* args);

Status launch_tail_exchange(const TailExchangeArgs& args, cudaStream_t stream);

// Loads the kernel's module before the first overlapped call (lazy loading inside a call
// whose peers already wait deadlocks them; design.md).
Status preload_tail_exchange();

}  // namespace overlapsim::kernels::tilewise
