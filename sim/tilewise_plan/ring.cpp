#include "sim/tilewise_plan/ring.hpp"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

namespace overlapsim::tilewise_plan {

namespace {

// The units (slab, ring position) of one call in the GEMM's visiting order.
std::vector<std::pair<int, int>> visit_order(int slabs, int n, bool skew) {
  std::vector<std::pair<int, int>> units;
  if (!skew) {
    for (int s = 0; s < slabs; ++s)
      for (int q = 0; q < n; ++q) units.emplace_back(s, q);
    return units;
  }
  for (int t = 0; t + 1 < slabs + n; ++t)
    for (int q = 0; q < n; ++q)
      if (t - q >= 0 && t - q < slabs) units.emplace_back(t - q, q);
  return units;
}

}  // namespace

RingPlan plan_ring(const RingProblem& w) {
  RingPlan plan;
  const int n = std::max(2, w.world), g = std::max(1, w.groups_per_part);
  const int chunks = std::max(1, w.row_chunks);
  const int slabs = std::max(1, w.slabs);
  const double ctas = std::max(1, w.ctas);
  const double wave_s = w.gemm_s / std::max(1.0, std::ceil(w.tiles / ctas));
  const double chunk_tiles = w.tiles / chunks;
  const double group_tiles = chunk_tiles / (static_cast<double>(slabs) * n * g);
  const double group_bytes = w.bytes / (static_cast<double>(chunks) * slabs * n * g);
  const bool all_reduce = w.op == Collective::AllReduce;
  const bool tail = all_reduce && w.phase2 == Phase2::TailKernel && w.tail_s;
  // One rank's copies of one own group to its n - 1 peers, one after the other.
  const double contention = 1 + w.phase2_contention * (n - 2);
  const double back_s =
      w.wait_s + (n - 1) * (w.copy_s(group_bytes) * contention + w.copy_ops_s);
  const auto units = visit_order(slabs, n, w.slab_skew);
  double start = 0, comm = 0, phase2 = 0, tail_bytes = 0;
  // Running sums' arrivals per (slab, group).
  std::vector<double> arrival(static_cast<std::size_t>(slabs) * g, 0.0);
  for (int c = 0; c < chunks; ++c) {
    const bool last_chunk = c + 1 == chunks;
    double f = start, w_prev = 0;
    for (std::size_t v = 0; v < units.size(); ++v) {
      const auto [s, q] = units[v];
      for (int j = 0; j < g; ++j) {
        double& d = arrival[static_cast<std::size_t>(s) * g + j];
        const double end_tile = group_tiles * (static_cast<double>(v) * g + j + 1);
        const double wave_end = std::ceil(end_tile / ctas - 1e-9) * wave_s;
        double next = f + (wave_end - w_prev);
        if (q > 0) {
          plan.stall_s += std::max(0.0, d - next);
          next = std::max(next, d);
        }
        f = next;
        w_prev = wave_end;
        if (q < n - 1) {
          comm = std::max(f, comm) + w.wait_s + w.copy_s(group_bytes) + w.copy_ops_s;
          d = comm;
          continue;
        }
        if (!all_reduce) continue;
        // The own group, reduced: phase 2.
        if (tail && last_chunk && s == slabs - 1 && (w.tail_whole_part || j == g - 1)) {
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
