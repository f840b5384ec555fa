#pragma once
// float <-> bf16 / fp16 in device code, round to nearest: one definition for the kernels
// that convert element by element (embedding bag, the tile-wise un-permute and RMSNorm).
// C++17 (nvcc).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace overlapsim::kernels {

__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
template <typename T>
__device__ __forceinline__ T from_float(float v);
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}
template <>
__device__ __forceinline__ __half from_float<__half>(float v) {
  return __float2half_rn(v);
}

}  // namespace overlapsim::kernels
