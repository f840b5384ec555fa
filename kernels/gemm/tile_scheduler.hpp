#pragma once
// The persistent tile scheduler's order, shared verbatim by the device (which tile a CTA
// computes next) and the host (which wave a tile lands in, for issue 5's remap). C++17.
//
// Work item i (0 ≤ i < tiles_m·tiles_n) is computed by CTA i % num_ctas as its
// (i / num_ctas)-th tile, i.e. in wave i / num_ctas. Items map to tiles by a grouped
// raster: `group_m` consecutive tile-rows are walked column by column, so a wave's tiles
// reuse the same B columns and A rows while they are in L2.
#include <cstdint>

#if defined(__CUDACC__)
#define OVERLAPSIM_HD __host__ __device__ __forceinline__
#else
#define OVERLAPSIM_HD inline
#endif

namespace overlapsim::kernels::gemm {

struct TileCoord {
  int32_t tile_m = 0;  // row-block index: rows [tile_m·kTileM, +kTileM)
  int32_t tile_n = 0;  // column-block index
};

OVERLAPSIM_HD int32_t ceil_div_i32(int64_t a, int64_t b) {
  return static_cast<int32_t>((a + b - 1) / b);
}

// Item index → tile coordinate. group_m ≥ 1.
OVERLAPSIM_HD TileCoord tile_of_item(int32_t item, int32_t tiles_m, int32_t tiles_n,
                                     int32_t group_m) {
  const int32_t items_per_group = group_m * tiles_n;
  const int32_t group = item / items_per_group;
  const int32_t first_m = group * group_m;
  const int32_t rows_in_group = (tiles_m - first_m) < group_m ? (tiles_m - first_m) : group_m;
  const int32_t in_group = item - group * items_per_group;
  TileCoord t;
  t.tile_m = first_m + in_group % rows_in_group;
  t.tile_n = in_group / rows_in_group;
  return t;
}

}  // namespace overlapsim::kernels::gemm
