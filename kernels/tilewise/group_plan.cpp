#include "kernels/tilewise/group_plan.hpp"

#include <algorithm>
#include <cstdlib>

#include "kernels/gemm/gemm_config.hpp"
#include "kernels/gemm/own_gemm.hpp"

namespace overlapsim::kernels::tilewise {
namespace {

using gemm::GemmConfig;

std::int64_t tile_rows(const TileGrid& g, std::int32_t tile_m) {
  return std::min<std::int64_t>(GemmConfig::kTileM,
                                g.m - std::int64_t{tile_m} * GemmConfig::kTileM);
}
std::int64_t tile_cols(const TileGrid& g, std::int32_t tile_n) {
  return std::min<std::int64_t>(GemmConfig::kTileN,
                                g.n - std::int64_t{tile_n} * GemmConfig::kTileN);
}

}  // namespace

gemm::SchedulerOptions scheduler_options(const TileGrid& grid) {
  gemm::SchedulerOptions sched;
  sched.num_ctas = grid.num_ctas;
  sched.group_m = grid.group_m;
  sched.row_blocks = grid.row_blocks;
  return sched;
}

TileGrid make_tile_grid(std::int64_t m, std::int64_t n, int num_ctas, int group_m, int row_blocks) {
  TileGrid g;
  g.m = m;
  g.n = n;
  g.row_blocks = std::max(1, row_blocks);
  g.group_m = (std::max(1, group_m) + g.row_blocks - 1) / g.row_blocks * g.row_blocks;
  g.tiles_m = gemm::ceil_div_i32(m, GemmConfig::kTileM);
  g.tiles_n = gemm::ceil_div_i32(n, GemmConfig::kTileN);
  g.num_ctas = std::max(1, std::min(num_ctas, g.tiles()));
  g.cluster_m = gemm::effective_cluster_m(m, n, scheduler_options(g));
  return g;
}

std::optional<std::string> shape_error(CollectiveOp op, std::int64_t m, std::int64_t n, int world) {
  if (m < 1 || n < 1) return std::string("m and n must be >= 1");
  if (op == CollectiveOp::AllGather)
    return std::string("allgather+gemm is not a tile-wise pair (the collective comes first)");
  if (op != CollectiveOp::AllReduce && m % (std::int64_t{GemmConfig::kTileM} * world) != 0)
    return "m = " + std::to_string(m) + " must be a multiple of 128 x " + std::to_string(world) +
           " ranks (whole tiles in every rank's row block)";
  return std::nullopt;
}

std::optional<std::string> partition_error(const TileGrid& grid, const std::vector<int>& waves) {
  if (waves.empty()) return std::string("a partition needs at least one group");
  long sum = 0;
  for (int w : waves) {
    if (w < 1) return std::string("every group needs >= 1 wave");
    sum += w;
  }
  if (sum != grid.waves())
    return "groups cover " + std::to_string(sum) + " waves, the GEMM has " +
           std::to_string(grid.waves());
  return std::nullopt;
}

std::string partition_string(const std::vector<int>& waves) {
  std::string s;
  for (int w : waves) {
    if (!s.empty()) s += '+';
    s += std::to_string(w);
  }
  return s;
}

std::optional<std::vector<int>> parse_partition(const std::string& text) {
  std::vector<int> waves;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    const std::size_t plus = text.find('+', pos);
    const std::string part =
        text.substr(pos, plus == std::string::npos ? std::string::npos : plus - pos);
    if (part.empty() || part.find_first_not_of("0123456789") != std::string::npos ||
        part.size() > 6)
      return std::nullopt;
    waves.push_back(std::atoi(part.c_str()));
    if (waves.back() < 1) return std::nullopt;
    if (plus == std::string::npos) break;
    pos = plus + 1;
  }
  return waves;
}

std::vector<std::int32_t> group_end_items(const TileGrid& grid, const std::vector<int>& waves) {
  std::vector<std::int32_t> ends;
  std::int64_t cumulative = 0;
  std::int32_t previous = 0;
  for (int w : waves) {
    cumulative += w;
    std::int64_t end = std::min<std::int64_t>(cumulative * grid.num_ctas, grid.tiles());
    // Whole runs of row_blocks cluster items, so every group holds as many tiles of each
    // row block as of any other (clusters keep a pair of tile rows in one block).
    const std::int64_t run = std::int64_t{grid.row_blocks} * grid.cluster_m;
    end = (end + run / 2) / run * run;
    end = std::min<std::int64_t>(std::max<std::int64_t>(end, previous), grid.tiles());
    ends.push_back(static_cast<std::int32_t>(end));
    previous = static_cast<std::int32_t>(end);
  }
  ends.back() = grid.tiles();
  return ends;
}

std::optional<std::string> build_remap(CollectiveOp op, const TileGrid& grid,
                                       const std::vector<int>& waves, int world, int rank,
                                       RemapPlan* plan) {
  if (auto e = shape_error(op, grid.m, grid.n, world)) return e;
  if (auto e = partition_error(grid, waves)) return e;
  const int blocks = op == CollectiveOp::AllReduce ? 1 : world;
  if (grid.row_blocks != blocks)
    return "row_blocks = " + std::to_string(grid.row_blocks) + ", the collective needs " +
           std::to_string(blocks);
  const std::vector<gemm::TileCoord> order =
      gemm::tile_order(grid.m, grid.n, scheduler_options(grid));
  const std::vector<std::int32_t> ends = group_end_items(grid, waves);
  const std::int32_t tiles_per_block = grid.tiles_m / blocks;

  RemapPlan p;
  p.op = op;
  p.world = world;
  p.rank = rank;
  const auto tiles = static_cast<std::size_t>(grid.tiles());
  p.tile_offset_elems.assign(tiles, -1);
  p.tile_group.assign(tiles, -1);
  p.out_rows = op == CollectiveOp::ReduceScatter ? grid.m / world : grid.m;
  p.out_tiles_m = gemm::ceil_div_i32(p.out_rows, GemmConfig::kTileM);
  p.out_tile_offset_elems.assign(static_cast<std::size_t>(p.out_tiles_m) * grid.tiles_n, -1);

  std::int64_t region_begin = 0;  // in P
  std::int64_t recv_begin = 0;    // in R
  std::int32_t first = 0;
  for (std::size_t g = 0; g < ends.size(); ++g) {
    const std::int32_t last = ends[g];
    // Elements per block and each tile's place inside its block.
    std::vector<std::int64_t> block_fill(static_cast<std::size_t>(blocks), 0);
    std::vector<std::int64_t> within(static_cast<std::size_t>(last - first), 0);
    for (std::int32_t item = first; item < last; ++item) {
      const gemm::TileCoord t = order[static_cast<std::size_t>(item)];
      const int block = t.tile_m / tiles_per_block;
      within[static_cast<std::size_t>(item - first)] = block_fill[static_cast<std::size_t>(block)];
      block_fill[static_cast<std::size_t>(block)] +=
          tile_rows(grid, t.tile_m) * tile_cols(grid, t.tile_n);
    }
    for (int b = 1; b < blocks; ++b)
      if (block_fill[static_cast<std::size_t>(b)] != block_fill[0])
        return "group " + std::to_string(g) + " holds " + std::to_string(block_fill[0]) +
               " elements of block 0 but " +
               std::to_string(block_fill[static_cast<std::size_t>(b)]) + " of block " +
               std::to_string(b);
    const std::int64_t block_elems = block_fill[0];
    for (std::int32_t item = first; item < last; ++item) {
      const gemm::TileCoord t = order[static_cast<std::size_t>(item)];
      const std::size_t tile = static_cast<std::size_t>(t.tile_m) * grid.tiles_n + t.tile_n;
      const int block = t.tile_m / tiles_per_block;
      const std::int64_t pos = within[static_cast<std::size_t>(item - first)];
      p.tile_offset_elems[tile] = region_begin + block * block_elems + pos;
      p.tile_group[tile] = static_cast<std::int32_t>(g);
      // Where the collective leaves this tile's data on this rank (natural tile grid).
      const std::int32_t local_m = t.tile_m - block * tiles_per_block;
      if (op == CollectiveOp::AllReduce) {
        p.out_tile_offset_elems[tile] = p.tile_offset_elems[tile];
      } else if (op == CollectiveOp::ReduceScatter) {
        if (block == rank)
          p.out_tile_offset_elems[static_cast<std::size_t>(local_m) * grid.tiles_n + t.tile_n] =
              recv_begin + pos;
      } else if (block == rank) {  // alltoall: the same tile from every source s
        for (int s = 0; s < world; ++s)
          p.out_tile_offset_elems[static_cast<std::size_t>(s * tiles_per_block + local_m) *
                                      grid.tiles_n +
                                  t.tile_n] = recv_begin + s * block_elems + pos;
      }
    }
    p.group_tiles.push_back(last - first);
    p.group_begin_elems.push_back(region_begin);
    p.group_block_elems.push_back(block_elems);
    p.recv_begin_elems.push_back(op == CollectiveOp::AllReduce ? region_begin : recv_begin);
    region_begin += blocks * block_elems;
    recv_begin += op == CollectiveOp::ReduceScatter ? block_elems
                  : op == CollectiveOp::AllToAll    ? world * block_elems
                                                    : blocks * block_elems;
    first = last;
  }
  p.recv_elems = recv_begin;
  *plan = std::move(p);
  return std::nullopt;
}

}  // namespace overlapsim::kernels::tilewise
