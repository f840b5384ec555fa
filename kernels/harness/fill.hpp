#pragma once
// Device-side filling and checking of buffers: reproducible random inputs, poisoned
// outputs, and counts of unwritten or mismatching elements. Host API, C++17.
#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "kernels/common/status.hpp"
#include "kernels/harness/dtype.hpp"

namespace overlapsim::kernels {

// Element i = random_bits(dtype, seed, i) (see random_values.hpp).
Status fill_random(void* data, std::size_t count, DType dtype, std::uint64_t seed,
                   cudaStream_t stream);
// Element i = random_index(seed, i, range).
Status fill_indices(std::int32_t* data, std::size_t count, std::int32_t range, std::uint64_t seed,
                    cudaStream_t stream);
// Every element becomes NaN (0xFFFF is NaN in bf16 and fp16).
Status poison(void* data, std::size_t count, cudaStream_t stream);

// The following wait for `stream` (it must be drained of collectives already).
// Elements that are NaN or infinite: unwritten outputs after poison().
Status count_nonfinite(const void* data, std::size_t count, DType dtype, cudaStream_t stream,
                       std::uint64_t* result);
// Elements where |a - b| > abs_tol + rel_tol * max(|a|, |b|), or either is not finite.
Status count_mismatches(const void* a, const void* b, std::size_t count, DType dtype,
                        double rel_tol, double abs_tol, cudaStream_t stream, std::uint64_t* result);
// Values of the elements at `indices` (flat element indices), as doubles.
Status gather_values(const void* data, DType dtype, const std::vector<std::uint64_t>& indices,
                     cudaStream_t stream, std::vector<double>* values);

}  // namespace overlapsim::kernels
