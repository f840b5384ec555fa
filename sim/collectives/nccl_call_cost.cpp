#include "sim/collectives/nccl_call_cost.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "sim/collectives/groups.hpp"
#include "sim/collectives/nccl_tables.hpp"

namespace overlapsim::sim::detail {
namespace {

using namespace nccl;

// Grouped send/recv (all-to-all, send/recv) on the Simple protocol.
NcclCallCost p2p_cost(const CollectiveRequest& req, const NetworkApi& net) {
  NcclCallCost c;
  c.algo = Algorithm::Direct;
  c.protocol = Protocol::Simple;
  const CommShape shape = comm_shape(req, net);
  c.nodes = std::max(1, shape.nodes);
  const int n = shape.ranks;
  const int ppn = c.nodes > 0 ? n / c.nodes : n;
  // Peers of one rank: every other rank for all-to-all, one for send/recv.
  const bool a2a = req.op == CollectiveOp::AllToAll;
  const int peers = a2a ? n - 1 : 1;
  const int remote_peers = a2a ? n - ppn : (c.nodes > 1 ? 1 : 0);
  const int per_round = kP2pPerBatch * kP2pChannelsAssumed;
  const int rounds = std::max(1, (peers + per_round - 1) / per_round);
  const auto si = static_cast<std::size_t>(Protocol::Simple);
  // Each round's step: the slowest hop it uses (the network's when any peer is remote),
  // less its wire latency, which the flows pay.
  const double step_us =
      remote_peers > 0 ? std::max(0.0, kRingHwLat_us[kNet][si] - shape.inter_wire_s / kUs)
                       : std::max(0.0, kRingHwLat_us[shape.intra_nvlink ? kNvlink : kPci][si] -
                                           shape.intra_wire_s / kUs);
  // The proxy thread posts every network peer's send and receive in turn.
  const double post_us = remote_peers * kNetOverhead_us;
  c.latency_s = (kRingBaseLat_us[si] + rounds * step_us + post_us) * kUs;
  c.wire_latency_s = rounds * (remote_peers > 0 ? shape.inter_wire_s : shape.intra_wire_s);
  c.efficiency = c.nodes > 1 ? kNetAchievedFraction : 1.0;
  // PXN (default since NCCL 2.12): remote data crosses NVLink to the GPU on the peer's rail.
  c.pxn = a2a && c.nodes > 1 && ppn > 1;
  return c;
}

}  // namespace

NcclCallCost nccl_call_cost(const CollectiveRequest& req, const NetworkApi& net) {
  if (req.op == CollectiveOp::AllToAll || req.op == CollectiveOp::SendRecv)
    return p2p_cost(req, net);
  NcclCallCost c;
  const CommShape shape = comm_shape(req, net);
  c.nodes = std::max(1, shape.nodes);
  const auto costs = nccl_costs(req.op, req.bytes, shape, /*with_nvls=*/true);
  if (costs.empty()) {
    c.algo = req.algo == Algorithm::Auto ? Algorithm::Ring : req.algo;
    return c;
  }
  // NCCL's choice; an explicit ring or tree keeps its algorithm and takes NCCL's best
  // protocol for it; hierarchical and direct (no NCCL counterpart) take NCCL's best costs.
  const CostEstimate* pick = &costs.front();
  if (req.algo == Algorithm::Ring || req.algo == Algorithm::Tree)
    for (const auto& e : costs)
      if (e.algo == req.algo) {
        pick = &e;
        break;
      }
  c.algo = req.algo == Algorithm::Auto ? pick->algo : req.algo;
  c.protocol = pick->protocol;
  c.nvls_tree = pick->nvls_tree;
  c.latency_s = pick->software_latency_s;
  c.wire_latency_s = pick->wire_latency_s;
  c.efficiency = pick->efficiency * (c.nodes > 1 ? kNetAchievedFraction : 1.0);
  c.pipeline_stretch = pick->pipeline_stretch;
  return c;
}

std::string describe(const NcclCallCost& cost) {
  const std::string fill =
      cost.pipeline_stretch != 1 ? fmt::format(" x {:.2f} fill", cost.pipeline_stretch) : "";
  return fmt::format("{}/{}, {:.1f} us + network / {:.3f}{}{}",
                     cost.nvls_tree ? "nvlstree" : to_string(cost.algo), to_string(cost.protocol),
                     cost.latency_s * 1e6, cost.efficiency, fill, cost.pxn ? " (PXN)" : "");
}

}  // namespace overlapsim::sim::detail
