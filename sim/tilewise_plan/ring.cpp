#include "sim/tilewise_plan/ring.hpp"

#include <algorithm>
#include <cmath>

namespace overlapsim::tilewise_plan {

RingPlan plan_ring(const RingProblem& w) {
  RingPlan plan;
  const int n = std::max(2, w.world), g = std::max(1, w.groups_per_part);
  const int chunks = std::max(1, w.row_chunks);
  const double ctas = std::max(1, w.ctas);
  const double wave_s = w.gemm_s / std::max(1.0, std::ceil(w.tiles / ctas));
  const double chunk_tiles = w.tiles / chunks;
  const double group_tiles = chunk_tiles / (n * g);
  const double group_bytes = w.bytes / (static_cast<double>(chunks) * n * g);
  const bool all_reduce = w.op == Collective::AllReduce;
  const bool tail = all_reduce && w.phase2 == Phase2::TailKernel && w.tail_s;
  // One rank's copies of one own group to its n - 1 peers, one after the other.
  const double contention = 1 + w.phase2_contention * (n - 2);
  const double back_s =
      w.wait_s + (n - 1) * (w.copy_s(group_bytes) * contention + w.copy_ops_s);
  double start = 0, comm = 0, phase2 = 0, tail_bytes = 0;
  std::vector<double> arrival(static_cast<std::size_t>(g), 0.0);
  for (int c = 0; c < chunks; ++c) {
    const bool last_chunk = c + 1 == chunks;
    double f = start, w_prev = 0;
    for (int q = 0; q < n; ++q)
      for (int j = 0; j < g; ++j) {
        const double end_tile = group_tiles * (q * g + j + 1);
        const double wave_end = std::ceil(end_tile / ctas - 1e-9) * wave_s;
        double next = f + (wave_end - w_prev);
        if (q > 0) {
          const double d = arrival[static_cast<std::size_t>(j)];
          plan.stall_s += std::max(0.0, d - next);
          next = std::max(next, d);
        }
        f = next;
        w_prev = wave_end;
        if (q < n - 1) {
          comm = std::max(f, comm) + w.wait_s + w.copy_s(group_bytes) + w.copy_ops_s;
          arrival[static_cast<std::size_t>(j)] = comm;
          continue;
        }
        if (!all_reduce) continue;
        // The own group, reduced: phase 2.
        if (tail && last_chunk && (w.tail_whole_part || j == g - 1)) {
          tail_bytes += group_bytes;
          continue;
        }
        if (w.phase2_own_streams) {
          phase2 = std::max(f, phase2) + back_s;
        } else {
          comm = std::max(f, comm) + back_s;
          phase2 = std::max(phase2, comm);
        }
      }
    start = f;
  }
  plan.gemm_end_s = start;
  plan.comm_end_s = comm;
  if (tail_bytes > 0) phase2 = std::max(start, phase2) + w.tail_s(tail_bytes);
  plan.phase2_end_s = phase2;
  plan.end_s = std::max({start, comm, phase2});
  return plan;
}

}  // namespace overlapsim::tilewise_plan
