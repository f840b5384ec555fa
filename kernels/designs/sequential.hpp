#pragma once
// Design `sequential`: the op, then the collective, on one stream (for allgather+gemm the
// collective comes first). The baseline every other design is measured against. C++17.
#include <cuda_runtime.h>

#include "kernels/designs/pair_kernels.hpp"

namespace overlapsim::kernels {

// Needs pair.prepare(1).
Status run_sequential(const PairKernels& pair, const PairBuffers& buffers, cudaStream_t stream);

}  // namespace overlapsim::kernels
