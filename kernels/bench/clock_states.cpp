#include "kernels/bench/clock_states.hpp"

#include <chrono>
#include <thread>

namespace overlapsim::kernels::bench {

Status idle_gpu(BenchEnv& env) {
  OVERLAPSIM_TRY(quiesce(*env.ctx, "clock states: before the idle spell"));
  std::this_thread::sleep_for(std::chrono::duration<double>(kBurstIdle_s));
  return quiesce(*env.ctx, "clock states: after the idle spell");
}

Status time_clock_states(
    BenchEnv& env, const BenchCase& c,
    const std::vector<std::pair<std::string, EnqueueIteration>>& variants,
    const std::function<void(const std::string& row, std::size_t index, const Timing& t)>& emit) {
  Timing t;
  {
    const ScopedTimingPolicy steady({timing_policy().min_time_s, kSteadyWarmup_s});
    for (std::size_t v = 0; v < variants.size(); ++v) {
      OVERLAPSIM_TRY(time_iterations(*env.ctx, c.warmup, c.iterations, variants[v].second, &t));
      emit(variants[v].first + "_steady", v, t);
    }
  }
  const ScopedTimingPolicy burst({0.0, 0.0});
  for (std::size_t v = 0; v < variants.size(); ++v) {
    OVERLAPSIM_TRY(idle_gpu(env));
    OVERLAPSIM_TRY(
        time_iterations(*env.ctx, kBurstWarmup, kBurstIterations, variants[v].second, &t));
    emit(variants[v].first + "_burst", v, t);
  }
  return Status::success();
}

}  // namespace overlapsim::kernels::bench
