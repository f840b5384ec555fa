#include "sim/collectives/reference_eval.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>

#include "config/error.hpp"
#include "sim/collectives/collective_cost_model.hpp"
#include "sim/collectives/nccl_call_cost.hpp"
#include "sim/engine/simulator.hpp"
#include "sim/network/flow_network.hpp"

namespace overlapsim::sim {
namespace {

// The first `ranks_per_node` GPUs of each of the first `nodes` hosts, host by host, as an
// MPI launch with -N ranks_per_node places them.
std::vector<int> communicator(const Topology& topo, const ReferenceTable& t) {
  std::map<int, std::vector<int>> by_host;
  for (int r = 0; r < topo.num_gpus(); ++r) by_host[topo.host_of(r)].push_back(r);
  std::vector<int> ranks;
  int hosts = 0;
  for (const auto& [host, gpus] : by_host) {
    if (hosts == t.nodes) break;
    if (static_cast<int>(gpus.size()) < t.ranks_per_node)
      throw config::ConfigError(fmt::format(
          "{}: ranks_per_node: {} but host {} of {} has {} GPUs (expected at most that many)",
          t.file, t.ranks_per_node, host, t.cluster_file, gpus.size()));
    ranks.insert(ranks.end(), gpus.begin(), gpus.begin() + t.ranks_per_node);
    ++hosts;
  }
  if (hosts < t.nodes)
    throw config::ConfigError(
        fmt::format("{}: nodes: {} but {} has {} hosts (expected at most that many)", t.file,
                    t.nodes, t.cluster_file, hosts));
  return ranks;
}

ReferencePointResult predict(const Topology& topo, const std::vector<int>& ranks,
                             const ReferenceTable& t, const ReferencePoint& p, bool nccl_costs) {
  Simulator clock;
  FlowNetwork net(clock, topo);
  const CollectiveProfile no_curves;
  CollectiveTimingOptions options;
  options.in_compute_loop = false;  // nccl-tests times the collective back to back, alone
  options.nccl_costs = nccl_costs;
  CollectiveCostModel costs(no_curves, net, options);
  CollectiveRequest req;
  req.op = t.op;
  req.ranks = ranks;
  req.bytes = p.bytes;
  ReferencePointResult r;
  r.bytes = p.bytes;
  r.published_s = p.time_s;
  r.how = nccl_costs ? detail::describe(detail::nccl_call_cost(req, net)) : "bare flows";
  double done_s = -1;
  costs.launch(req, [&] { done_s = clock.now(); });
  clock.run();
  if (done_s < 0) throw std::logic_error("reference collective did not complete");
  r.predicted_s = done_s;
  r.rel_err = (r.predicted_s - r.published_s) / r.published_s;
  return r;
}

}  // namespace

double median_abs(std::vector<double> values) {
  if (values.empty()) return 0;
  for (double& v : values) v = std::abs(v);
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

ReferenceValidation validate_references(const std::vector<ReferenceTable>& tables,
                                        const ClusterTopologyLoader& load, std::uint64_t min_bytes,
                                        std::uint64_t max_bytes, bool nccl_costs) {
  ReferenceValidation out;
  out.min_bytes = min_bytes;
  out.max_bytes = max_bytes;
  std::vector<double> all;
  for (const ReferenceTable& t : tables) {
    const Topology topo = load(t.cluster_file, t.nodes);
    const std::vector<int> ranks = communicator(topo, t);
    ReferenceTableResult tr;
    tr.table = t;
    std::vector<double> errs;
    for (const ReferencePoint& p : t.points) {
      ReferencePointResult r = predict(topo, ranks, t, p, nccl_costs);
      r.in_range = p.bytes >= min_bytes && p.bytes <= max_bytes;
      if (r.in_range) {
        errs.push_back(r.rel_err);
        all.push_back(r.rel_err);
      }
      tr.points.push_back(std::move(r));
    }
    tr.in_range = static_cast<int>(errs.size());
    tr.median_abs_err = median_abs(errs);
    out.tables.push_back(std::move(tr));
  }
  out.in_range = static_cast<int>(all.size());
  out.median_abs_err = median_abs(all);
  return out;
}

}  // namespace overlapsim::sim
