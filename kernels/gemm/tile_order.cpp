// Host replicas of the device tile schedule (tile_scheduler.hpp) and the item-order remap.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "kernels/gemm/own_gemm.hpp"

namespace overlapsim::kernels::gemm {

std::vector<TileCoord> tile_order(int64_t m, int64_t n, int num_ctas, int group_m, int row_blocks) {
  // The item → tile map does not depend on num_ctas (item i's CTA and wave do), except that
  // an odd CTA count rules out pairs.
  SchedulerOptions sched;
  sched.num_ctas = num_ctas;
  sched.group_m = group_m;
  sched.row_blocks = row_blocks;
  return tile_order(m, n, sched);
}

int effective_cluster_m(int64_t m, int64_t n, const SchedulerOptions& sched) {
  (void)n;
  if (sched.cluster_m != 2 || sched.split_k_tail > 1) return 1;
  const int32_t tiles_m = ceil_div_i32(m, GemmConfig::kTileM);
  if (tiles_m % 2 != 0 || sched.row_blocks < 1 || (tiles_m / 2) % sched.row_blocks != 0) return 1;
  if (sched.group_m % 2 != 0 || sched.num_ctas % 2 != 0) return 1;
  if (sched.rotate_world > 1) {
    const int32_t parts = sched.rotate_world * std::max(1, sched.rotate_slabs);
    const int32_t per_part = tiles_m / parts;
    if (tiles_m % parts != 0 || per_part % sched.group_m != 0) return 1;
  }
  return 2;
}

int32_t rotation_row_shift(int64_t m, const SchedulerOptions& sched) {
  if (sched.rotate_world <= 1) return 0;
  const int32_t tiles_m = ceil_div_i32(m, GemmConfig::kTileM);
  const int32_t slabs = std::max(1, sched.rotate_slabs);
  return ((sched.rotate_rank + 1) % sched.rotate_world) * (tiles_m / slabs / sched.rotate_world);
}

int32_t rotation_row_period(int64_t m, const SchedulerOptions& sched) {
  if (sched.rotate_world <= 1 || sched.rotate_slabs <= 1) return 0;
  return ceil_div_i32(m, GemmConfig::kTileM) / sched.rotate_slabs;
}

std::vector<TileCoord> tile_order(int64_t m, int64_t n, const SchedulerOptions& sched) {
  const int32_t tiles_m = ceil_div_i32(m, GemmConfig::kTileM);
  const int32_t tiles_n = ceil_div_i32(n, GemmConfig::kTileN);
  const int32_t shift = rotation_row_shift(m, sched);
  const int32_t period = rotation_row_period(m, sched);
  const int32_t skew = period > 0 && sched.skew_slabs ? sched.rotate_world : 0;
  const int32_t cluster = effective_cluster_m(m, n, sched);
  std::vector<TileCoord> order(static_cast<size_t>(tiles_m) * tiles_n);
  for (int32_t item = 0; item < static_cast<int32_t>(order.size()); ++item)
    order[item] = tile_of_item_clustered(item, tiles_m, tiles_n, sched.group_m, sched.row_blocks,
                                         shift, cluster, period, skew);
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
