#pragma once
// The tile-wise design's NCCL transport: the GEMM's waves cut into groups of consecutive
// waves, each group's collective issued once its tiles are stored (FlashOverlap's group
// predictor, papers.md §1). For groups g = 1..p:
//   A_g = (waves through group g) x wave_s x (g = 1 ? 1 : compute_slowdown)
//   E_g = max(A_g, E_{g-1}) + wait_s + comm_s(bytes of group g)   (one comm stream)
// and the predicted end is E_p. Used by the kernels' tuner (measured wave time and NCCL
// curve) and the simulator's TilewiseDesign (profile curves, NCCL's slowdown on the
// carve-out folded into comm_s). C++17, host only.
#include <vector>

#include "sim/tilewise_plan/comm_curve.hpp"

namespace overlapsim::tilewise_plan {

struct WaveGroupProblem {
  double wave_s = 0;  // one wave of the GEMM on the SMs left to it
  // share_through[w]: what the first w waves store (size waves + 1, starting at 0); a group
  // of waves [v, u) sends (share_through[u] - share_through[v]) / share_total x bytes. The
  // simulator counts tiles (share_total: all of them, bytes: the collective's); the kernel
  // its measured bytes per wave (share_total = bytes = 1).
  std::vector<double> share_through;
  double share_total = 1;
  double bytes = 1;
  // The GEMM's slowdown once NCCL runs beside it: every group after the first ends at
  // its waves x wave_s x this.
  double compute_slowdown = 1;
  double wait_s = 0;   // per group, before its call (the wait on its tiles, extra latency)
  TimeOfBytes comm_s;  // one group's collective; empty: not known (no prediction)
  int max_groups = 0;  // 0: up to one group per wave
  // The search works on at most this many units of consecutive waves (0: one unit a wave),
  // so it stays O(groups x units^2) on long GEMMs.
  int max_units = 0;

  int waves() const { return share_through.empty() ? 0 : static_cast<int>(share_through.size()) - 1; }
  double group_bytes(int first_wave, int end_wave) const;
};

// share_through for `waves` waves of `sms` tiles each, `tiles` in all (the last wave may be
// partial): min(tiles, w x sms).
std::vector<double> tiles_through(int waves, double tiles, int sms);
// share_through from each wave's bytes (running sums).
std::vector<double> running_sums(const std::vector<double>& per_wave);

struct WaveGroupPlan {
  std::vector<int> sizes;  // waves per group
  double end_s = -1;       // predicted end of the last group's collective; < 0: not predicted
};

// The partition with the earliest predicted end (at most max_groups groups), by dynamic
// programming over the number of groups and the last group's start (E_g only grows with
// E_{g-1}, so the best prefix of each group count is kept). Ties go to fewer groups, then
// to the earliest boundaries. Without comm_s: a one-wave head, then near-equal groups.
WaveGroupPlan plan_wave_groups(const WaveGroupProblem& problem);

// E_p of one partition (waves per group, summing to waves()); -1 without comm_s.
double predict_end_s(const WaveGroupProblem& problem, const std::vector<int>& sizes);

// Every composition of `waves` into groups (2^(waves-1) of them); empty when waves > 20.
std::vector<std::vector<int>> all_partitions(int waves);

// The kernels' tuner's candidates to time: all compositions when there are at most
// `exhaustive_limit` (and waves <= 16), else the `keep` best by prediction among all
// compositions (waves <= 16) or among plan_wave_groups' optimum and simple families (one
// group, equal groups, doubling groups). Sorted by prediction.
std::vector<std::vector<int>> candidate_partitions(const WaveGroupProblem& problem,
                                                   int exhaustive_limit, int keep,
                                                   bool* exhaustive);

}  // namespace overlapsim::tilewise_plan
