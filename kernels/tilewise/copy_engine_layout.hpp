#pragma once
// The tile-wise design's copy-engine transport ("transport: copy_engine"): where
// every GEMM tile goes, which group carries it, and where it lands. Host only, C++17.
//
// Ownership: with world n, rank r owns part r of the output = tile rows [r·R, (r+1)·R),
// R = tiles_m / n (its ReduceScatter shard, its 1/n share of an AllReduce, the rows an
// All-to-All sends to it). The GEMM visits parts in the rotated order r+1, r+2, ..., r
// (SchedulerOptions::rotate_world; part position q = 0..n−1 is part (r + 1 + q) mod n), so
// its own part comes last. group_m divides R, so inside a part the order is the plain
// grouped raster of an R × tiles_n grid: the same part-relative order on every rank.
//
// Layout of P (the GEMM's output, M×N elements): part position q at q·part_elems, each
// part's tiles dense (rows × cols blocks, row stride = the tile's valid columns) in
// part-relative item order, so a tile's offset inside its part (its "relative offset") is
// the same on every rank. Each part is cut into groups_per_part groups of consecutive
// items (equal tile counts, rounded); group j of every part covers the same tiles.
//
// Transport, per peer part q < n−1 (destination d = part(q)), group j: wait for the
// group's tile counter, copy its region to d's receive buffer at slot r (R_d[r·part_elems
// + relative offset]) with cudaMemcpyAsync on a peer pointer, then write d's flag
// arrived[r][j] = the call's epoch. No SM is used.
// Own part (position n−1), per collective:
//   reducescatter  the epilogue waits for arrived[s][j] (all s ≠ r) and stores
//                  own + Σ peers at P[own_begin + relative offset]. Result: the own part of
//                  P, out_rows = M/n, dense tiles (out_tile_offset_elems, base P).
//   allreduce      as reducescatter, then the own groups are signalled and copied to every
//                  peer d's P at d's position of part r, followed by d's flag done[r][j].
//                  Result: all of P (tile offsets = tile_offset_elems), once every peer's
//                  done flags reached the epoch (the comm stream waits for them).
//   alltoall       no reduction: the own part is stored in the receive buffer's slot r and
//                  peers' parts arrive in their slots. Result: the receive buffer,
//                  [source s][part_elems], row s·M/n + i of the natural result is row i of
//                  the rows rank s computed for r (the layout group_plan.hpp documents);
//                  the comm stream waits for every arrived flag.
// Receive buffers are double-buffered by call parity (copy_engine_design.hpp says why).
//
// Route (CopyEngineRoute) of a reduction's partial tiles:
//   direct  as above: every rank pushes its partial of part d straight to d, whose epilogue
//           sums all n − 1 peers' terms on its own tiles (with more than 2 ranks the
//           epilogue's general path: own store, then each peer's term added in place).
//   ring    a ring reduce-scatter in the GEMM's own order: rank r at position q computes
//           part (r + 1 + q) mod n, which rank r + 1 computed at position q − 1. So every
//           tile at position q ≥ 1 waits for the partial sum rank r + 1 sent for it, adds
//           it in the epilogue (the one-peer reduction: own + incoming, rounded once), and
//           its group, once signalled, goes on to rank r − 1 (its position q + 1), until
//           the owner (position n − 1) stores the full sum. The receive buffer is laid out
//           like P: the incoming partial of the tile at P offset o is at recv[o], and the
//           arrival flags are indexed like the counters (position·G + j). Every hop reads
//           one peer tile, so the epilogue's reduction work is spread over the last n − 1
//           parts instead of all landing on the own part. Sum order for part d: rank d − 1's
//           value, then + rank d − 2's, ..., + rank d's, rounded to the output type after
//           each addition (like a ring's per-hop rounding; not NCCL's order beyond 2 ranks).
//           ReduceScatter and AllReduce only; with 2 ranks it is the direct route.
// Slabs (S > 1; all-reduce, ring route): the rows form S slabs of M/S rows visited one after
// the other by every rank, each slab cut into n sub-slabs, sub-slab d of every slab owned by
// rank d (SchedulerOptions::rotate_slabs). Inside a slab the GEMM visits the sub-slabs in the
// rotated order above and the ring runs as above, so a slab's sub-slabs are reduced at the
// slab's end and their phase 2 runs under the next slab's GEMM; only the last slab's is left
// after the GEMM. A "part" is then one sub-slab (R = tiles_m / (n·S) tile rows) and the
// layout is the one above with n·S units u = s·n + q in visiting order (slab s, position q):
// unit u at u·part_elems in P (and in the receive buffer, laid out like P), counters and
// arrival flags u·G + j, the owner's done flags [source rank][s·G + j]. The sum order of a
// sub-slab is the ring's: rank d − 1's value, + rank d − 2's, ..., + rank d's.
// Skewed slabs (slab_skew): the same units visited by steps s + q instead (tile_scheduler.hpp
// skewed_slab_unit), so a hop's partial comes from a step earlier; units keep their ids
// u = s·n + q (place in P, counters, flags), and `groups` lists them in visiting order.
// Needs M % (128·n·S) == 0 and group_m | R (the group_m used is the largest divisor of R not
// above the requested one).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kernels/collectives/nccl_collectives.hpp"
#include "kernels/tilewise/group_plan.hpp"

namespace overlapsim::kernels::tilewise {

// How an all-reduce's reduced own groups reach the peers (phase 2; CopyEngineOptions::phase2):
//   copy_engine  every group by cudaMemcpyAsync on the comm stream once its counter is seen;
//   epilogue     the epilogue stores each reduced tile into the peer as well (2 ranks, full
//                tiles); the comm stream only writes the done flags;
//   tail_kernel  as copy_engine, except the last own group: a kernel on the compute stream
//                right behind the GEMM copies it with every SM and exchanges per-slice flags
//                (tail_exchange.hpp).
enum class CopyEnginePhase2 { CopyEngine, Epilogue, TailKernel };

// How a reduction's partial tiles reach their owner (see the layout comment above).
enum class CopyEngineRoute { Direct, Ring };
const char* to_string(CopyEngineRoute route);  // "direct", "ring"
std::optional<CopyEngineRoute> parse_copy_engine_route(const std::string& name);
const char* to_string(CopyEnginePhase2 mode);  // "copy_engine", "epilogue", "tail_kernel"
std::optional<CopyEnginePhase2> parse_owner_phase2(const std::string& name);

struct CopyEngineGroup {
  int slab = 0;                           // the slab s (0 without slabs)
  int unit = 0;                           // s·world + q: counter and flag block, place in P
  int visit = 0;                          // the unit's place in the GEMM's order (= unit unskewed)
  int position = 0;                       // part position q in its slab (0 = first computed)
  int part = 0;                           // the rank owning the part: (rank + 1 + q) mod world
  int index = 0;                          // j within the part
  std::int32_t tiles = 0;                 // tiles that complete the group
  std::int32_t end_item = 0;              // one past the group's last work item
  std::int64_t begin_elems = 0;           // in P
  std::int64_t relative_begin_elems = 0;  // inside the part
  std::int64_t elems = 0;
};

struct CopyEngineLayout {
  CollectiveOp op = CollectiveOp::AllReduce;
  CopyEngineRoute route = CopyEngineRoute::Direct;
  int world = 1;
  int rank = 0;
  int groups_per_part = 1;
  int slabs = 1;  // slab order: rows in `slabs` slabs, each cut into world sub-slabs (parts)
  bool slab_skew = false;  // the skewed slab order (units visited by steps slab + position)
  int group_m = 8;  // the raster's group_m actually used (divides rows_per_part)
  int num_ctas = 0;
  std::int32_t tiles_m = 0;
  std::int32_t tiles_n = 0;
  std::int32_t rows_per_part = 0;  // tile rows (of one sub-slab with slabs)
  std::int32_t part_tiles = 0;
  std::int64_t part_elems = 0;
  std::int64_t own_begin_elems = 0;  // (world − 1)·part_elems (the first slab's own part)
  // GEMM side, indexed by tile = tile_m·tiles_n + tile_n.
  std::vector<std::int64_t> tile_offset_elems;
  std::vector<std::int32_t> tile_group;    // counter index (position·G + j), −1: none
  // The arrival flag a tile waits for: direct, j for own-part tiles; ring, position·G + j
  // for tiles at positions >= 1; −1 elsewhere.
  std::vector<std::int32_t> tile_arrival;
  // Every group of every part in item order; counters exist for all of them.
  std::vector<CopyEngineGroup> groups;
  // Result: rows, its tile grid and each tile's dense block (base: P, or the receive
  // buffer for alltoall).
  std::int64_t out_rows = 0;
  std::int32_t out_tiles_m = 0;
  std::vector<std::int64_t> out_tile_offset_elems;

  int units() const { return world * slabs; }
  int counters() const { return units() * groups_per_part; }
  // All-reduce done flags at the owner: block of `source` rank, own group j of slab s.
  int done_index(int source, int slab, int j) const {
    return (source * slabs + slab) * groups_per_part + j;
  }
  // Ring route: the rank that receives this rank's partial sums (it computes each of our
  // parts one position later).
  int ring_next() const { return (rank + world - 1) % world; }
  int position_of_part(int part) const { return ((part - rank - 1) % world + world) % world; }
  // Where part `part` (of slab `slab`) starts in rank `on_rank`'s P.
  std::int64_t part_begin_on(int on_rank, int part, int slab = 0) const {
    return (static_cast<std::int64_t>(slab) * world +
            ((part - on_rank - 1) % world + world) % world) *
           part_elems;
  }
};

// Why the copy-engine transport cannot run this shape, or nullopt.
std::optional<std::string> owner_shape_error(CollectiveOp op, std::int64_t m, std::int64_t n,
                                             int world);
// Why this route cannot carry this collective, or nullopt.
std::optional<std::string> route_error(CollectiveOp op, CopyEngineRoute route);

// The tiles of one rank's part (CopyEngineLayout::part_tiles), without building the plan: the
// most groups a part can be cut into.
std::int32_t owner_part_tiles(std::int64_t m, std::int64_t n, int world, int slabs = 1);
// Why `slabs` slabs cannot carry this collective and shape under this route, or nullopt.
std::optional<std::string> slabs_error(CollectiveOp op, std::int64_t m, int world, int slabs,
                                       CopyEngineRoute route);

// The largest divisor of rows_per_part that is <= requested (>= 1).
int owner_group_m(std::int32_t rows_per_part, int requested);

std::optional<std::string> build_copy_engine_layout(CollectiveOp op, std::int64_t m, std::int64_t n,
                                                    int num_ctas, int group_m, int groups_per_part,
                                                    int world, int rank, CopyEngineLayout* plan,
                                                    CopyEngineRoute route = CopyEngineRoute::Direct,
                                                    int slabs = 1, bool slab_skew = false);

}  // namespace overlapsim::kernels::tilewise
