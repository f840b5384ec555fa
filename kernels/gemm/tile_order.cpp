// Host replicas of the device tile schedule (tile_scheduler.hpp) and the item-order remap.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "kernels/gemm/own_gemm.hpp"

namespace overlapsim::kernels::gemm {

std::vector<TileCoord> tile_order(int64_t m, int64_t n, int num_ctas, int group_m, int row_blocks) {
  (void)num_ctas;  // the item → tile map does not depend on it; item i's CTA and wave do
  const int32_t tiles_m = ceil_div_i32(m, GemmConfig::kTileM);
  const int32_t tiles_n = ceil_div_i32(n, GemmConfig::kTileN);
  std::vector<TileCoord> order(static_cast<size_t>(tiles_m) * tiles_n);
  for (int32_t item = 0; item < static_cast<int32_t>(order.size()); ++item)
    order[item] = tile_of_item_blocked(item, tiles_m, tiles_n, group_m, row_blocks);
  return order;
}

int32_t rotation_row_shift(int64_t m, const SchedulerOptions& sched) {
  if (sched.rotate_world <= 1) return 0;
  const int32_t tiles_m = ceil_div_i32(m, GemmConfig::kTileM);
  return ((sched.rotate_rank + 1) % sched.rotate_world) * (tiles_m / sched.rotate_world);
}

std::vector<TileCoord> tile_order(int64_t m, int64_t n, const SchedulerOptions& sched) {
  const int32_t tiles_m = ceil_div_i32(m, GemmConfig::kTileM);
  const int32_t tiles_n = ceil_div_i32(n, GemmConfig::kTileN);
  const int32_t shift = rotation_row_shift(m, sched);
  std::vector<TileCoord> order(static_cast<size_t>(tiles_m) * tiles_n);
  for (int32_t item = 0; item < static_cast<int32_t>(order.size()); ++item)
    order[item] =
        tile_of_item_scheduled(item, tiles_m, tiles_n, sched.group_m, sched.row_blocks, shift);
  return order;
}

std::vector<int64_t> compact_offsets_in_item_order(int64_t m, int64_t n, int num_ctas, int group_m,
                                                   int row_blocks) {
  const int32_t tiles_n = ceil_div_i32(n, GemmConfig::kTileN);
  const std::vector<TileCoord> order = tile_order(m, n, num_ctas, group_m, row_blocks);
  std::vector<int64_t> offsets(order.size());
  int64_t next = 0;
  for (const TileCoord& t : order) {
    const int64_t rows =
        std::min<int64_t>(GemmConfig::kTileM, m - int64_t{t.tile_m} * GemmConfig::kTileM);
    const int64_t cols =
        std::min<int64_t>(GemmConfig::kTileN, n - int64_t{t.tile_n} * GemmConfig::kTileN);
    offsets[static_cast<size_t>(t.tile_m) * tiles_n + t.tile_n] = next;
    next += rows * cols;
  }
  return offsets;
}

}  // namespace overlapsim::kernels::gemm
