#pragma once
// Back from the tile-wise layout (group_plan.hpp) to the natural row-major one.
//   unpermute          a copy kernel: every natural tile (tile row, tile column) is read
//                      from its dense block and written to its place in the M×N result.
//   residual_rmsnorm   the next op reading through the remap table (fused), or through the
//                      natural layout (offsets == nullptr, the baseline):
//                        h = round(x + residual);  out = round(h · rsqrt(mean(h²) + eps) · w)
//                      per row. The fused and natural paths map threads to columns the same
//                      way and reduce in the same order, so they agree bit for bit.
// A view's row-major geometry is rows × cols; tile (tm, tn) of a permuted view is a dense
// valid_rows × valid_cols block at data + tile_offset_elems[tm·tiles_n + tn] (128×256
// tiles, gemm_config.hpp). C++17.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/common/status.hpp"
#include "kernels/harness/dtype.hpp"

namespace overlapsim::kernels::tilewise {

struct TileView {
  const void* data = nullptr;
  const std::int64_t* tile_offset_elems = nullptr;  // device; nullptr = natural layout
  std::int64_t rows = 0;
  std::int64_t cols = 0;
};

Status preload_unpermute_kernels();

Status unpermute(const TileView& src, void* natural, DType dtype, cudaStream_t stream);

// out (rows × cols, natural) = RMSNorm(x + residual) · weight; residual natural rows × cols,
// weight [cols].
Status residual_rmsnorm(const TileView& x, const void* residual, const void* weight, float eps,
                        void* out, DType dtype, cudaStream_t stream);

}  // namespace overlapsim::kernels::tilewise
