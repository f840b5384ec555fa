#pragma once
// The group predictor of papers.md §1 (FlashOverlap): with groups g = 1..p of the GEMM's
// waves, C_g = the group's waves × the measured wave time (GEMM on num_sms − s CTAs, s SMs
// left to NCCL), X_g = the measured time of one NCCL call on the group's bytes, then
//   A_g = A_{g−1} + C_g      (group g's tiles are all stored)
//   E_g = max(A_g, E_{g−1}) + X_g   (its call starts after the previous call, on one stream)
// and the predicted time is E_p. Exhaustive and predictive searches over partitions.
// C++17, host only.
#include <cstdint>
#include <vector>

namespace overlapsim::kernels::tilewise {

// Time of one collective call against its nccl-tests bytes, from measured points
// (piecewise linear between them; beyond the ends, linear through the two nearest).
class CommCurve {
 public:
  void add_point(double bytes, double time_s);
  double time_s(double bytes) const;
  bool empty() const { return bytes_.empty(); }
  std::size_t size() const { return bytes_.size(); }

 private:
  std::vector<double> bytes_;
  std::vector<double> times_s_;
};

struct PredictorInputs {
  double wave_time_s = 0;              // GEMM time alone (with signalling) / waves
  std::vector<double> wave_bytes;      // collective bytes of each wave's tiles
  CommCurve comm;
};

// Predicted time of one partition (waves per group, summing to wave_bytes.size()).
double predict_time_s(const PredictorInputs& in, const std::vector<int>& waves);

// The partition with the smallest predicted time, by dynamic programming over the last
// group boundary (E_g only grows with E_{g−1}, so the best prefix is always kept).
std::vector<int> best_partition(const PredictorInputs& in, double* predicted_s = nullptr);

// Every composition of `waves` into groups (2^(waves−1) of them); empty when waves > 20.
std::vector<std::vector<int>> all_partitions(int waves);

// Candidates to time: all compositions when there are at most `exhaustive_limit`, else the
// `keep` best by prediction among all compositions (waves ≤ 16) or among the DP optimum
// and simple families (one group, equal groups, doubling groups). Sorted by prediction.
std::vector<std::vector<int>> candidate_partitions(const PredictorInputs& in, int exhaustive_limit,
                                                   int keep, bool* exhaustive);

}  // namespace overlapsim::kernels::tilewise
