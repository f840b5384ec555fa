#include "sim/collectives/plan.hpp"

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "sim/engine/simulator.hpp"

namespace overlapsim::sim::detail {
namespace {

// Drives a plan phase by phase; owned by the callbacks it schedules, so it lives until
// the last one has run.
struct PlanRunner : std::enable_shared_from_this<PlanRunner> {
  NetworkApi& net;
  std::shared_ptr<const Plan> plan_ptr;
  const Plan& plan;
  std::function<void()> on_done;
  std::size_t phase = 0;
  int repetition = 0;

  PlanRunner(NetworkApi& n, std::shared_ptr<const Plan> p, std::function<void()> done)
      : net(n), plan_ptr(std::move(p)), plan(*plan_ptr), on_done(std::move(done)) {}

  void next() {
    while (phase < plan.phases.size() &&
           (plan.phases[phase].repeat <= 0 || repetition >= plan.phases[phase].repeat)) {
      ++phase;
      repetition = 0;
    }
    if (phase == plan.phases.size()) {
      auto done = std::move(on_done);
      done();
      return;
    }
    const Phase& p = plan.phases[phase];
    ++repetition;
    auto self = shared_from_this();
    net.transfer_group(
        p.transfers, [self] { self->after_group(); }, p.flow_id);
  }

  void after_group() {
    const double delay_s = plan.phases[phase].delay_after_s;
    if (delay_s > 0) {
      auto self = shared_from_this();
      net.simulator().schedule(delay_s, [self] { self->next(); });
    } else {
      next();
    }
  }
};

// One group with nothing after it (every send/recv, most one-shot collectives): the group's
// completion is the plan's, so it takes on_done itself. No runner is allocated and none is
// called back; the network's calls and the events are those a runner makes.
bool single_group(const Plan& plan) {
  return plan.phases.size() == 1 && plan.phases.front().repeat == 1 &&
         !(plan.phases.front().delay_after_s > 0);
}

}  // namespace

void run_plan(NetworkApi& net, Plan plan, std::function<void()> on_done) {
  if (single_group(plan)) {
    net.simulator().schedule(plan.start_delay_s, [&net, phase = std::move(plan.phases.front()),
                                                  done = std::move(on_done)]() mutable {
      net.transfer_group(phase.transfers, std::move(done), phase.flow_id);
    });
    return;
  }
  run_plan(net, std::make_shared<const Plan>(std::move(plan)), std::move(on_done));
}

void run_plan(NetworkApi& net, std::shared_ptr<const Plan> plan, std::function<void()> on_done) {
  const double start_delay_s = plan->start_delay_s;
  if (single_group(*plan)) {
    net.simulator().schedule(start_delay_s,
                             [&net, plan = std::move(plan), done = std::move(on_done)]() mutable {
                               const Phase& phase = plan->phases.front();
                               net.transfer_group(phase.transfers, std::move(done), phase.flow_id);
                             });
    return;
  }
  auto runner = std::make_shared<PlanRunner>(net, std::move(plan), std::move(on_done));
  // Even with no launch latency the first phase starts from an event, so a collective
  // never completes inside start_collective() (callers may not expect re-entry).
  net.simulator().schedule(start_delay_s, [runner] { runner->next(); });
}

void append_phase(Plan& plan, Phase phase) {
  if (phase.transfers.empty() || phase.repeat <= 0) return;
  plan.phases.push_back(std::move(phase));
}

Phase merge_concurrent(std::vector<Phase> parts) {
  Phase merged;
  if (parts.empty()) return merged;
  merged.repeat = parts.front().repeat;
  merged.flow_id = parts.front().flow_id;
  std::size_t total = 0;
  for (const Phase& p : parts) total += p.transfers.size();
  merged.transfers.reserve(total);
  for (Phase& p : parts) {
    if (p.repeat != merged.repeat)
      throw std::logic_error("merge_concurrent: phases repeat a different number of times");
    merged.delay_after_s = std::max(merged.delay_after_s, p.delay_after_s);
    merged.transfers.insert(merged.transfers.end(), p.transfers.begin(), p.transfers.end());
  }
  return merged;
}

std::vector<Transfer> canonical_transfers(std::vector<Transfer> transfers) {
  std::erase_if(transfers,
                [](const Transfer& t) { return t.bytes == 0 || t.src_rank == t.dst_rank; });
  std::stable_sort(transfers.begin(), transfers.end(), [](const Transfer& a, const Transfer& b) {
    return a.src_rank != b.src_rank ? a.src_rank < b.src_rank : a.dst_rank < b.dst_rank;
  });
  return transfers;
}

}  // namespace overlapsim::sim::detail
