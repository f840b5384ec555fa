#pragma once
// A step of many microbatches projected from two runs of the same configuration with fewer.
//
// Once a pipeline is in its steady state, one more microbatch adds the same work to every
// stage: the same ops, the same sends and the same collectives, started one period later.
// The step time and its breakdown then grow by a constant per microbatch, and everything the
// step does once (the warm-up and drain of the pipeline, the gradient synchronisation, the
// optimizer) is in the intercept. So two runs at m_a < m_b microbatches, both in that
// regime, give the step at m microbatches as b + (m - m_b)/(m_b - m_a) x (b - a), field by
// field. What this rests on is checked, not assumed: the planner's sampling test and
// benchmarks/results/cpu/microbatch_sampling/ compare it with full runs.
#include "sim/scenario/scenario.hpp"

namespace overlapsim::sim {

// `a` and `b` ran the same designs on the same simulated ranks, at m_a < m_b microbatches;
// t = (m - m_b) / (m_b - m_a). Times and breakdowns are extrapolated; counts (events,
// collectives) are the two runs' sums, the work the projection took; the band's
// sensitivities are extrapolated and its errors kept (they do not depend on the step's
// length). Everything else (pair statistics, parameters, classes, sources) is b's.
// Throws std::invalid_argument when the two results do not describe the same runs.
ScenarioResult extrapolate_result(const ScenarioResult& a, const ScenarioResult& b, double t);

// The run `b` less its last period: each rank's times less what they gained between its
// period marks (StepResult::period_start, period_end), the step's breakdown its slowest
// rank's, counts zero. In the steady state one period more or less shifts the drain by
// the period and changes nothing else, so this is the run at m_b minus the period's
// microbatches, without running it. Throws std::invalid_argument where b has no marks.
StepResult before_last_period(const StepResult& b);

// How far the ranks' periods (their time from one period mark to the next) spread:
// (longest - shortest) / longest; 1 where b has no marks. In a steady state every stage
// runs at the pipeline's one rate, so the periods agree to rounding; where they do not, a
// rank was still filling or draining and the shorter run must be simulated.
double period_spread(const StepResult& b);
// The spread up to which before_last_period stands for the shorter run.
inline constexpr double kSteadyPeriodSpread = 1e-3;

// The same for one band: the classes' sensitivities extrapolated, contributions and the
// root-sum-of-squares half-width recomputed around `step_time_s`.
StepBand extrapolate_band(const StepBand& a, const StepBand& b, double t, double step_time_s);

}  // namespace overlapsim::sim
