#include "planning/cost.hpp"

namespace overlapsim::planning {

namespace {
constexpr double kSecondsPerHour = 3600;
constexpr double kSecondsPerDay = 86400;
constexpr double kJoulesPerKWh = 3.6e6;
}  // namespace

PlanCosts step_costs(const CostInputs& in) {
  PlanCosts c;
  c.tokens_per_day = in.tokens_per_step / in.step_time_s * kSecondsPerDay;
  c.gpu_hours_per_step = in.gpus * in.step_time_s / kSecondsPerHour;
  if (in.price_per_gpu_hour_usd) {
    c.usd_per_step = *in.price_per_gpu_hour_usd * c.gpu_hours_per_step;
    c.usd_per_million_tokens = *c.usd_per_step / in.tokens_per_step * 1e6;
  }
  if (in.power_W) c.energy_kWh_per_step = *in.power_W * in.gpus * in.step_time_s / kJoulesPerKWh;
  if (in.target_tokens > 0) {
    const double steps = in.target_tokens / in.tokens_per_step;
    c.time_to_train_s = steps * in.step_time_s;
    if (c.usd_per_step) c.usd_to_train = steps * *c.usd_per_step;
    if (c.energy_kWh_per_step) c.energy_kWh_to_train = steps * *c.energy_kWh_per_step;
  }
  return c;
}

bool meets_target(const PlanTarget& t, double step_time_s, const PlanCosts& c) {
  switch (t.kind) {
    case TargetKind::None:
      return true;
    case TargetKind::StepTime:
      return step_time_s <= t.value;
    case TargetKind::TokensPerDay:
      return c.tokens_per_day >= t.value;
    case TargetKind::Tokens:
      return t.deadline_s <= 0 || (c.time_to_train_s && *c.time_to_train_s <= t.deadline_s);
  }
  return false;
}

}  // namespace overlapsim::planning
