#include "kernels/tilewise/copy_engine_layout.hpp"

#include <algorithm>

#include "kernels/gemm/gemm_config.hpp"
#include "kernels/gemm/own_gemm.hpp"

namespace overlapsim::kernels::tilewise {

using gemm::GemmConfig;

const char* to_string(CopyEnginePhase2 mode) {
  switch (mode) {
    case CopyEnginePhase2::CopyEngine:
      return "copy_engine";
    case CopyEnginePhase2::Epilogue:
      return "epilogue";
    case CopyEnginePhase2::TailKernel:
      return "tail_kernel";
  }
  return "?";
}

std::optional<CopyEnginePhase2> parse_owner_phase2(const std::string& name) {
  for (CopyEnginePhase2 m : {CopyEnginePhase2::CopyEngine, CopyEnginePhase2::Epilogue, CopyEnginePhase2::TailKernel})
    if (name == to_string(m)) return m;
  return std::nullopt;
}

const char* to_string(CopyEngineRoute route) {
  return route == CopyEngineRoute::Ring ? "ring" : "direct";
}

std::optional<CopyEngineRoute> parse_copy_engine_route(const std::string& name) {
  for (CopyEngineRoute r : {CopyEngineRoute::Direct, CopyEngineRoute::Ring})
    if (name == to_string(r)) return r;
  return std::nullopt;
}

std::optional<std::string> route_error(CollectiveOp op, CopyEngineRoute route) {
  if (route == CopyEngineRoute::Ring && op != CollectiveOp::ReduceScatter &&
      op != CollectiveOp::AllReduce)
    return std::string("the ring route carries reductions only (reducescatter, allreduce), got ") +
           to_string(op);
  return std::nullopt;
}

std::optional<std::string> owner_shape_error(CollectiveOp op, std::int64_t m, std::int64_t n,
                                             int world) {
  if (m < 1 || n < 1) return std::string("m and n must be >= 1");
  if (world < 1) return std::string("world must be >= 1");
  if (op == CollectiveOp::AllGather)
    return std::string("allgather+gemm is not a tile-wise pair (the collective comes first)");
  if (m % (std::int64_t{GemmConfig::kTileM} * world) != 0)
    return "m = " + std::to_string(m) + " must be a multiple of 128 x " + std::to_string(world) +
           " ranks (whole tile rows in every rank's part)";
  return std::nullopt;
}

int owner_group_m(std::int32_t rows_per_part, int requested) {
  for (int g = std::max(1, std::min<int>(requested, rows_per_part)); g > 1; --g)
    if (rows_per_part % g == 0) return g;
  return 1;
}

std::int32_t owner_part_tiles(std::int64_t m, std::int64_t n, int world, int slabs) {
  return gemm::ceil_div_i32(m, GemmConfig::kTileM) / (world * std::max(1, slabs)) *
         gemm::ceil_div_i32(n, GemmConfig::kTileN);
}

std::optional<std::string> slabs_error(CollectiveOp op, std::int64_t m, int world, int slabs,
                                       CopyEngineRoute route) {
  if (slabs < 1) return "slabs = " + std::to_string(slabs) + " must be >= 1";
  if (slabs == 1) return std::nullopt;
  // A reduce-scatter's result must be the natural rows [r·M/n, (r+1)·M/n); the slabs' owner
  // map gives rank r one sub-slab of every slab instead. The direct route's receive buffer
  // is one slot a source for one part, not laid out like P.
  if (op != CollectiveOp::AllReduce || route != CopyEngineRoute::Ring || world < 2)
    return "slabs = " + std::to_string(slabs) +
           " need an allreduce on the ring route over >= 2 ranks, got " + to_string(op) +
           " on the " + to_string(route) + " route over " + std::to_string(world) + " rank(s)";
  if (m % (std::int64_t{GemmConfig::kTileM} * world * slabs) != 0)
    return "m = " + std::to_string(m) + " must be a multiple of 128 x " + std::to_string(world) +
           " ranks x " + std::to_string(slabs) + " slabs (whole tile rows in every sub-slab)";
  return std::nullopt;
}

std::optional<std::string> build_copy_engine_layout(CollectiveOp op, std::int64_t m, std::int64_t n,
                                                    int num_ctas, int group_m, int groups_per_part,
                                                    int world, int rank, CopyEngineLayout* plan,
                                                    CopyEngineRoute route, int slabs,
                                                    bool slab_skew) {
  if (auto e = owner_shape_error(op, m, n, world)) return e;
  if (auto e = route_error(op, route)) return e;
  if (auto e = slabs_error(op, m, world, slabs, route)) return e;
  if (rank < 0 || rank >= world) return std::string("rank must be in [0, world)");
  CopyEngineLayout p;
  p.op = op;
  p.route = route;
  p.world = world;
  p.rank = rank;
  p.tiles_m = gemm::ceil_div_i32(m, GemmConfig::kTileM);
  p.tiles_n = gemm::ceil_div_i32(n, GemmConfig::kTileN);
  p.slabs = slabs;
  p.slab_skew = slabs > 1 && slab_skew;
  p.rows_per_part = p.tiles_m / (world * slabs);
  p.part_tiles = owner_part_tiles(m, n, world, slabs);
  p.part_elems = m / (static_cast<std::int64_t>(world) * slabs) * n;
  p.own_begin_elems = static_cast<std::int64_t>(world - 1) * p.part_elems;
  p.group_m = owner_group_m(p.rows_per_part, group_m);
  const std::int32_t tiles = p.tiles_m * p.tiles_n;
  p.num_ctas = std::max(1, std::min(num_ctas, tiles));
  if (groups_per_part < 1 || groups_per_part > p.part_tiles)
    return "groups_per_part = " + std::to_string(groups_per_part) + " must be in 1.." +
           std::to_string(p.part_tiles) + " (the tiles of one part)";
  p.groups_per_part = groups_per_part;

  gemm::SchedulerOptions sched;
  sched.num_ctas = p.num_ctas;
  sched.group_m = p.group_m;
  sched.rotate_world = world;
  sched.rotate_rank = rank;
  sched.rotate_slabs = slabs;
  sched.skew_slabs = p.slab_skew;
  const std::vector<gemm::TileCoord> order = gemm::tile_order(m, n, sched);

  p.tile_offset_elems.assign(static_cast<std::size_t>(tiles), -1);
  p.tile_group.assign(static_cast<std::size_t>(tiles), -1);
  p.tile_arrival.assign(static_cast<std::size_t>(tiles), -1);
  // Own tiles signal only where phase 2 copies them out (allreduce with peers).
  const bool own_signalled = op == CollectiveOp::AllReduce && world > 1;
  for (int v = 0; v < p.units(); ++v) {
    // Visit v is unit (slab, q); its id u = slab·world + q places it.
    std::int32_t slab = v / world, q = v % world;
    if (p.slab_skew) gemm::skewed_slab_unit(v, slabs, world, &slab, &q);
    const int u = static_cast<int>(slab) * world + static_cast<int>(q);
    const bool own = q == world - 1;
    std::int64_t relative = 0;
    for (int j = 0; j < groups_per_part; ++j) {
      // Equal tile counts: part-relative items [P·j/G, P·(j+1)/G).
      const std::int32_t first =
          static_cast<std::int32_t>(static_cast<std::int64_t>(p.part_tiles) * j / groups_per_part);
      const std::int32_t last = static_cast<std::int32_t>(static_cast<std::int64_t>(p.part_tiles) *
                                                          (j + 1) / groups_per_part);
      CopyEngineGroup g;
      g.slab = slab;
      g.unit = u;
      g.visit = v;
      g.position = q;
      g.part = (rank + 1 + q) % world;
      g.index = j;
      g.tiles = last - first;
      g.end_item = v * p.part_tiles + last;
      g.relative_begin_elems = relative;
      g.begin_elems = u * p.part_elems + relative;
      for (std::int32_t rel_item = first; rel_item < last; ++rel_item) {
        const gemm::TileCoord t = order[static_cast<std::size_t>(v * p.part_tiles + rel_item)];
        if (t.tile_m / p.rows_per_part != slab * world + g.part)
          return "internal: item " + std::to_string(v * p.part_tiles + rel_item) +
                 " is not in part " + std::to_string(g.part) + " of slab " + std::to_string(slab);
        const std::size_t tile = static_cast<std::size_t>(t.tile_m) * p.tiles_n + t.tile_n;
        const std::int64_t cols = std::min<std::int64_t>(
            GemmConfig::kTileN, n - std::int64_t{t.tile_n} * GemmConfig::kTileN);
        p.tile_offset_elems[tile] = u * p.part_elems + relative;
        p.tile_group[tile] = (!own || own_signalled) ? u * groups_per_part + j : -1;
        if (route == CopyEngineRoute::Ring)
          p.tile_arrival[tile] = q >= 1 ? u * groups_per_part + j : -1;
        else
          p.tile_arrival[tile] = own ? j : -1;
        relative += std::int64_t{GemmConfig::kTileM} * cols;
      }
      g.elems = relative - g.relative_begin_elems;
      p.groups.push_back(g);
    }
    if (relative != p.part_elems) return std::string("internal: a part's tiles do not fill it");
  }

  // The result's tile grid and where each of its tiles lies.
  p.out_rows = op == CollectiveOp::ReduceScatter ? m / world : m;
  p.out_tiles_m = gemm::ceil_div_i32(p.out_rows, GemmConfig::kTileM);
  p.out_tile_offset_elems.assign(static_cast<std::size_t>(p.out_tiles_m) * p.tiles_n, -1);
  for (std::int32_t tm = 0; tm < p.tiles_m; ++tm) {
    const int part = tm / p.rows_per_part;
    const std::int32_t local_m = tm - part * p.rows_per_part;
    for (std::int32_t tn = 0; tn < p.tiles_n; ++tn) {
      const std::size_t tile = static_cast<std::size_t>(tm) * p.tiles_n + tn;
      if (op == CollectiveOp::AllReduce) {
        p.out_tile_offset_elems[tile] = p.tile_offset_elems[tile];
        continue;
      }
      // Reduce-scatter and all-to-all have one slab: part = the owner.
      const std::int64_t relative =
          p.tile_offset_elems[tile] -
          static_cast<std::int64_t>(p.position_of_part(part)) * p.part_elems;
      if (op == CollectiveOp::ReduceScatter) {
        if (part == rank)
          p.out_tile_offset_elems[static_cast<std::size_t>(local_m) * p.tiles_n + tn] =
              p.own_begin_elems + relative;
      } else if (part == rank) {
        // The same relative tile from every source s, in the receive buffer's slot s.
        for (int s = 0; s < world; ++s)
          p.out_tile_offset_elems[static_cast<std::size_t>(s * p.rows_per_part + local_m) *
                                      p.tiles_n +
                                  tn] = s * p.part_elems + relative;
      }
    }
  }
  *plan = std::move(p);
  return std::nullopt;
}

}  // namespace overlapsim::kernels::tilewise
