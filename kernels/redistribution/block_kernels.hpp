#pragma once
// The device work of a redistribution executor besides NCCL: copying a box of elements
// between two strided row-major arrays, and the reproducible values a plan's blocks hold,
// so the result can be checked bit for bit. Host API, C++17 (included by the .cu file).
#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "kernels/common/status.hpp"

namespace overlapsim::kernels::redistribution {

inline constexpr int kMaxDims = 6;

// Copies `extent` (outermost first) elements of `element_bytes` each from src to dst,
// where consecutive indices of dimension i lie src_stride[i] / dst_stride[i] elements
// apart. Dimensions that are contiguous in both arrays are merged, and the widest access
// (up to 16 bytes) that every address and stride allows is used. One kernel launch.
Status copy_box(const void* src, const std::vector<std::int64_t>& src_stride, void* dst,
                const std::vector<std::int64_t>& dst_stride, std::vector<std::int64_t> extent,
                int element_bytes, cudaStream_t stream);

// The values of an array's elements, as bf16 bits (2-byte elements only). With no pending
// sums (combos == 1) element i holds 16 mixed bits of i, which catch any misplaced element.
// Under pending sums over a group of `combos` members, member k holds the addend
//   k > 0: (i + 3k) mod 5,   k = 0: (i mod 61) - sum over j > 0 of (i + 3j) mod 5,
// small integers whose sums are exact in bf16 in any order (|value| < 256 for combos < 48).
struct ValueSpec {
  int combos = 1;
  // The addends a block holds summed: one (the source) or all the members a plan's
  // reduction summed (its target).
  std::vector<int> summed;
};

// Fills `data`, the dense row-major block of global indices [lo, lo + extent) of an array
// of `shape`, with the values of `spec`.
Status fill_block(void* data, const std::vector<std::int64_t>& shape,
                  const std::vector<std::int64_t>& lo, const std::vector<std::int64_t>& extent,
                  const ValueSpec& spec, cudaStream_t stream);

// Elements (2-byte) where a and b differ bitwise, counted in `counter` (8 bytes of device
// memory the caller owns, so no allocation happens while peers run NCCL); waits for `stream`.
Status count_differences(const void* a, const void* b, std::size_t count, void* counter,
                         cudaStream_t stream, std::uint64_t* result);

}  // namespace overlapsim::kernels::redistribution
