// NCCL's selection model over the constants of nccl_tables.hpp (cited there row by row).
#include "sim/collectives/nccl_cost.hpp"

#include <algorithm>
#include <array>
#include <cmath>

#include "sim/collectives/groups.hpp"
#include "sim/collectives/nccl_tables.hpp"

namespace overlapsim::sim::detail {
namespace {

using namespace nccl;

constexpr std::array<Protocol, 3> kProtocols = {Protocol::LL, Protocol::LL128, Protocol::Simple};
// When the backend cannot estimate paths: one NDR 400 Gb/s port per GPU (50 GB/s).
constexpr double kFallbackBusBw_Bps = 50e9;
// Fastest PCIe a GPU has (Gen5 x16, ~64 GB/s per direction, PCI-SIG); an intra-node
// path faster than this is NVLink.
constexpr double kPcieGen5x16_Bps = 64e9;

int log2_floor(std::uint64_t v) {
  int l = -1;
  while (v) {
    v >>= 1;
    ++l;
  }
  return l;
}

double ll_max_bw_Bps(int nodes) {
  if (nodes == 1) return kLlMaxBwOneNodeHopper_GBps * kGBps;
  return (nodes == 2 ? kLlMaxBwTwoNodes_GBps : kLlMaxBwManyNodes_GBps) * kGBps;
}

}  // namespace

double nvls_tree_pipeline_stretch(std::uint64_t bytes, int nodes, int heads) {
  if (bytes == 0 || nodes < 2 || heads < 1) return 1;
  const double round_chunks = static_cast<double>(kNvlsChannelsHopper) * heads;
  double chunk = kNvlsChunk_bytes;
  if (nodes >= kNvlsTreeMaxChunkMinNodes) chunk = std::min(chunk, kNvlsTreeMaxChunkManyNodes_bytes);
  const double b = static_cast<double>(bytes);
  for (const ChunkShrink& s : kNvlsTreeChunkShrink)
    if (b < s.rounds * round_chunks * chunk && chunk > s.max_bytes) chunk = s.max_bytes;
  const double rounds = std::max(1.0, std::ceil(b / (round_chunks * chunk)));
  const double stages = 2 + log2_floor(static_cast<std::uint64_t>(nodes));
  return (rounds + stages - 1) / rounds;
}

const char* to_string(Protocol p) {
  switch (p) {
    case Protocol::LL:
      return "LL";
    case Protocol::LL128:
      return "LL128";
    case Protocol::Simple:
      return "Simple";
  }
  return "?";
}

CommShape comm_shape(const CollectiveRequest& req, const NetworkApi& net) {
  CommShape shape;
  const auto hosts = group_by_host(net, req.ranks);
  shape.ranks = static_cast<int>(req.ranks.size());
  shape.nodes = static_cast<int>(hosts.size());
  std::optional<PathEstimate> intra, inter;
  for (const auto& h : hosts)
    if (h.size() >= 2) {
      intra = net.path_estimate(h[0], h[1]);
      break;
    }
  if (hosts.size() >= 2) inter = net.path_estimate(hosts[0][0], hosts[1][0]);
  shape.intra_nvlink = !intra || intra->bandwidth_Bps > kPcieGen5x16_Bps;
  if (intra) shape.intra_wire_s = intra->latency_s;
  shape.nvls = intra && intra->bandwidth_Bps >= kNvlink4PerGpu_Bps;
  if (inter) shape.inter_wire_s = inter->latency_s;
  const double ppn = static_cast<double>(shape.ranks) / shape.nodes;
  if (shape.nodes == 1) {
    shape.bus_bandwidth_Bps = intra ? intra->bandwidth_Bps : kFallbackBusBw_Bps;
  } else if (!inter) {
    shape.bus_bandwidth_Bps = kFallbackBusBw_Bps;
  } else if (ppn > 1 && intra) {
    // NCCL runs a channel per NIC, so a node's ranks together reach every NIC's bandwidth;
    // each rank's intra-node link bounds it too.
    shape.bus_bandwidth_Bps = std::min(intra->bandwidth_Bps, ppn * inter->bandwidth_Bps);
  } else {
    shape.bus_bandwidth_Bps = inter->bandwidth_Bps;
  }
  return shape;
}

std::vector<CostEstimate> nccl_costs(CollectiveOp op, std::uint64_t bytes, const CommShape& shape,
                                     bool with_nvls) {
  std::vector<CostEstimate> out;
  const int n = shape.ranks;
  const int nodes = std::max(1, shape.nodes);
  const double ppn = static_cast<double>(n) / nodes;
  const Hw intra_hw = shape.intra_nvlink ? kNvlink : kPci;
  const Hw hw = nodes == 1 ? intra_hw : kNet;
  const double bytes_d = static_cast<double>(bytes);
  const double intra_wire_us = shape.intra_wire_s / kUs;
  const double inter_wire_us = shape.inter_wire_s / kUs;
  if (n < 2) return out;

  const bool ring_op = op == CollectiveOp::AllReduce || op == CollectiveOp::AllGather ||
                       op == CollectiveOp::ReduceScatter || op == CollectiveOp::Broadcast;
  const int nsteps = op == CollectiveOp::AllReduce ? 2 * (n - 1)
                     : (op == CollectiveOp::AllGather || op == CollectiveOp::ReduceScatter) ? n - 1
                                                                                            : n;
  const auto push = [&](Algorithm a, Protocol p, double lat_us, double base_us, double wire_us,
                        double bus_Bps, double algbw) {
    const double soft_us = std::max(base_us, lat_us - wire_us);
    out.push_back({a, p, lat_us * kUs, algbw, lat_us * kUs + bytes_d / algbw, soft_us * kUs,
                   wire_us * kUs, bus_Bps / shape.bus_bandwidth_Bps});
  };
  for (Protocol p : kProtocols) {
    const auto pi = static_cast<std::size_t>(p);
    // LL128 is on by default on Hopper only with NVLink inside the node.
    if (p == Protocol::LL128 && !shape.intra_nvlink) continue;
    if (ring_op) {
      double bus = shape.bus_bandwidth_Bps;
      if (p == Protocol::LL) bus = std::min(ll_max_bw_Bps(nodes), bus * kLlPayload);
      if (p == Protocol::LL128) bus *= kRingLl128Payload;
      const double algbw = bus * n / nsteps;
      double lat_us = kRingBaseLat_us[pi];
      double wire_us = 0;
      if (op == CollectiveOp::Broadcast) {
        // Rings that are not the same on every channel: per-step chunk latency, the
        // tree's for Simple.
        const double step = p == Protocol::Simple ? kTreeHwLat_us[hw][pi] : kRingHwLat_us[hw][pi];
        lat_us += nsteps * step;
        wire_us = nsteps * (nodes == 1 ? intra_wire_us : inter_wire_us);
      } else {
        double intra_us = kRingHwLat_us[intra_hw][pi];
        // With one rank per node every network latency is exposed: the tree's NET value.
        const double inter_us = ppn == 1 ? kTreeHwLat_us[kNet][pi] : kRingHwLat_us[kNet][pi];
        if (nodes > 1)
          intra_us = std::max(intra_us, kNetOverhead_us * (p == Protocol::Simple ? 3 : 1));
        const int inter_steps = nodes == 1                      ? 0
                                : op == CollectiveOp::AllReduce ? 2 * (nodes - 1)
                                                                : nodes - 1;
        lat_us += (nsteps - inter_steps) * intra_us + inter_steps * inter_us;
        wire_us = (nsteps - inter_steps) * intra_wire_us + inter_steps * inter_wire_us;
      }
      if (op == CollectiveOp::AllReduce && p == Protocol::Simple && nodes > 1 && bytes_d / n >= 64)
        lat_us *= kRingPlateau;
      push(Algorithm::Ring, p, lat_us, kRingBaseLat_us[pi], wire_us, bus, algbw);
    }
    if (op == CollectiveOp::AllReduce) {
      double bus = shape.bus_bandwidth_Bps * kTreeEfficiency;
      if (p == Protocol::LL) bus = std::min(bus / kTreeLlDivisor, ll_max_bw_Bps(nodes));
      if (p == Protocol::LL128) bus *= nodes == 1 ? kTreeLl128OneNode : kTreeLl128MultiNode;
      const int log_size = log2_floor(bytes >> 6);
      if (log_size >= 0 && log_size < 23)
        bus *= kTreeCorrection[pi][static_cast<std::size_t>(log_size)];
      const double algbw = bus * 0.5;
      const double intra_us = kTreeHwLat_us[intra_hw][pi];
      const double inter_us = kTreeHwLat_us[kNet][pi];
      const double depth_nodes = log2_floor(static_cast<std::uint64_t>(nodes));
      const double lat_us =
          kTreeBaseLat_us[pi] + 2 * ((ppn - 1) * intra_us + depth_nodes * inter_us);
      const double wire_us = 2 * ((ppn - 1) * intra_wire_us + depth_nodes * inter_wire_us);
      push(Algorithm::Tree, p, lat_us, kTreeBaseLat_us[pi], wire_us, bus, algbw);
    }
  }
  if (with_nvls && shape.nvls && op == CollectiveOp::AllReduce && nodes > 1) {
    const double depth = log2_floor(static_cast<std::uint64_t>(nodes));
    const double lat_us = kNvlsTreeNvlinkLat_us + 2 * depth * kNvlsTreeNetLat_us;
    const double wire_us = intra_wire_us + 2 * depth * inter_wire_us;
    // NCCL's NVLSTree bus bandwidth, in this model's terms: the NVLS intra-node rate (x2,
    // two operations pipelined) or the network's, doubled on two nodes.
    const double bus = std::min(2 * kNvlsEfficiencyHopper * shape.bus_bandwidth_Bps,
                                (nodes <= 2 ? 2.0 : 1.0) * shape.bus_bandwidth_Bps);
    const double algbw = bus * n / nsteps;
    // nvlsEfficiency is NCCL's factor on the NVLS (intra-node) bandwidth; the tree's flows
    // model the network part, which moves at the NIC path's rate (nccl_call_cost), so their
    // efficiency is 1. The pipeline fill is what NCCL's model leaves out.
    const int heads = std::max(1, static_cast<int>(std::lround(ppn)));
    out.push_back({Algorithm::Tree, Protocol::Simple, lat_us * kUs, algbw,
                   lat_us * kUs + bytes_d / algbw, std::max(0.0, lat_us - wire_us) * kUs,
                   wire_us * kUs, 1.0, true, nvls_tree_pipeline_stretch(bytes, nodes, heads)});
  }
  std::stable_sort(out.begin(), out.end(), [](const CostEstimate& a, const CostEstimate& b) {
    return a.time_s < b.time_s;
  });
  return out;
}

}  // namespace overlapsim::sim::detail
