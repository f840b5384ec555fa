#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "kernels/ops/half_float.cuh"
#include "kernels/tilewise/partial_sum.hpp"

namespace overlapsim::kernels::tilewise {
namespace {

constexpr int kThreads = 256;
constexpr int kMaxCount = 16;  // ranks; the loop is unrolled to this bound

// Eight elements a thread (one 16-byte load a partial); grid-stride.
template <class T>
__global__ void sum_vector_kernel(const T* parts, std::size_t stride, int count, T* out,
                                  std::size_t vectors) {
  for (std::size_t v = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; v < vectors;
       v += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
#pragma unroll 4
    for (int s = 0; s < kMaxCount; ++s) {
      if (s >= count) break;
      const uint4 raw = reinterpret_cast<const uint4*>(parts + s * stride)[v];
      const T* x = reinterpret_cast<const T*>(&raw);
#pragma unroll
      for (int e = 0; e < 8; ++e) acc[e] += to_float(x[e]);
    }
    uint4 packed;
    T* y = reinterpret_cast<T*>(&packed);
#pragma unroll
    for (int e = 0; e < 8; ++e) y[e] = from_float<T>(acc[e]);
    reinterpret_cast<uint4*>(out)[v] = packed;
  }
}

template <class T>
__global__ void sum_scalar_kernel(const T* parts, std::size_t stride, int count, T* out,
                                  std::size_t elems) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < elems;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    float acc = 0;
    for (int s = 0; s < count; ++s) acc += to_float(parts[s * stride + i]);
    out[i] = from_float<T>(acc);
  }
}

template <class T>
Status launch(const void* parts, std::size_t stride, int count, void* out, std::size_t elems,
              cudaStream_t stream) {
  int device = 0, sms = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  const auto* p = static_cast<const T*>(parts);
  auto* o = static_cast<T*>(out);
  const bool aligned = reinterpret_cast<std::uintptr_t>(parts) % 16 == 0 &&
                       reinterpret_cast<std::uintptr_t>(out) % 16 == 0 && stride % 8 == 0 &&
                       elems % 8 == 0;
  const std::size_t items = aligned ? elems / 8 : elems;
  // Enough blocks to fill every SM several times over (memory-bound), no more than needed.
  const std::size_t wanted = (items + kThreads - 1) / kThreads;
  const unsigned blocks =
      static_cast<unsigned>(std::min<std::size_t>(wanted, static_cast<std::size_t>(sms) * 8));
  if (blocks == 0) return Status::success();
  if (aligned)
    sum_vector_kernel<T><<<blocks, kThreads, 0, stream>>>(p, stride, count, o, items);
  else
    sum_scalar_kernel<T><<<blocks, kThreads, 0, stream>>>(p, stride, count, o, items);
  CUDA_CHECK(cudaGetLastError());
  return Status::success();
}

}  // namespace

Status preload_partial_sum() {
  cudaFuncAttributes a{};
  CUDA_CHECK(cudaFuncGetAttributes(&a, sum_vector_kernel<__nv_bfloat16>));
  CUDA_CHECK(cudaFuncGetAttributes(&a, sum_scalar_kernel<__nv_bfloat16>));
  CUDA_CHECK(cudaFuncGetAttributes(&a, sum_vector_kernel<__half>));
  CUDA_CHECK(cudaFuncGetAttributes(&a, sum_scalar_kernel<__half>));
  return Status::success();
}

Status sum_partials(const void* parts, std::size_t stride_elems, int count, void* out,
                    std::size_t elems, DType dtype, cudaStream_t stream) {
  if (count < 1 || count > kMaxCount)
    return Status::failure("partial sum: 1 to 16 partials, got " + std::to_string(count));
  if (dtype == DType::BF16)
    return launch<__nv_bfloat16>(parts, stride_elems, count, out, elems, stream);
  if (dtype == DType::FP16) return launch<__half>(parts, stride_elems, count, out, elems, stream);
  return Status::failure("partial sum: bf16 or fp16 only");
}

}  // namespace overlapsim::kernels::tilewise
