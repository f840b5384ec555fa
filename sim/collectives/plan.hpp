#pragma once
// A collective's schedule: phases run one after another; each phase is one transfer
// group (every transfer starts together), optionally repeated, with a delay after
// each repetition. Algorithms only build plans; run_plan() drives them over a
// NetworkApi, so an algorithm never touches the event engine.
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "sim/network/network_api.hpp"

namespace overlapsim::sim::detail {

struct Phase {
  std::vector<Transfer> transfers;
  // Unpipelined step-by-step schedules repeat the same group (one ring step each).
  int repeat = 1;
  // Waited after each repetition's group has arrived: pipeline step latencies that a
  // streamed phase does not pay through its flows, NCCL's per-step software cost.
  double delay_after_s = 0;
  std::uint64_t flow_id = 0;
};

struct Plan {
  std::vector<Phase> phases;
  double start_delay_s = 0;  // launch latency before the first phase
};

// Runs the plan from net.simulator().now(); on_done runs once after the last phase.
void run_plan(NetworkApi& net, Plan plan, std::function<void()> on_done);
// The same for a plan kept to be run again (the same network calls and events).
void run_plan(NetworkApi& net, std::shared_ptr<const Plan> plan, std::function<void()> on_done);

// Adds `phase` to `plan` unless it moves nothing.
void append_phase(Plan& plan, Phase phase);

// Merges phases that run at the same time (e.g. one intra-node ring per host) into one:
// transfers are concatenated, the delay is the largest. All must share `repeat`.
Phase merge_concurrent(std::vector<Phase> parts);

// Drops empty and self transfers and sorts by (src, dst), so the result does not depend
// on the order of construction. Transfers of different channels over the same pair stay
// separate flows: each NCCL channel has its own connection and gets its own share of a
// link (the network aggregates identical ones, so this costs nothing).
std::vector<Transfer> canonical_transfers(std::vector<Transfer> transfers);

// Integer division rounding up: per-rank shares of a buffer that does not divide evenly.
inline std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return (a + b - 1) / b; }

}  // namespace overlapsim::sim::detail
