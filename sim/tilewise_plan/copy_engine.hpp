#pragma once
// The tile-wise design's copy-engine transport on `world` symmetric ranks, in closed form.
// The output is cut into world parts of groups_per_part groups; the GEMM (gemm_s on `ctas`
// CTAs, waves of tiles / ctas) computes the peers' parts first and finishes a group at the
// end of the wave holding its last tile, A_k = ceil(end_tile / ctas) x wave_s. Then
//   peer groups, in order:  E = max(A_k, E) + wait_s + X(b_k),  X(b) = copy_s(b) + copy_ops_s
//                           (one copy stream); own group j's partials arrive at D_j = the
//                           latest E of a peer group j (symmetry: every rank's part r group j
//                           is sent when this rank's is);
//   own group j, reducing (allreduce, reducescatter; world > 1):
//                           F_j = max(F_{j-1} + (A_j - A_{j-1}) s + (R_j - R_{j-1}), D_j + r)
//                           (a stalled group delays the rest), with the 2-rank epilogue's
//                           s = 1 + epilogue_fraction (world - 1), or with
//                           epilogue_reduce_Bps > 0 on > 2 ranks r = (world + 2) (bytes /
//                           tiles) ctas / epilogue_reduce_Bps per own tile, R_j =
//                           ceil(own tiles through j / ctas) r; all-to-all: F_j = F_{j-1} +
//                           (A_j - A_{j-1}); F starts at the peer parts' end;
//   allreduce phase 2:      CopyEngine: P = max(F_j, P) + wait_s + (world - 1) (copy_s(b_j)
//                             (1 + phase2_contention (world - 2)) + copy_ops_s) per own group;
//                           TailKernel: the same, but the last own group leaves by a kernel
//                             behind the GEMM: P = max(F_last, P) + tail_s(b), its exchange
//                             with every peer at once ((world - 1) copy_s(b) where tail_s is
//                             empty; no stream wait);
//                           Epilogue: the reduced tiles leave with the stores; only the done
//                             flag follows: T = max(F_last, E) + wait_s + copy_s(0) +
//                             copy_ops_s;
//                           P starts at the peer copies' end E (phase2_after_peer_copies: one
//                           stream, the simulator) or at 0 (the kernels' tuner's predictor);
//   end:                    T = max(F_last, E, P).
// The two callers' differences are inputs: the simulator gives uniform groups, linear copy
// rates and its wait per group (wait_s); the kernels' tuner the layout's groups, the
// measured peer-copy curve and its stream operations per copy (copy_ops_s). C++17.
#include <vector>

#include "sim/tilewise_plan/comm_curve.hpp"

namespace overlapsim::tilewise_plan {

enum class Collective { AllReduce, ReduceScatter, AllToAll };
// How an all-reduce's reduced own groups reach the peers (the kernel's CopyEnginePhase2).
enum class Phase2 { CopyEngine, Epilogue, TailKernel };

struct CopyEngineGroup {
  bool own = false;      // in the own part (computed last), else in a peer's
  int index = 0;         // j within its part
  double end_tile = 0;   // tiles through this group, in the GEMM's order
  double bytes = 0;      // what its copy moves
  double own_tiles = 0;  // own groups: the own part's tiles through this group
};

// world x groups_per_part equal groups of `tiles` tiles and `bytes` bytes in all.
std::vector<CopyEngineGroup> uniform_groups(int world, int groups_per_part, double tiles,
                                            double bytes);

struct CopyEngineProblem {
  Collective op = Collective::AllReduce;
  int world = 2;
  int groups_per_part = 1;
  double tiles = 0;
  int ctas = 0;
  double gemm_s = 0;  // the GEMM with its signals on `ctas` CTAs
  double bytes = 0;   // the collective's (for epilogue_reduce_Bps)
  std::vector<CopyEngineGroup> groups;  // peer parts' groups, then the own part's
  TimeOfBytes copy_s;                   // one peer copy
  double wait_s = 0;      // once per group's copies (the stream's wait on its counter)
  double copy_ops_s = 0;  // per copy (its flag write and counter reset)
  double epilogue_fraction = 0;
  double epilogue_reduce_Bps = 0;
  double phase2_contention = 0;
  Phase2 phase2 = Phase2::CopyEngine;
  TimeOfBytes tail_s;  // Phase2::TailKernel: the last own group's exchange with every peer
  bool phase2_after_peer_copies = true;
};

struct CopyEnginePlan {
  // Per group (peer groups in order, then own groups), as a simulator schedule takes them:
  // the GEMM's time to it, its copy's time and the wait before it, its share of the
  // collective's peer traffic.
  std::vector<double> compute_s, part_s, part_delay_s, comm_share;
  double end_s = 0;
};

CopyEnginePlan plan_copy_engine(const CopyEngineProblem& problem);

}  // namespace overlapsim::tilewise_plan
