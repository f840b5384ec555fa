#pragma once
// System-scope signalling between GPUs over NVLink, as the fused kernels use it: a release
// fence before counting a CTA's stores done on a peer, a relaxed add to the peer's counter,
// and an acquire load of a counter by the reader before it reads what the count covers.
// CUDA device code.
#include <cstdint>

namespace overlapsim::kernels::fused {

// Cumulative over a preceding barrier: issued by one thread after the CTA's (or the named
// barrier's warps') stores, it releases all of them.
__device__ __forceinline__ void fence_release_sys() {
  asm volatile("fence.acq_rel.sys;" ::: "memory");
}

__device__ __forceinline__ void add_relaxed_sys(std::uint32_t* counter, std::uint32_t value) {
  asm volatile("red.relaxed.sys.global.add.u32 [%0], %1;" ::"l"(counter), "r"(value) : "memory");
}

__device__ __forceinline__ std::uint32_t acquire_sys(const std::uint32_t* counter) {
  std::uint32_t v;
  asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(counter) : "memory");
  return v;
}

}  // namespace overlapsim::kernels::fused
