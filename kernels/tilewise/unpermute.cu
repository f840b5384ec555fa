#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <string>

#include "kernels/gemm/gemm_config.hpp"
#include "kernels/ops/half_float.cuh"
#include "kernels/tilewise/unpermute.hpp"

namespace overlapsim::kernels::tilewise {
namespace {

constexpr int kTileM = gemm::GemmConfig::kTileM;
constexpr int kTileN = gemm::GemmConfig::kTileN;
constexpr int kThreads = 256;

struct Geometry {
  const std::int64_t* offsets;
  std::int64_t rows;
  std::int64_t cols;
  std::int32_t tiles_n;
};

// Element index of (row, col) in the view; natural when there is no table.
__device__ __forceinline__ std::int64_t element_at(const Geometry& g, std::int64_t row,
                                                   std::int64_t col) {
  if (g.offsets == nullptr) return row * g.cols + col;
  const std::int64_t tm = row / kTileM;
  const std::int64_t tn = col / kTileN;
  const std::int64_t left = g.cols - tn * kTileN;
  const std::int64_t tile_cols = left < kTileN ? left : kTileN;
  return g.offsets[tm * g.tiles_n + tn] + (row - tm * kTileM) * tile_cols + (col - tn * kTileN);
}

// One CTA per natural tile; 16-byte copies when every row segment is a multiple of 8.
__global__ void unpermute_kernel(const std::uint16_t* src, Geometry g, std::uint16_t* dst,
                                 bool vectors) {
  const std::int64_t tm = blockIdx.y;
  const std::int64_t tn = blockIdx.x;
  const std::int64_t row_left = g.rows - tm * kTileM;
  const std::int64_t col_left = g.cols - tn * kTileN;
  const int rows = static_cast<int>(row_left < kTileM ? row_left : kTileM);
  const int cols = static_cast<int>(col_left < kTileN ? col_left : kTileN);
  const std::uint16_t* block = src + g.offsets[tm * g.tiles_n + tn];
  std::uint16_t* out = dst + tm * kTileM * g.cols + tn * kTileN;
  if (vectors) {
    const int per_row = cols / 8;
    for (int i = threadIdx.x; i < rows * per_row; i += blockDim.x) {
      const int r = i / per_row;
      const int v = i - r * per_row;
      const int4 value = __ldcs(reinterpret_cast<const int4*>(block + r * cols) + v);
      *(reinterpret_cast<int4*>(out + r * g.cols) + v) = value;
    }
  } else {
    for (int i = threadIdx.x; i < rows * cols; i += blockDim.x) {
      const int r = i / cols;
      const int c = i - r * cols;
      out[r * g.cols + c] = block[i];
    }
  }
}

// h = round(x + r) for the 8 (or fewer, at a ragged end) columns of one chunk.
template <class T>
__device__ __forceinline__ int load_chunk(const T* x, const Geometry& g, const T* residual,
                                          std::int64_t row, std::int64_t col, bool vectors,
                                          float (&h)[8]) {
  if (vectors) {
    const int4 xv = *reinterpret_cast<const int4*>(x + element_at(g, row, col));
    const int4 rv = *reinterpret_cast<const int4*>(residual + row * g.cols + col);
    const T* xs = reinterpret_cast<const T*>(&xv);
    const T* rs = reinterpret_cast<const T*>(&rv);
#pragma unroll
    for (int i = 0; i < 8; ++i) h[i] = to_float(from_float<T>(to_float(xs[i]) + to_float(rs[i])));
    return 8;
  }
  const int count = static_cast<int>(g.cols - col < 8 ? g.cols - col : 8);
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    h[i] = 0;
    if (i < count)
      h[i] = to_float(from_float<T>(to_float(x[element_at(g, row, col + i)]) +
                                    to_float(residual[row * g.cols + col + i])));
  }
  return count;
}

// One CTA per row. Thread t handles chunks t, t + blockDim, ... of 8 columns, in both the
// natural and the fused path, so the sum of squares is reduced in the same order.
template <class T>
__global__ void residual_rmsnorm_kernel(const T* x, Geometry g, const T* residual, const T* weight,
                                        float eps, T* out, bool vectors) {
  __shared__ float partial[kThreads / 32];
  __shared__ float scale;
  const std::int64_t row = blockIdx.x;
  const std::int64_t chunks = (g.cols + 7) / 8;
  float sum_sq = 0;
  for (std::int64_t c = threadIdx.x; c < chunks; c += blockDim.x) {
    float h[8];
    load_chunk<T>(x, g, residual, row, c * 8, vectors, h);
#pragma unroll
    for (int i = 0; i < 8; ++i) sum_sq += h[i] * h[i];
  }
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) sum_sq += __shfl_xor_sync(0xffffffffu, sum_sq, offset);
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = sum_sq;
  __syncthreads();
  if (threadIdx.x == 0) {
    float total = 0;
    for (int w = 0; w < kThreads / 32; ++w) total += partial[w];
    scale = rsqrtf(total / static_cast<float>(g.cols) + eps);
  }
  __syncthreads();
  for (std::int64_t c = threadIdx.x; c < chunks; c += blockDim.x) {
    float h[8];
    const std::int64_t col = c * 8;
    const int count = load_chunk<T>(x, g, residual, row, col, vectors, h);
    T* o = out + row * g.cols + col;
    if (vectors) {
      const int4 wv = *reinterpret_cast<const int4*>(weight + col);
      const T* ws = reinterpret_cast<const T*>(&wv);
      int4 ov;
      T* os = reinterpret_cast<T*>(&ov);
#pragma unroll
      for (int i = 0; i < 8; ++i) os[i] = from_float<T>(h[i] * scale * to_float(ws[i]));
      *reinterpret_cast<int4*>(o) = ov;
    } else {
      for (int i = 0; i < count; ++i) o[i] = from_float<T>(h[i] * scale * to_float(weight[col + i]));
    }
  }
}

bool aligned16(const void* p) { return (reinterpret_cast<std::uintptr_t>(p) & 15) == 0; }

Geometry geometry_of(const TileView& v) {
  Geometry g;
  g.offsets = v.tile_offset_elems;
  g.rows = v.rows;
  g.cols = v.cols;
  g.tiles_n = static_cast<std::int32_t>((v.cols + kTileN - 1) / kTileN);
  return g;
}

Status check_view(const TileView& v, const char* what) {
  if (v.data == nullptr || v.rows < 1 || v.cols < 1)
    return Status::failure(std::string(what) + ": empty view (data, rows >= 1, cols >= 1 needed)");
  if (v.rows > (std::int64_t{1} << 31) - 1)
    return Status::failure(std::string(what) + ": more than 2^31 rows");
  return Status::success();
}

}  // namespace

Status preload_unpermute_kernels() {
  cudaFuncAttributes attributes{};
  CUDA_CHECK(cudaFuncGetAttributes(&attributes, unpermute_kernel));
  CUDA_CHECK(cudaFuncGetAttributes(&attributes, residual_rmsnorm_kernel<__nv_bfloat16>));
  CUDA_CHECK(cudaFuncGetAttributes(&attributes, residual_rmsnorm_kernel<__half>));
  return Status::success();
}

Status unpermute(const TileView& src, void* natural, DType, cudaStream_t stream) {
  OVERLAPSIM_TRY(check_view(src, "unpermute"));
  if (src.tile_offset_elems == nullptr)
    return Status::failure("unpermute: the source view has no tile table");
  const Geometry g = geometry_of(src);
  // Every tile's column count, every block offset and the row stride are multiples of 8
  // exactly when cols is (tile sizes are rows × cols, cols ≡ 0 mod 8).
  const bool vectors = src.cols % 8 == 0 && aligned16(src.data) && aligned16(natural);
  const dim3 grid(static_cast<unsigned>(g.tiles_n),
                  static_cast<unsigned>((src.rows + kTileM - 1) / kTileM));
  unpermute_kernel<<<grid, kThreads, 0, stream>>>(static_cast<const std::uint16_t*>(src.data), g,
                                                  static_cast<std::uint16_t*>(natural), vectors);
  CUDA_CHECK(cudaGetLastError());
  return Status::success();
}

Status residual_rmsnorm(const TileView& x, const void* residual, const void* weight, float eps,
                        void* out, DType dtype, cudaStream_t stream) {
  OVERLAPSIM_TRY(check_view(x, "residual_rmsnorm"));
  if (residual == nullptr || weight == nullptr || out == nullptr)
    return Status::failure("residual_rmsnorm: residual, weight and out are required");
  const Geometry g = geometry_of(x);
  const bool vectors = x.cols % 8 == 0 && aligned16(x.data) && aligned16(residual) &&
                       aligned16(weight) && aligned16(out);
  const unsigned rows = static_cast<unsigned>(x.rows);
  if (dtype == DType::BF16) {
    residual_rmsnorm_kernel<__nv_bfloat16><<<rows, kThreads, 0, stream>>>(
        static_cast<const __nv_bfloat16*>(x.data), g, static_cast<const __nv_bfloat16*>(residual),
        static_cast<const __nv_bfloat16*>(weight), eps, static_cast<__nv_bfloat16*>(out), vectors);
  } else {
    residual_rmsnorm_kernel<__half><<<rows, kThreads, 0, stream>>>(
        static_cast<const __half*>(x.data), g, static_cast<const __half*>(residual),
        static_cast<const __half*>(weight), eps, static_cast<__half*>(out), vectors);
  }
  CUDA_CHECK(cudaGetLastError());
  return Status::success();
}

}  // namespace overlapsim::kernels::tilewise
