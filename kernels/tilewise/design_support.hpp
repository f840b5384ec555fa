#pragma once
// What both tile-wise transports (tilewise_design.cpp: NCCL, owner_design.cpp: copy
// engines) and the one-GPU owner rehearsal do the same way when they set up: upload a
// plan's tables to the device and describe the GEMM they run. Internal to kernels/tilewise. C++17.
#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "kernels/common/status.hpp"
#include "kernels/gemm/own_gemm.hpp"
#include "kernels/harness/device_buffer.hpp"
#include "kernels/harness/dtype.hpp"

namespace overlapsim::kernels::tilewise {

inline gemm::DType gemm_dtype(DType d) {
  return d == DType::BF16 ? gemm::DType::kBf16 : gemm::DType::kFp16;
}

// Allocates `buffer` for `values` and copies them in (synchronous).
template <class T>
Status upload(DeviceBuffer& buffer, const std::vector<T>& values) {
  OVERLAPSIM_TRY(buffer.allocate(values.size() * sizeof(T)));
  if (!values.empty())
    CUDA_CHECK(cudaMemcpy(buffer.data(), values.data(), values.size() * sizeof(T),
                          cudaMemcpyHostToDevice));
  return Status::success();
}

// Allocates `bytes` and sets them to zero (synchronous).
inline Status zeroed(DeviceBuffer& buffer, std::size_t bytes) {
  OVERLAPSIM_TRY(buffer.allocate(bytes));
  if (bytes > 0) CUDA_CHECK(cudaMemset(buffer.data(), 0, bytes));
  return Status::success();
}

// C[m x n] = A[m x k] * B[n x k]^T into `c` (the remapped output).
inline gemm::GemmArgs gemm_args(std::int64_t m, std::int64_t n, std::int64_t k, DType dtype,
                                const void* a, const void* b, void* c) {
  gemm::GemmArgs args;
  args.m = m;
  args.n = n;
  args.k = k;
  args.dtype = gemm_dtype(dtype);
  args.a = a;
  args.b = b;
  args.c = c;
  return args;
}

}  // namespace overlapsim::kernels::tilewise
