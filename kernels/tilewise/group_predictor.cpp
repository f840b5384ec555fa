#include "kernels/tilewise/group_predictor.hpp"

namespace overlapsim::kernels::tilewise {

tilewise_plan::WaveGroupProblem wave_group_problem(const PredictorInputs& in) {
  tilewise_plan::WaveGroupProblem p;
  p.wave_s = in.wave_time_s;
  p.share_through = tilewise_plan::running_sums(in.wave_bytes);
  p.comm_s = in.comm.as_function();
  return p;
}

double predict_time_s(const PredictorInputs& in, const std::vector<int>& waves) {
  return tilewise_plan::predict_end_s(wave_group_problem(in), waves);
}

std::vector<int> best_partition(const PredictorInputs& in, double* predicted_s) {
  const tilewise_plan::WaveGroupPlan plan = tilewise_plan::plan_wave_groups(wave_group_problem(in));
  if (predicted_s) *predicted_s = plan.end_s;
  return plan.sizes;
}

std::vector<std::vector<int>> candidate_partitions(const PredictorInputs& in,
                                                   int exhaustive_limit, int keep,
                                                   bool* exhaustive) {
  return tilewise_plan::candidate_partitions(wave_group_problem(in), exhaustive_limit, keep,
                                             exhaustive);
}

}  // namespace overlapsim::kernels::tilewise
