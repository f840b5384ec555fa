#pragma once
// The tuner's wave-group predictor (papers.md §1, FlashOverlap): its measured inputs (the
// wave time of the GEMM with signalling on num_sms − s CTAs, s SMs left to NCCL, each
// wave's collective bytes, the NCCL curve of one call) stated as the tile-wise planner's
// problem. The planning itself is sim/tilewise_plan/wave_groups.hpp, the code the
// simulator's TilewiseDesign plans with. C++17, host only.
#include <vector>

#include "sim/tilewise_plan/comm_curve.hpp"
#include "sim/tilewise_plan/wave_groups.hpp"

namespace overlapsim::kernels::tilewise {

using tilewise_plan::all_partitions;
using tilewise_plan::CommCurve;

struct PredictorInputs {
  double wave_time_s = 0;          // GEMM time alone (with signalling) / waves
  std::vector<double> wave_bytes;  // collective bytes of each wave's tiles
  CommCurve comm;
};

// The planner's problem: no group limit, every wave its own unit, no wait or slowdown
// beyond what the measured curve holds.
tilewise_plan::WaveGroupProblem wave_group_problem(const PredictorInputs& in);

// Predicted time of one partition (waves per group, summing to wave_bytes.size()).
double predict_time_s(const PredictorInputs& in, const std::vector<int>& waves);

// The partition with the smallest predicted time (tilewise_plan::plan_wave_groups).
std::vector<int> best_partition(const PredictorInputs& in, double* predicted_s = nullptr);

// tilewise_plan::candidate_partitions on these inputs.
std::vector<std::vector<int>> candidate_partitions(const PredictorInputs& in, int exhaustive_limit,
                                                   int keep, bool* exhaustive);

}  // namespace overlapsim::kernels::tilewise
