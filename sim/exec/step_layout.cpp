#include "sim/exec/step_layout.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <queue>
#include <stdexcept>
#include <unordered_map>

namespace overlapsim::sim {

using executor_detail::is_comm;
using executor_detail::ProgramLayout;

namespace {

ProgramLayout layout_program(const StepGraph& step, const RankProgram& program) {
  ProgramLayout out;
  const OpGraph& g = program.graph;
  const std::size_t n = boost::num_vertices(g);
  out.initial_ops.assign(n, executor_detail::OpState{});
  std::vector<int> indegree(n);
  bool forward = true;  // every edge to a higher index (as the generator emits them)
  bool host_gated = false;  // an op carries a host time or a host sync
  executor_detail::EdgeRows& rows = out.edges;
  rows.out_begin.assign(n + 1, 0);
  rows.in_begin.assign(n + 1, 0);
  rows.out_to.reserve(boost::num_edges(g));
  rows.in_from.reserve(boost::num_edges(g));
  for (std::size_t v = 0; v < n; ++v) {
    indegree[v] = static_cast<int>(boost::in_degree(v, g));
    executor_detail::OpState& st = out.initial_ops[v];
    st.preds_left = indegree[v];
    const OpNode& node = g[v];
    st.kind = static_cast<std::uint8_t>(node.kind);
    st.stream = static_cast<std::uint8_t>(node.stream);
    st.paired = node.pair_partner >= 0;
    st.kernels = static_cast<std::uint16_t>(std::clamp<std::int64_t>(
        node.kind == OpKind::Gemm ? node.gemm.batch : node.launches, 1, 65535));
    if (is_comm(node.kind))
      ++out.comm_ops;
    else if (node.stream == StreamKind::Compute)
      ++out.compute_ops;
    if (node.host_s > 0 || node.host_sync) host_gated = true;
    for (auto e : boost::make_iterator_range(boost::out_edges(v, g))) {
      forward = forward && boost::target(e, g) > v;
      rows.out_to.push_back(static_cast<std::uint32_t>(boost::target(e, g)));
    }
    rows.out_begin[v + 1] = static_cast<std::uint32_t>(rows.out_to.size());
    for (auto e : boost::make_iterator_range(boost::in_edges(v, g)))
      rows.in_from.push_back(static_cast<std::uint32_t>(boost::source(e, g)));
    rows.in_begin[v + 1] = static_cast<std::uint32_t>(rows.in_from.size());
  }
  std::size_t ordered = 0;
  std::vector<OpVertex> host_order;
  std::unordered_map<int, int> issued;  // group -> collectives so far in program order
  auto take = [&](OpVertex v) {
    ++ordered;
    const OpNode& node = g[v];
    if (node.kind == OpKind::Collective) out.initial_ops[v].instance = issued[node.comm_group]++;
    if (node.kind != OpKind::SendRecv) out.stream_order[static_cast<int>(node.stream)].push_back(v);
    if (node.kind != OpKind::SendRecv && executor_detail::host_issues(node.stream))
      host_order.push_back(v);
  };
  if (forward) {
    // Then vertex v is ready once 0..v-1 are taken, and the lowest ready: the order is
    // 0, 1, ..., n-1, without the priority queue (a few percent of a GPT-3 run).
    for (std::size_t v = 0; v < n; ++v) take(v);
  } else {
    std::priority_queue<OpVertex, std::vector<OpVertex>, std::greater<>> ready;
    for (std::size_t v = 0; v < n; ++v)
      if (indegree[v] == 0) ready.push(v);
    while (!ready.empty()) {
      const OpVertex v = ready.top();
      ready.pop();
      take(v);
      for (auto e : boost::make_iterator_range(boost::out_edges(v, g))) {
        const OpVertex w = boost::target(e, g);
        if (--indegree[w] == 0) ready.push(w);
      }
    }
  }
  if (ordered != n)
    throw std::invalid_argument(
        fmt::format("step: the graph of rank {} has a dependency cycle", program.rank));
  if (host_gated) {
    out.host_position.assign(n, executor_detail::kNotIssued);
    for (std::size_t i = 0; i < host_order.size(); ++i)
      out.host_position[host_order[i]] = static_cast<std::uint32_t>(i);
    out.host_order = std::move(host_order);
  }
  for (std::size_t v = 0; v < n; ++v) {
    const OpNode& node = g[v];
    if ((node.kind == OpKind::Collective ||
         (node.kind == OpKind::SendRecv && node.comm_group >= 0)) &&
        (node.comm_group < -1 || node.comm_group >= static_cast<int>(step.groups.size())))
      throw std::invalid_argument(fmt::format("step: rank {} op '{}' names group {} of {}",
                                              program.rank, node.name, node.comm_group,
                                              step.groups.size()));
    if (node.kind == OpKind::Collective && node.comm_group < 0)
      throw std::invalid_argument(
          fmt::format("step: rank {} collective '{}' has no group", program.rank, node.name));
    if (node.kind == OpKind::SendRecv && (node.peer_rank < 0 || node.peer_rank >= step.world_size))
      throw std::invalid_argument(fmt::format("step: rank {} op '{}' has peer {} outside the world",
                                              program.rank, node.name, node.peer_rank));
  }
  return out;
}

}  // namespace

StepLayout::StepLayout(const StepGraph& step, const NetworkApi& net, BackgroundImages images)
    : step_(&step), images_(images), plans_(plan_comm_images(step, net, images)) {
  group_spans_hosts_.assign(step.groups.size(), 0);
  for (std::size_t g = 0; g < step.groups.size(); ++g)
    for (int r : step.groups[g].ranks)
      if (net.host_of(r) != net.host_of(step.groups[g].ranks.front())) group_spans_hosts_[g] = 1;
  programs_.reserve(step.ranks.size());
  for (const RankProgram& program : step.ranks) programs_.push_back(layout_program(step, program));
}

}  // namespace overlapsim::sim
