#pragma once
// The copy-engine transport's ring route on `world` > 2 symmetric ranks, in closed form
// (docs/kernels/design.md, "The ring route and row chunks"). The GEMM visits the parts in
// rotated order; the part at position q (0 .. n - 1) was computed by the next rank at q - 1,
// so each rank passes the running sum on instead of pushing every partial to its owner.
// Parts are cut into groups_per_part groups; the call may be cut into row_chunks calls of
// m / c rows each, back to back on the same two streams.
//
// Per row chunk i (tiles_c = tiles / c of them, waves of ctas tiles, wave_s = gemm_s /
// ceil(tiles / ctas) from the whole GEMM, so a chunk pays its own partial last wave):
//   GEMM, group (q, j) in visiting order, W its unstalled wave end from the chunk's start S_i:
//     q = 0:   F = F_prev + (W - W_prev)
//     q >= 1:  F = max(F_prev + (W - W_prev), D(q, j))    (a tile waits for the running sum;
//              the one-peer epilogue hides the add behind the next tile, so no reduce term)
//   ring copy of (q, j), q < n - 1, on the comm stream C (one stream for all chunks):
//     C = max(F, C) + wait_s + copy_s(b_g) + copy_ops_s,  and D(q + 1, j) = C (symmetry:
//     the next rank sends its (q, j) when this rank sends its own)
//   S_{i+1} = F of the chunk's last group (the compute stream goes on).
// All-reduce phase 2, own group j (q = n - 1) reduced at F: its bytes go to the n - 1 peers,
//   copy engines:  X = wait_s + (n - 1) (copy_s(b_g) k + copy_ops_s), k = 1 +
//                  phase2_contention (n - 2), either on the comm stream
//                  (C = max(F, C) + X) or, phase2_own_streams, on one stream a peer, then on a
//                  clock P of their own (P = max(F, P) + X: the peers' copies share the
//                  rank's links, so their bytes take no less than one after the other);
//   tail kernel:   the last chunk's last own group (every own group with tail_whole_part)
//                  by a kernel behind the GEMM on the compute stream: it starts at
//                  max(F_last, the phase-2 copies still running) (it shares their links)
//                  and takes tail_s(own bytes it carries), the exchange with every peer at
//                  once measured at this world size; other chunks' own groups go by copy
//                  engines.
// Slab order (all-reduce, slabs S > 1, one call): the same GEMM visits S slabs of rows one
//   after the other, each cut into n sub-slabs (units (s, q), groups_per_part groups each);
//   the waves run on across slabs (W from the call's start, one partial last wave), the ring's
//   hops and phase 2 are per slab, D(s, q + 1, j) = C of (s, q, j), so slab s's phase 2
//   runs under slab s + 1's GEMM; the tail kernel carries the last slab's last own group (or
//   its whole own sub-slab). Skewed (slab_skew): units visited by steps t = s + q, inside a
//   step by increasing q; the comm stream issues them in that order.
// End: the last of F, C, P and the tail. Reduce-scatter: no phase 2.
// Inputs are what the kernels' tuner measures (copy curve, stream operations per copy, the
// GEMM with its signals, the tail kernel's curve) or the simulator's profile rates. C++17.
#include <vector>

#include "sim/tilewise_plan/comm_curve.hpp"
#include "sim/tilewise_plan/copy_engine.hpp"

namespace overlapsim::tilewise_plan {

struct RingProblem {
  Collective op = Collective::ReduceScatter;  // ReduceScatter or AllReduce
  int world = 4;
  int groups_per_part = 1;
  int row_chunks = 1;
  double tiles = 0;   // the whole GEMM's output tiles
  int ctas = 0;       // persistent CTAs
  double gemm_s = 0;  // the whole GEMM with its signals on `ctas` CTAs
  double bytes = 0;   // the whole output (every part), what the ring's groups are cut from
  TimeOfBytes copy_s;      // one peer copy
  double copy_ops_s = 0;   // per copy: its flag write and the counter's wait and reset
  double wait_s = 0;       // per group on a stream, besides copy_ops_s
  // Phase 2's copies take copy_s x (1 + this x (n - 2)): every rank copies to every peer at
  // once, so a copy engine's link is shared beyond what one copy alone measures (the
  // copy-engine planner's phase2_contention, same meaning).
  double phase2_contention = 0;
  Phase2 phase2 = Phase2::CopyEngine;  // CopyEngine or TailKernel
  TimeOfBytes tail_s;      // TailKernel: the kernel's exchange of b bytes with every peer
  bool tail_whole_part = false;
  bool phase2_own_streams = false;
  int slabs = 1;           // the slab order's slab count (1: none); not with row_chunks > 1
  bool slab_skew = false;  // the skewed slab order
};

struct RingPlan {
  double gemm_end_s = 0;   // the compute stream's last group (stalls included)
  double comm_end_s = 0;   // the comm stream's last copy
  double phase2_end_s = 0; // the phase-2 copies on their own streams and the tail kernel
  double end_s = 0;
  double stall_s = 0;      // GEMM time lost waiting for running sums
};

RingPlan plan_ring(const RingProblem& problem);

}  // namespace overlapsim::tilewise_plan
