#pragma once
// AllGather+GEMM's tile-wise consumer (kernels/tilewise/allgather_gemm.hpp) on `world`
// symmetric ranks, in closed form. The GEMM visits the world row blocks in arrival order,
// own block first, each cut into `chunks` chunks of tiles / (world x chunks) tiles; chunk k
// (k = i x chunks + j: block i after the own, chunk j) ends, unstalled, at the end of the
// wave holding its last tile, W_k = ceil(end_tile_k / ctas) x wave_s, wave_s = gemm_s /
// ceil(tiles / ctas).
//   arrival:  own chunks A = 0; a peer's chunk, pushes in rotated order on one stream:
//             A_{i,j} = ((i - 1) chunks + j + 1) x step_s; a stream a peer, all pushes at once:
//             A_{i,j} = (j + 1) x step_s (step_s: one step's copy and flag write, what the
//             caller measured or costed for that mode);
//   GEMM:     F_k = max(W_k, F_{k-1} + (W_k - W_{k-1}), A_k + ceil(tiles_k / ctas) x wave_s)
//             (a chunk cannot end before it arrived and its tiles ran; a stall delays the rest);
//   end:      T = F_last, and never under the transport alone (the last arrival).
// The kernels' predictor reads step_s from the transport timed alone; the simulator would
// cost it from its links. C++17.
#include <vector>

namespace overlapsim::tilewise_plan {

struct AllGatherProblem {
  int world = 2;
  int chunks = 1;
  double tiles = 0;  // the GEMM's output tiles (M x N)
  int ctas = 0;      // persistent CTAs
  double gemm_s = 0;  // the GEMM alone on the gathered A
  double step_s = 0;  // one push step (see above)
  bool per_peer = false;
};

struct AllGatherPlan {
  std::vector<double> arrival_s, done_s;  // per chunk in the GEMM's order
  std::vector<double> wave_end_s;         // per chunk: W_k, its unstalled end
  double end_s = 0;
};

AllGatherPlan plan_allgather_consumer(const AllGatherProblem& problem);

}  // namespace overlapsim::tilewise_plan
