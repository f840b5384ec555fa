#include "sim/tilewise_plan/allgather.hpp"

#include <algorithm>
#include <cmath>

namespace overlapsim::tilewise_plan {

AllGatherPlan plan_allgather_consumer(const AllGatherProblem& p) {
  AllGatherPlan plan;
  const int world = std::max(1, p.world), chunks = std::max(1, p.chunks);
  const int total = world * chunks;
  const double ctas = std::max(1, p.ctas);
  const double waves = std::max(1.0, std::ceil(p.tiles / ctas));
  const double wave_s = p.gemm_s / waves;
  const double per_chunk = p.tiles / total;
  double f_prev = 0, w_prev = 0, last_arrival = 0;
  for (int k = 0; k < total; ++k) {
    const int i = k / chunks, j = k % chunks;
    double a = 0;
    if (i > 0) a = (p.per_peer ? (j + 1) : ((i - 1) * chunks + j + 1)) * p.step_s;
    const double w = std::ceil(per_chunk * (k + 1) / ctas - 1e-9) * wave_s;
    const double own_run = std::ceil(per_chunk / ctas - 1e-9) * wave_s;
    const double f = std::max({w, f_prev + (w - w_prev), a + own_run});
    plan.arrival_s.push_back(a);
    plan.done_s.push_back(f);
    plan.wave_end_s.push_back(w);
    last_arrival = std::max(last_arrival, a);
    f_prev = f;
    w_prev = w;
  }
  plan.end_s = std::max(f_prev, last_arrival);
  return plan;
}

}  // namespace overlapsim::tilewise_plan
