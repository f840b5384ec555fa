#pragma once
// The owner's sum of a reduce-scatter's partials: out = Σ_s part_s over s = 0..count − 1 in
// that order, in fp32, rounded once to the element type (bf16 or fp16). The partials lie
// `stride_elems` apart from `parts` (one receive slot a rank), so the result does not depend
// on which partial arrived first. 16-byte loads where every address allows, else one
// element a thread. What vendor_reduce_scatter.hpp ends each call with. C++17.
#include <cuda_runtime_api.h>

#include <cstddef>

#include "kernels/common/status.hpp"
#include "kernels/harness/dtype.hpp"

namespace overlapsim::kernels::tilewise {

// Loads the kernels' module (a lazy load behind a cross-stream wait can deadlock).
Status preload_partial_sum();

Status sum_partials(const void* parts, std::size_t stride_elems, int count, void* out,
                    std::size_t elems, DType dtype, cudaStream_t stream);

}  // namespace overlapsim::kernels::tilewise
