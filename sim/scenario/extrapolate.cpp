#include "sim/scenario/extrapolate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace overlapsim::sim {

namespace {

double line(double a, double b, double t) { return b + t * (b - a); }

// Calls f(get) for every time field StepResult and RankResult share (the step's are its
// critical rank's), with get(times) giving that field of a result of type Times.
template <typename Times, typename F>
void for_each_time(F&& f) {
  for (double Times::*field :
       {&Times::step_time_s, &Times::compute_s, &Times::exposed_comm_s, &Times::bubble_s,
        &Times::comm_s, &Times::overlapped_comm_s, &Times::exposed_inter_host_s,
        &Times::exposed_paired_s, &Times::paired_compute_s, &Times::host_wait_s})
    f([field](auto& times) -> auto& { return times.*field; });
  for (ComputeByKind Times::*kinds : {&Times::compute_by_kind, &Times::paired_by_kind})
    for (double ComputeByKind::*field :
         {&ComputeByKind::gemm_s, &ComputeByKind::attention_s, &ComputeByKind::memory_bound_s})
      f([ kinds, field ](auto& times) -> auto& { return (times.*kinds).*field; });
}

template <typename Times>
void extrapolate_times(const Times& a, Times& b, double t) {
  for_each_time<Times>([&](auto get) { get(b) = line(get(a), get(b), t); });
}

// a - (end - start), field by field.
void less_period(const RankResult& start, const RankResult& end, RankResult& a) {
  for_each_time<RankResult>([&](auto get) { get(a) -= get(end) - get(start); });
}

void extrapolate_step(const StepResult& a, StepResult& b, double t) {
  if (a.design != b.design || a.ranks.size() != b.ranks.size())
    throw std::invalid_argument(fmt::format(
        "extrapolate: runs of '{}' ({} ranks) and '{}' ({} ranks) are not the same runs", a.design,
        a.ranks.size(), b.design, b.ranks.size()));
  extrapolate_times(a, b, t);
  b.events += a.events;
  b.collectives += a.collectives;
  b.background_collectives += a.background_collectives;
  b.sim_wall_s += a.sim_wall_s;
  for (std::size_t i = 0; i < b.ranks.size(); ++i) {
    if (a.ranks[i].rank != b.ranks[i].rank)
      throw std::invalid_argument(
          fmt::format("extrapolate: '{}' simulated rank {} in one run and {} in the other",
                      b.design, a.ranks[i].rank, b.ranks[i].rank));
    extrapolate_times(a.ranks[i], b.ranks[i], t);
  }
}

}  // namespace

StepResult before_last_period(const StepResult& b) {
  if (b.period_start.size() != b.ranks.size() || b.period_end.size() != b.ranks.size() ||
      b.ranks.empty())
    throw std::invalid_argument(
        fmt::format("before_last_period: the run of '{}' has no period marks", b.design));
  StepResult a;
  a.design = b.design;
  a.ranks = b.ranks;
  bool first = true;
  for (std::size_t i = 0; i < a.ranks.size(); ++i) {
    RankResult& r = a.ranks[i];
    less_period(b.period_start[i], b.period_end[i], r);
    // The slowest rank's breakdown, as the executor picks it (the first of equals).
    if (first || r.step_time_s > a.step_time_s) {
      first = false;
      take_critical(a, r);
    }
  }
  return a;
}

double period_spread(const StepResult& b) {
  if (b.ranks.empty() || b.period_start.size() != b.ranks.size() ||
      b.period_end.size() != b.ranks.size())
    return 1;
  double shortest = 0, longest = 0;
  for (std::size_t i = 0; i < b.ranks.size(); ++i) {
    const double period_s = b.period_end[i].step_time_s - b.period_start[i].step_time_s;
    if (i == 0 || period_s < shortest) shortest = period_s;
    if (i == 0 || period_s > longest) longest = period_s;
  }
  return shortest > 0 ? (longest - shortest) / longest : 1;
}

StepBand extrapolate_band(const StepBand& a, const StepBand& b, double t, double step_time_s) {
  StepBand out;
  for (const BandTerm& term : b.terms) {
    const auto in_a = std::find_if(a.terms.begin(), a.terms.end(), [&](const BandTerm& x) {
      return x.number_class == term.number_class;
    });
    BandTerm e = term;
    e.sensitivity_s = std::max(
        0.0, line(in_a == a.terms.end() ? 0.0 : in_a->sensitivity_s, term.sensitivity_s, t));
    if (!(e.sensitivity_s > 0)) continue;
    out.terms.push_back(std::move(e));
  }
  // The bubble's error is a mix of the compute classes' by their times: the mix of the
  // extrapolated step, not of the shorter run.
  const double bubble = bubble_error(out.terms).relative_error;
  for (BandTerm& e : out.terms)
    if (e.number_class == kBubbleClass) e.relative_error = bubble;
  close_band(out, step_time_s);
  return out;
}

ScenarioResult extrapolate_result(const ScenarioResult& a, const ScenarioResult& b, double t) {
  if (a.runs.size() != b.runs.size())
    throw std::invalid_argument(
        fmt::format("extrapolate: {} design runs against {}", a.runs.size(), b.runs.size()));
  ScenarioResult out = b;
  for (std::size_t i = 0; i < out.runs.size(); ++i) {
    DesignRun& run = out.runs[i];
    extrapolate_step(a.runs[i].result, run.result, t);
    run.band = extrapolate_band(a.runs[i].band, b.runs[i].band, t, run.result.step_time_s);
    run.trace_json.clear();  // a trace of a shorter step would not be this step's
  }
  for (std::size_t i = 0; i < out.collective_classes.size(); ++i) {
    const CollectiveClassUse& c = out.collective_classes[i];
    const auto in_a = std::find_if(a.collective_classes.begin(), a.collective_classes.end(),
                                   [&](const CollectiveClassUse& x) { return x.label == c.label; });
    if (in_a != a.collective_classes.end()) out.collective_classes[i].launches += in_a->launches;
  }
  return out;
}

}  // namespace overlapsim::sim
