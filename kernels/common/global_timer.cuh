#pragma once
// The GPU's global timer in ns (PTX %globaltimer): the clock every device-side wait, hold
// and probe here measures its deadlines with (the same on every SM, unlike clock64).
// CUDA device code.
#include <cstdint>

namespace overlapsim::kernels {

__device__ __forceinline__ std::uint64_t global_timer_ns() {
  std::uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

}  // namespace overlapsim::kernels
