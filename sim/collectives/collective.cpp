// Dispatch: validate, resolve the algorithm, build its plan, run it.
#include "sim/collectives/collective.hpp"

#include <fmt/format.h>

#include <stdexcept>
#include <string>

#include "sim/collectives/algorithms.hpp"
#include "sim/collectives/nccl_cost.hpp"
#include "sim/collectives/plan.hpp"

namespace overlapsim::sim {

bool supports(CollectiveOp op, Algorithm algo) {
  switch (algo) {
    case Algorithm::Auto:
    case Algorithm::Direct:
      return true;
    case Algorithm::Ring:
      return op == CollectiveOp::AllReduce || op == CollectiveOp::AllGather ||
             op == CollectiveOp::ReduceScatter || op == CollectiveOp::Broadcast;
    case Algorithm::Tree:
      return op == CollectiveOp::AllReduce;
    case Algorithm::Hierarchical:
      return op != CollectiveOp::SendRecv;
  }
  return false;
}

Algorithm resolve_algorithm(const CollectiveRequest& req, const NetworkApi& net,
                            const CollectiveTuning& /*tuning*/) {
  if (req.algo != Algorithm::Auto) {
    if (supports(req.op, req.algo)) return req.algo;
    std::string options;
    for (Algorithm a : {Algorithm::Ring, Algorithm::Tree, Algorithm::Hierarchical,
                        Algorithm::Direct, Algorithm::Auto})
      if (supports(req.op, a))
        options += fmt::format("{}{}", options.empty() ? "" : ", ", to_string(a));
    throw std::invalid_argument(
        fmt::format("{}: algorithm '{}' does not implement it (use one of: {})", to_string(req.op),
                    to_string(req.algo), options));
  }
  // NCCL runs all-to-all and send/recv as grouped point-to-point.
  if (req.op == CollectiveOp::AllToAll || req.op == CollectiveOp::SendRecv)
    return Algorithm::Direct;
  const auto costs = detail::nccl_costs(req.op, req.bytes, detail::comm_shape(req, net));
  return costs.empty() ? Algorithm::Ring : costs.front().algo;
}

namespace detail {

Plan collective_plan(const NetworkApi& net, const CollectiveRequest& req,
                     const CollectiveTuning& tuning) {
  validate(req, net);
  if (tuning.launch_latency_s < 0 || tuning.step_latency_s < 0)
    throw std::invalid_argument("collective tuning: latencies must be >= 0");
  Plan plan;
  switch (resolve_algorithm(req, net, tuning)) {
    case Algorithm::Ring:
      plan = ring_plan(net, req, tuning);
      break;
    case Algorithm::Tree:
      plan = tree_plan(net, req, tuning);
      break;
    case Algorithm::Hierarchical:
      plan = hierarchical_plan(net, req, tuning);
      break;
    case Algorithm::Direct:
      plan = direct_plan(net, req, tuning);
      break;
    case Algorithm::Auto:
      throw std::logic_error("start_collective: auto did not resolve");
  }
  return plan;
}

}  // namespace detail

void start_collective(NetworkApi& net, const CollectiveRequest& req, std::function<void()> on_done,
                      const CollectiveTuning& tuning) {
  detail::run_plan(net, detail::collective_plan(net, req, tuning), std::move(on_done));
}

}  // namespace overlapsim::sim
