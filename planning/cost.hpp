#pragma once
// Cost arithmetic of one simulated step: dollars from the cluster's price per GPU-hour,
// energy from the GPU's power draw, both times the GPUs and the time. Closed forms:
//   usd_per_step           = price_per_gpu_hour_usd x gpus x step_time_s / 3600
//   usd_per_million_tokens = usd_per_step / tokens_per_step x 1e6
//   tokens_per_day         = tokens_per_step / step_time_s x 86400
//   time_to_train_s        = target_tokens / tokens_per_step x step_time_s
//   energy_kWh             = power_W x gpus x time_s / 3.6e6
#include <optional>

#include "planning/plan_result.hpp"

namespace overlapsim::planning {

struct CostInputs {
  double step_time_s = 0;
  double tokens_per_step = 0;
  int gpus = 0;
  std::optional<double> price_per_gpu_hour_usd;
  std::optional<double> power_W;
  double target_tokens = 0;  // > 0: time, cost and energy to train this many tokens
};

PlanCosts step_costs(const CostInputs& in);

// Whether a step of this time and these costs meets the target.
bool meets_target(const PlanTarget& target, double step_time_s, const PlanCosts& costs);

}  // namespace overlapsim::planning
