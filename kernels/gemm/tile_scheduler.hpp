#pragma once
// The persistent tile scheduler's order, shared verbatim by the device (which tile a CTA
// computes next) and the host (which wave a tile lands in, for the tile-wise remap). C++17.
//
// Work item i (0 ≤ i < tiles_m·tiles_n) is computed by CTA i % num_ctas as its
// (i / num_ctas)-th tile, i.e. in wave i / num_ctas. Items map to tiles by a grouped
// raster: `group_m` consecutive tile-rows are walked column by column, so a wave's tiles
// reuse the same B columns and A rows while they are in L2.
#include <cstdint>

#include "kernels/harness/host_device.hpp"

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

// Tile-wise ReduceScatter / All-to-All: with row_blocks = B > 1 the raster walks
// *virtual* tile-rows and virtual row v is real row (v % B)·(tiles_m / B) + v / B, so
// consecutive items alternate between the B equal row blocks (one per rank) and every run
// of B items holds one tile of each block. Needs tiles_m % B == 0; B = 1 is the plain
// grouped raster above.
OVERLAPSIM_HD TileCoord tile_of_item_blocked(int32_t item, int32_t tiles_m, int32_t tiles_n,
                                             int32_t group_m, int32_t row_blocks) {
  TileCoord t = tile_of_item(item, tiles_m, tiles_n, group_m);
  if (row_blocks > 1)
    t.tile_m = (t.tile_m % row_blocks) * (tiles_m / row_blocks) + t.tile_m / row_blocks;
  return t;
}

// The tile-wise copy-engine transport (kernels/tilewise/copy_engine_layout.hpp): rank r owns tile
// rows [r·T, (r+1)·T), T = tiles_m / world, and visits the other ranks' rows first, its
// own last. With group_m dividing T the grouped raster never mixes two ranks' rows, so
// that order is the plain raster with the tile rows shifted cyclically by
// row_shift = ((r + 1) % world)·T: virtual row v is real row (v + row_shift) mod tiles_m.
// row_shift = 0 is the unshifted schedule (and composes with row_blocks, which the
// rotation does not use).
// The skewed slab order's unit k (of slabs × world units, each one sub-slab) as slab *s and
// position *q: units are visited by steps t = s + q, inside a step by increasing q, so the
// unit a ring hop waits for, (s, q − 1), lies a whole step earlier (about min(slabs, world)
// units) instead of one unit earlier, while slab s's own sub-slab (q = world − 1) is still
// complete at step s + world − 1, before the later slabs'.
OVERLAPSIM_HD void skewed_slab_unit(int32_t k, int32_t slabs, int32_t world, int32_t* s,
                                    int32_t* q) {
  int32_t before = 0;
  for (int32_t t = 0; t < slabs + world - 1; ++t) {
    const int32_t lo = t - slabs + 1 > 0 ? t - slabs + 1 : 0;
    const int32_t hi = t < world - 1 ? t : world - 1;
    if (k < before + hi - lo + 1) {
      *q = lo + (k - before);
      *s = t - *q;
      return;
    }
    before += hi - lo + 1;
  }
  *s = k / world;  // not reached for k < slabs · world
  *q = k % world;
}

// Slab order (row_period = P > 0, P | tiles_m): the rows form tiles_m / P slabs visited one
// after the other, and the shift rotates the rows inside each slab instead of across all rows
// (virtual row v is real row base + (v − base + row_shift) mod P, base = v − v mod P), so
// every rank works on the same slab at once, each starting with a different sub-slab.
// row_period = 0 (or tiles_m) is the rotation over all rows. skew_world = W > 0: the skewed
// slab order instead (skewed_slab_unit): the virtual rows form slabs·W units of P / W rows,
// unit k is visited as (slab s, position q) and holds sub-slab (q + row_shift / (P / W)) mod W
// of slab s.
OVERLAPSIM_HD TileCoord tile_of_item_scheduled(int32_t item, int32_t tiles_m, int32_t tiles_n,
                                               int32_t group_m, int32_t row_blocks,
                                               int32_t row_shift, int32_t row_period = 0,
                                               int32_t skew_world = 0) {
  TileCoord t = tile_of_item_blocked(item, tiles_m, tiles_n, group_m, row_blocks);
  if (row_period > 0 && row_period < tiles_m && skew_world > 0) {
    const int32_t rows = row_period / skew_world;  // one sub-slab
    const int32_t k = t.tile_m / rows;
    int32_t s = 0, q = 0;
    skewed_slab_unit(k, tiles_m / row_period, skew_world, &s, &q);
    t.tile_m = s * row_period + (q + row_shift / rows) % skew_world * rows + t.tile_m % rows;
    return t;
  }
  if (row_period > 0 && row_period < tiles_m) {
    const int32_t base = t.tile_m - t.tile_m % row_period;
    int32_t w = t.tile_m - base + row_shift;
    if (w >= row_period) w -= row_period;
    t.tile_m = base + w;
    return t;
  }
  t.tile_m += row_shift;
  if (t.tile_m >= tiles_m) t.tile_m -= tiles_m;
  return t;
}

// v3 (clusters of cluster_m CTAs along M, gemm_config.hpp): work item i belongs to cluster
// item i / cluster_m and is the (i % cluster_m)-th CTA's share of it. Cluster items walk
// the schedule above over tile rows of cluster_m (`group_m`, `row_shift` in tile rows,
// divisible by cluster_m); CTA r of the cluster takes real row cluster_m·row + r, so both
// CTAs of a pair share the tile column (and B tile) and stay inside one row block / part.
// cluster_m = 1 is tile_of_item_scheduled itself. Item i is still computed by CTA
// i % num_ctas (num_ctas a multiple of cluster_m), in wave i / num_ctas. row_period (slab
// order) is in tile rows too, divisible by cluster_m.
OVERLAPSIM_HD TileCoord tile_of_item_clustered(int32_t item, int32_t tiles_m, int32_t tiles_n,
                                               int32_t group_m, int32_t row_blocks,
                                               int32_t row_shift, int32_t cluster_m,
                                               int32_t row_period = 0, int32_t skew_world = 0) {
  if (cluster_m <= 1)
    return tile_of_item_scheduled(item, tiles_m, tiles_n, group_m, row_blocks, row_shift,
                                  row_period, skew_world);
  TileCoord t =
      tile_of_item_scheduled(item / cluster_m, tiles_m / cluster_m, tiles_n, group_m / cluster_m,
                             row_blocks, row_shift / cluster_m, row_period / cluster_m, skew_world);
  t.tile_m = t.tile_m * cluster_m + item % cluster_m;
  return t;
}

// Split last wave (SchedulerOptions::split_k_tail = S > 1). With T tiles on G persistent CTAs
// the last wave holds T mod G tiles (G when it is full): a partial wave leaves CTAs idle for a
// whole tile's time, and a tile-wise collective finds all of that wave's tiles complete only at
// the GEMM's end. The tail's tiles (items split_first .. T - 1 of the tile order) are each cut
// into S ranges of K, and each range is a work item of its own, so a tile's S parts are
// consecutive items (different CTAs of one sub-wave) and the tail runs as S·(T - split_first)
// items of 1/S of a tile each. Parts 0 .. S - 2 store their fp32 partial sums in a workspace
// and count them on the tile's counter; part S - 1 (the tile's finisher) waits for them, adds
// them in part order to its own and runs the epilogue for the whole tile, once. The tile order,
// and so every layout built on it, is unchanged; only the CTA and the time of a tail tile are.
// The K summation order of a split tile differs from the unsplit GEMM's (its result is within
// fp32 rounding of it, not bit-identical); split_k_tail = 1 keeps the one-item-per-tile order.

// The first tile item of the split tail: T - (T mod G), or T - G when the last wave is full;
// `num_tiles` (no split) when split ≤ 1, the GEMM has fewer tiles than CTAs' one wave, or K has
// fewer k-blocks than parts.
OVERLAPSIM_HD int32_t split_tail_first(int32_t num_tiles, int32_t num_ctas, int32_t split,
                                       int32_t k_blocks) {
  if (split <= 1 || num_ctas < 1 || k_blocks < split || num_tiles < 1) return num_tiles;
  const int32_t rest = num_tiles % num_ctas;
  const int32_t tail = rest > 0 ? rest : (num_tiles < num_ctas ? num_tiles : num_ctas);
  return num_tiles - tail;
}

// Work items of a GEMM with `num_tiles` tiles whose items from split_first on are split in
// `split` parts.
OVERLAPSIM_HD int32_t split_work_items(int32_t num_tiles, int32_t split_first, int32_t split) {
  return split <= 1 ? num_tiles : split_first + (num_tiles - split_first) * split;
}

struct WorkUnit {
  int32_t tile_item = 0;  // the tile's item in the (unsplit) tile order
  int32_t kb_begin = 0;   // k-blocks [kb_begin, kb_end) of the tile
  int32_t kb_end = 0;
  int32_t part = 0;   // 0 .. split - 1; 0 for an unsplit tile
  int32_t tail = -1;  // index of the tile in the split tail (its counter), −1 unsplit
  bool final = true;  // computes the tile's last part: runs its epilogue
};

// Work item → tile and K range. Part p of a split tile takes k-blocks
// [p·kb / S, (p + 1)·kb / S).
OVERLAPSIM_HD WorkUnit work_unit(int32_t item, int32_t k_blocks, int32_t split_first,
                                 int32_t split) {
  WorkUnit u;
  if (split <= 1 || item < split_first) {
    u.tile_item = item;
    u.kb_end = k_blocks;
    return u;
  }
  const int32_t rel = item - split_first;
  u.tail = rel / split;
  u.part = rel - u.tail * split;
  u.tile_item = split_first + u.tail;
  // 32-bit products: k_blocks < 2^25 (K < 2^31) and split ≤ 8.
  u.kb_begin = u.part * k_blocks / split;
  u.kb_end = (u.part + 1) * k_blocks / split;
  u.final = u.part == split - 1;
  return u;
}

}  // namespace overlapsim::kernels::gemm
