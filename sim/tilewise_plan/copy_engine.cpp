#include "sim/tilewise_plan/copy_engine.hpp"

#include <algorithm>
#include <cmath>

namespace overlapsim::tilewise_plan {

std::vector<CopyEngineGroup> uniform_groups(int world, int groups_per_part, double tiles,
                                            double bytes) {
  const int n = world, g = groups_per_part, groups = n * g;
  std::vector<CopyEngineGroup> out;
  for (int k = 0; k < groups; ++k) {
    CopyEngineGroup c;
    c.own = k >= (n - 1) * g;
    c.index = k % g;
    c.end_tile = tiles * (k + 1) / groups;
    c.bytes = bytes / groups;
    if (c.own) c.own_tiles = tiles / n * (c.index + 1) / g;
    out.push_back(c);
  }
  return out;
}

CopyEnginePlan plan_copy_engine(const CopyEngineProblem& w) {
  CopyEnginePlan plan;
  const int n = w.world, g = w.groups_per_part;
  const double wave_s = w.gemm_s / std::ceil(w.tiles / w.ctas);
  // The GEMM finishes a group at the end of the wave holding its last tile.
  auto done_s = [&](double end_tile) { return std::ceil(end_tile / w.ctas - 1e-9) * wave_s; };
  const bool reduce = w.op != Collective::AllToAll && n > 1;
  int peer_groups = 0;
  for (const CopyEngineGroup& c : w.groups) peer_groups += c.own ? 0 : 1;
  double copies_end = 0, computed = 0;
  std::vector<double> arrival(static_cast<std::size_t>(g), 0.0);
  for (const CopyEngineGroup& c : w.groups) {
    if (c.own) continue;
    const double a = done_s(c.end_tile);
    plan.compute_s.push_back(a - computed);
    computed = a;
    const double x = w.copy_s(c.bytes) + w.copy_ops_s;
    copies_end = std::max(a, copies_end) + w.wait_s + x;
    plan.part_s.push_back(x);
    plan.part_delay_s.push_back(w.wait_s);
    plan.comm_share.push_back(1.0 / peer_groups);
    auto& d = arrival[static_cast<std::size_t>(c.index)];
    d = std::max(d, copies_end);
  }
  double finished = computed;
  // The epilogue's reduction (none for All-to-All, which stores its own part as is).
  // 2 ranks: the fast path hides it in the next tile's mainloop but for a fraction of the
  // own part's time. More ranks: the general path's passes over each own tile stall the
  // SM for tile_reduce_s, paid once per own tile by the most loaded SM.
  const bool general = reduce && n > 2 && w.epilogue_reduce_Bps > 0;
  double stretch = 1;
  if (reduce && !general) stretch = 1 + w.epilogue_fraction * (n - 1);
  const double tile_reduce_s =
      general ? (n + 2) * (w.bytes / w.tiles) * w.ctas / w.epilogue_reduce_Bps : 0;
  double reduced_s = 0;
  const bool all_reduce = w.op == Collective::AllReduce && n > 1;
  const bool phase2_copies = all_reduce && w.phase2 != Phase2::Epilogue;
  const double contention = 1 + w.phase2_contention * (n - 2);
  double phase2_end = w.phase2_after_peer_copies ? copies_end : 0;
  for (const CopyEngineGroup& c : w.groups) {
    if (!c.own) continue;
    const double a = done_s(c.end_tile);
    const double reduced_by_j = std::ceil(c.own_tiles / w.ctas - 1e-9) * tile_reduce_s;
    double f = finished + (a - computed) * stretch + (reduced_by_j - reduced_s);
    reduced_s = reduced_by_j;
    // The last partial to arrive still has its tile's passes ahead of it.
    if (reduce) f = std::max(f, arrival[static_cast<std::size_t>(c.index)] + tile_reduce_s);
    computed = a;
    plan.compute_s.push_back(f - finished);
    finished = f;
    plan.comm_share.push_back(0);
    if (!phase2_copies) {
      plan.part_s.push_back(0);
      plan.part_delay_s.push_back(0);
      continue;
    }
    if (w.phase2 == Phase2::TailKernel && c.index == g - 1) {
      // The tail kernel: behind the GEMM on its stream, no wait; the link is shared with
      // any copy still running. Its curve is the exchange with every peer at once; without
      // one, a copy to each peer after the other.
      const double tail = w.tail_s ? w.tail_s(c.bytes) : (n - 1) * w.copy_s(c.bytes);
      phase2_end = std::max(f, phase2_end) + tail;
      plan.part_s.push_back(tail);
      plan.part_delay_s.push_back(0);
      continue;
    }
    // The reduced group goes back to every peer, all ranks copying back to back at once.
    const double back = (n - 1) * (w.copy_s(c.bytes) * contention + w.copy_ops_s);
    phase2_end = std::max(f, phase2_end) + w.wait_s + back;
    plan.part_s.push_back(back);
    plan.part_delay_s.push_back(w.wait_s);
  }
  if (all_reduce && w.phase2 == Phase2::Epilogue)
    plan.end_s = std::max(finished, copies_end) + w.wait_s + w.copy_s(0) + w.copy_ops_s;
  else
    plan.end_s = std::max({finished, copies_end, phase2_end});
  return plan;
}

}  // namespace overlapsim::tilewise_plan
