#include "sim/scenario/run_budget.hpp"

#include <fmt/format.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "config/integers.hpp"
#include "sim/collectives/transfer_count.hpp"
#include "sim/engine/simulator.hpp"
#include "sim/network/flow_network.hpp"

namespace overlapsim::sim {
namespace {

// Resident bytes per item, measured with /usr/bin/time (maximum resident set size) on the
// 2-core development machine, Release build, 2026-11-26, and again on 2026-11-27 after the
// max-min solver gained its per-resource flow index (bounded at 2^20 incidences) and the
// flow network its unsaturable-link flags (benchmarks/results/cpu/memory_guard/README.md
// has the commands; the figures below are the second measurement, the first in brackets):
//  - base: `collective --op sendrecv` on h200-8gpu: 8.2 MiB (binary, libraries, parsing).
//  - per vertex and link: `collective --op sendrecv` on h200-2048node-ndr, 58.4 MiB less the
//    base over 35,329 vertices + 99,328 directed links: 392 bytes per item [318] (the graph,
//    the routing adjacency and distance tables, the flow network's per-link solver state).
//  - per transfer: `collective --op alltoall` per pair over the 1,024 GPUs of
//    h200-128node-ndr, 158.2 MiB less the 11.4 MiB of that run's base and topology, over
//    1,047,552 transfers: 147 bytes [139] (the plan's Transfer, the flow network's copy, its
//    cached route of about 6 links, solver entries).
//  - per route link beyond that route's 6: `collective --op alltoall --bytes 16MiB` on
//    bidirectional rings of 128, 256 and 512 GPUs (mean routes of 32, 64 and 128 links):
//    27.8, 95.4 and 623.0 MiB for 16,256, 65,280 and 261,632 transfers, 19 to 21 bytes per
//    transfer and link [20.0, 88.0, 589.7 MiB: 15.8 to 16.6].
//  - per op: assumed, not measured apart: an OpNode (~200 bytes with its name), its edges
//    and the executor's per-op state, rounded up to 1 KiB.
constexpr std::uint64_t kBaseBytes = std::uint64_t{8} << 20;
constexpr std::uint64_t kBytesPerTransfer = 150;
constexpr std::uint64_t kRouteLinksMeasured = 6;  // the route length kBytesPerTransfer holds
constexpr std::uint64_t kBytesPerRouteLink = 22;
constexpr std::uint64_t kBytesPerVertex = 400;
constexpr std::uint64_t kBytesPerLink = 400;
constexpr std::uint64_t kBytesPerOp = 1024;

std::uint64_t saturating_mul(std::uint64_t a, std::uint64_t b) {
  if (a != 0 && b > std::numeric_limits<std::uint64_t>::max() / a)
    return std::numeric_limits<std::uint64_t>::max();
  return a * b;
}

std::uint64_t saturating_add(std::uint64_t a, std::uint64_t b) {
  return a > std::numeric_limits<std::uint64_t>::max() - b
             ? std::numeric_limits<std::uint64_t>::max()
             : a + b;
}

// "3.2 GiB", or "126 MiB" below a GiB, so that a small estimate and limit read apart.
std::string human(std::uint64_t bytes) {
  const double mib = static_cast<double>(bytes) / (1024.0 * 1024);
  return mib < 1024 ? fmt::format("{:.0f} MiB", mib) : fmt::format("{:.1f} GiB", mib / 1024);
}

// Links of the routes a collective's transfers take, on average over a sample of at most 64
// of them: all pairs for an all-to-all (or a direct algorithm), neighbours in rank order for
// the rest (rings, trees, hierarchical phases). On fat trees they are a few links; on a ring
// or a mesh they grow with the GPU count, and so does each flow's memory.
double mean_route_links(const Topology& topo, const std::vector<int>& ranks, bool all_pairs) {
  const std::size_t n = ranks.size();
  if (n < 2) return 0;
  const std::size_t samples = std::min<std::size_t>(64, n);
  std::uint64_t links = 0;
  for (std::size_t k = 0; k < samples; ++k) {
    const std::size_t i = k * n / samples;
    const std::size_t step = all_pairs ? 1 + (k * 2654435761ULL) % (n - 1) : 1;
    links += topo.route(ranks[i], ranks[(i + step) % n], 0).size();
  }
  return static_cast<double>(links) / static_cast<double>(samples);
}

std::uint64_t route_links(std::uint64_t transfers, double mean_links) {
  const double links = static_cast<double>(transfers) * mean_links;
  return links >= 1.8e19 ? std::numeric_limits<std::uint64_t>::max()
                         : static_cast<std::uint64_t>(std::llround(links));
}

bool all_pairs(const CollectiveRequest& req) {
  return req.op == CollectiveOp::AllToAll || req.algo == Algorithm::Direct;
}

RunSize topology_size(const Topology& topo) {
  RunSize s;
  s.topology_vertices = topo.num_vertices();
  s.topology_links = topo.num_links();
  return s;
}

}  // namespace

std::uint64_t RunMemoryEstimate::total_bytes() const {
  return saturating_add(saturating_add(base_bytes, topology_bytes),
                        saturating_add(graph_bytes, flow_bytes));
}

std::string RunMemoryEstimate::explain() const {
  return fmt::format(
      "about {}: flows {} ({} transfers in flight), topology {}, step graph {}, base {}",
      human(total_bytes()), human(flow_bytes), transfers, human(topology_bytes), human(graph_bytes),
      human(base_bytes));
}

RunMemoryEstimate estimate_run_memory(const RunSize& size) {
  RunMemoryEstimate e;
  e.base_bytes = kBaseBytes;
  e.topology_bytes = saturating_add(saturating_mul(size.topology_vertices, kBytesPerVertex),
                                    saturating_mul(size.topology_links, kBytesPerLink));
  e.graph_bytes = saturating_mul(size.ops, kBytesPerOp);
  e.transfers = size.transfers_in_flight;
  e.flow_bytes = saturating_mul(size.transfers_in_flight, kBytesPerTransfer);
  const std::uint64_t measured_links = saturating_mul(size.transfers_in_flight, kRouteLinksMeasured);
  if (size.route_links_in_flight > measured_links)
    e.flow_bytes = saturating_add(
        e.flow_bytes,
        saturating_mul(size.route_links_in_flight - measured_links, kBytesPerRouteLink));
  return e;
}

RunSize collective_run_size(const Topology& topo, const CollectiveRequest& req,
                            const CollectiveTuning& tuning) {
  RunSize s = topology_size(topo);
  Simulator clock;
  FlowNetwork net(clock, topo);
  s.transfers_in_flight = peak_group_transfers(net, req, tuning);
  s.route_links_in_flight =
      route_links(s.transfers_in_flight, mean_route_links(topo, req.ranks, all_pairs(req)));
  return s;
}

RunSize step_run_size(const StepGraph& step, const Topology& topo) {
  RunSize s = topology_size(topo);
  for (const RankProgram& rank : step.ranks) s.ops += boost::num_vertices(rank.graph);
  // The collectives each communicator runs (a set: one count per op kind).
  std::set<std::pair<int, CollectiveOp>> uses;
  for (const RankProgram& rank : step.ranks) {
    for (const OpVertex v : boost::make_iterator_range(boost::vertices(rank.graph))) {
      const OpNode& op = rank.graph[v];
      if (op.kind == OpKind::Collective && op.comm_group >= 0 &&
          static_cast<std::size_t>(op.comm_group) < step.groups.size())
        uses.emplace(op.comm_group, op.collective);
    }
  }
  Simulator clock;
  FlowNetwork net(clock, topo);
  // Background images: every communicator of a used family runs its collectives too.
  std::set<std::pair<std::string, CollectiveOp>> families;
  for (const auto& [group, op] : uses)
    families.emplace(step.groups[static_cast<std::size_t>(group)].family, op);
  for (std::size_t g = 0; g < step.groups.size(); ++g) {
    const CommGroup& group = step.groups[g];
    std::uint64_t most = 0, most_links = 0;
    // A group's mean route, neighbours [0] or all pairs [1], sampled once for all its ops.
    double mean_links[2] = {-1, -1};
    for (const auto& [family, op] : families) {
      if (family != group.family) continue;
      CollectiveRequest req;
      req.op = op;
      req.ranks = group.ranks;
      CollectiveTuning tuning;
      tuning.pxn = op == CollectiveOp::AllToAll;
      const std::uint64_t transfers = peak_group_transfers(net, req, tuning);
      most = std::max(most, transfers);
      double& mean = mean_links[all_pairs(req) ? 1 : 0];
      if (mean < 0) mean = mean_route_links(topo, group.ranks, all_pairs(req));
      most_links = std::max(most_links, route_links(transfers, mean));
    }
    s.transfers_in_flight = saturating_add(s.transfers_in_flight, most);
    s.route_links_in_flight = saturating_add(s.route_links_in_flight, most_links);
  }
  return s;
}

std::uint64_t physical_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_bytes = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page_bytes <= 0) return 0;
  return static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page_bytes);
}

namespace {

// The soft limit of `resource` in bytes; 0 when unlimited or unreadable.
std::uint64_t resource_limit_bytes(int resource) {
  rlimit limit{};
  if (getrlimit(resource, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return 0;
  return static_cast<std::uint64_t>(limit.rlim_cur);
}

// cgroup v2's memory.max of this process's cgroup; 0 when "max", absent or unreadable.
std::uint64_t cgroup_limit_bytes() {
  std::ifstream in("/sys/fs/cgroup/memory.max");
  std::string text;
  if (!(in >> text) || text == "max") return 0;
  const auto v = config::parse_int(text);
  return v && *v > 0 ? static_cast<std::uint64_t>(*v) : 0;
}

}  // namespace

std::uint64_t available_memory_bytes() {
  std::uint64_t least = physical_memory_bytes();
  for (const std::uint64_t limit :
       {resource_limit_bytes(RLIMIT_AS), resource_limit_bytes(RLIMIT_DATA), cgroup_limit_bytes()})
    if (limit > 0 && (least == 0 || limit < least)) least = limit;
  return least;
}

std::uint64_t default_memory_limit_bytes() {
  const std::uint64_t available = available_memory_bytes();
  if (available == 0) return std::numeric_limits<std::uint64_t>::max();
  return available / 5 * 4;
}

std::uint64_t max_ops_within(std::uint64_t limit_bytes) { return limit_bytes / kBytesPerOp; }

std::optional<std::string> over_memory_budget(const RunMemoryEstimate& estimate,
                                              std::uint64_t limit_bytes) {
  if (estimate.total_bytes() <= limit_bytes) return std::nullopt;
  return fmt::format("the run needs {}, over the limit of {}", estimate.explain(),
                     human(limit_bytes));
}

}  // namespace overlapsim::sim
