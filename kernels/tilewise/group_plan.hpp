#pragma once
// Where the tile-wise design puts each GEMM tile and which NCCL call carries it.
//
// The persistent GEMM computes work item i in wave i / num_ctas (tile_scheduler.hpp), so
// the wave of every tile is known before the kernel runs. A partition cuts the waves into
// consecutive groups; group g's tiles are stored densely, one group after another, so that
// each group is one contiguous region of the output buffer P (M×N elements) that a single
// NCCL call can take once the group's counter reaches its tile count.
//
// Layout of P and of the receive buffer R, per collective (world n, this rank r):
//   allreduce     row_blocks = 1. Group g's region holds its tiles in item order, each tile
//                 a dense rows×cols block (row stride = its valid columns). One in-place
//                 ncclAllReduce per region; the result stays in P (R is P).
//   reducescatter row_blocks = n: the scheduler alternates the n row blocks (one per rank,
//                 M/n rows each; tile_of_item_blocked), so every group holds the same
//                 number of tiles of each block. Group g's region is [n][block_elems_g]:
//                 block p's tiles in item order. One ncclReduceScatter per group, recvcount
//                 block_elems_g, into R at recv_begin_g; R (M/n × N elements) is thus the
//                 concatenation over groups of rank r's tiles in item order.
//   alltoall      P as for reducescatter; per group one grouped ncclSend/ncclRecv: block p
//                 goes to rank p, and the block from rank s lands at R + recv_begin_g +
//                 s·block_elems_g (R is M×N: per group [source][block_elems_g]).
// out_tile_offset_elems maps the natural output's tile grid (tile rows of the result:
// M rows for allreduce/alltoall, M/n for reducescatter; alltoall's row s·M/n + j came from
// rank s) to the dense block in R; unpermute.hpp restores the natural layout with it.
// reducescatter and alltoall need M % (128·n) == 0 (whole tiles per rank block); N and K
// are free. C++17, host only.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kernels/collectives/nccl_collectives.hpp"
#include "kernels/gemm/own_gemm.hpp"

namespace overlapsim::kernels::tilewise {

struct TileGrid {
  std::int64_t m = 0;
  std::int64_t n = 0;
  int num_ctas = 0;    // persistent CTAs of the GEMM (SMs minus the carve-out)
  int group_m = 8;     // grouped raster (tile_scheduler.hpp)
  int row_blocks = 1;  // 1 for allreduce, the world size otherwise
  int cluster_m = 1;   // the GEMM's effective cluster (gemm::effective_cluster_m)
  std::int32_t tiles_m = 0;
  std::int32_t tiles_n = 0;

  std::int32_t tiles() const { return tiles_m * tiles_n; }
  std::int32_t waves() const { return (tiles() + num_ctas - 1) / num_ctas; }
};

// Fills tiles_m/tiles_n and caps num_ctas at the tile count (as the GEMM does); the raster's
// group_m is rounded up to a multiple of row_blocks so that every raster group alternates
// the blocks evenly.
TileGrid make_tile_grid(std::int64_t m, std::int64_t n, int num_ctas, int group_m, int row_blocks);

// The GEMM's scheduler options for this grid (the default cluster_m, whose fallback rule
// fills grid.cluster_m): tile_order() of them is the order the GEMM runs.
gemm::SchedulerOptions scheduler_options(const TileGrid& grid);

// Why this collective cannot run tile-wise on this shape, or nullopt.
std::optional<std::string> shape_error(CollectiveOp op, std::int64_t m, std::int64_t n, int world);

// Waves per group, e.g. {1, 2, 4, 8}. Valid when every entry is >= 1 and they sum to
// grid.waves(). "1+2+4+8" is the text form used in logs and the tuning cache.
std::optional<std::string> partition_error(const TileGrid& grid, const std::vector<int>& waves);
std::string partition_string(const std::vector<int>& waves);
std::optional<std::vector<int>> parse_partition(const std::string& text);

// One past the last work item of each group: waves·num_ctas, capped at the tile count and
// rounded to a multiple of row_blocks (so groups stay balanced across the blocks).
std::vector<std::int32_t> group_end_items(const TileGrid& grid, const std::vector<int>& waves);

struct RemapPlan {
  CollectiveOp op = CollectiveOp::AllReduce;
  int world = 1;
  int rank = 0;
  // GEMM side.
  std::vector<std::int64_t> tile_offset_elems;  // [tiles] dense block of each tile in P
  std::vector<std::int32_t> tile_group;         // [tiles]
  std::vector<std::int32_t> group_tiles;        // [groups] tiles that complete group g
  std::vector<std::int64_t> group_begin_elems;  // [groups] start of group g's region in P
  std::vector<std::int64_t> group_block_elems;  // [groups] elements per row block
  // Receive side.
  std::vector<std::int64_t> recv_begin_elems;  // [groups] where group g lands in R
  std::int64_t out_rows = 0;                   // rows of the natural result
  std::int32_t out_tiles_m = 0;
  std::vector<std::int64_t> out_tile_offset_elems;  // [out_tiles_m·tiles_n] block in R
  std::int64_t recv_elems = 0;                      // size of R

  int groups() const { return static_cast<int>(group_tiles.size()); }
};

// Fails (message) when the partition is invalid or a group is unbalanced across blocks.
std::optional<std::string> build_remap(CollectiveOp op, const TileGrid& grid,
                                       const std::vector<int>& waves, int world, int rank,
                                       RemapPlan* plan);

}  // namespace overlapsim::kernels::tilewise
