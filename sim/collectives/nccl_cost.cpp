// Constants from NCCL 2.30.7, src/graph/tuning.cc (ncclTunerConstantsDefaults,
// ncclTopoTuneModel, ncclTopoGetAlgoTime; github.com/NVIDIA/nccl master, June 2026).
// Hopper rows are used where NCCL distinguishes GPU generations. Left out, because
// they need NCCL's channel search which we do not model: per-channel bandwidth caps
// (perChMaxTreeBw, perChMaxRingLL128Bw), graph latencyInter, and the NVLS, CollNet
// and PAT algorithms.
#include "sim/collectives/nccl_cost.hpp"

#include <algorithm>
#include <array>
#include <cmath>

#include "sim/collectives/groups.hpp"

namespace overlapsim::sim::detail {
namespace {

constexpr double kUs = 1e-6;
constexpr double kGBps = 1e9;
constexpr std::array<Protocol, 3> kProtocols = {Protocol::LL, Protocol::LL128, Protocol::Simple};

// baseLatencies (us): {LL, LL128, Simple}.
constexpr std::array<double, 3> kTreeBaseLat_us = {6.8, 14.0, 8.4};
constexpr std::array<double, 3> kRingBaseLat_us = {6.6, 14.0, 8.4};
// hwLatencies (us) per step: [NVLink, PCI, NET][{LL, LL128, Simple}].
constexpr std::array<std::array<double, 3>, 3> kTreeHwLat_us = {{
    {0.6, 1.25, 4.0},  // NVLink
    {1.0, 1.9, 4.0},   // PCI
    {5.0, 8.5, 14.0},  // NET
}};
constexpr std::array<std::array<double, 3>, 3> kRingHwLat_us = {{
    {0.6, 1.9, 3.4},   // NVLink
    {1.0, 2.5, 5.7},   // PCI
    {2.7, 4.0, 14.0},  // NET
}};
enum Hw { kNvlink = 0, kPci = 1, kNet = 2 };
// getNetOverhead(): 1 us on x86 Intel (2 on AMD); tripled for Simple.
constexpr double kNetOverhead_us = 1.0;
// llMaxBws (GB/s): single node uses the GPU row (Hopper: 141); multi-node the CPU row
// (Intel: 39.0 for 2 nodes, 20.4 for more).
constexpr double kLlMaxBwOneNodeHopper_GBps = 141.0;
constexpr double kLlMaxBwTwoNodes_GBps = 39.0;
constexpr double kLlMaxBwManyNodes_GBps = 20.4;
// "Plateau effect of ring": Simple ring allreduce latency x1.4 on sm80+ across nodes.
constexpr double kRingPlateau = 1.4;
// treeCorrectionFactor[protocol][log2(bytes / 64)], powers of two 64 B .. 256 MiB.
constexpr std::array<std::array<double, 23>, 3> kTreeCorrection = {{
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7,  .7,  .7,  .6, .5,
     .4,  .4,  .5,  .6,  .7, .8, .9, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7,  .6, .6,
     .6,  .6,  .6,  .6,  .8,  .9, .9, .9, .9, 1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9},
}};
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

std::vector<CostEstimate> nccl_costs(CollectiveOp op, std::uint64_t bytes, const CommShape& shape) {
  std::vector<CostEstimate> out;
  const int n = shape.ranks;
  const int nodes = std::max(1, shape.nodes);
  const double ppn = static_cast<double>(n) / nodes;
  const Hw intra_hw = shape.intra_nvlink ? kNvlink : kPci;
  const Hw hw = nodes == 1 ? intra_hw : kNet;
  const double bytes_d = static_cast<double>(bytes);
  if (n < 2) return out;

  const bool ring_op = op == CollectiveOp::AllReduce || op == CollectiveOp::AllGather ||
                       op == CollectiveOp::ReduceScatter || op == CollectiveOp::Broadcast;
  const int nsteps = op == CollectiveOp::AllReduce ? 2 * (n - 1)
                     : (op == CollectiveOp::AllGather || op == CollectiveOp::ReduceScatter) ? n - 1
                                                                                            : n;
  for (Protocol p : kProtocols) {
    const auto pi = static_cast<std::size_t>(p);
    // LL128 is on by default on Hopper only with NVLink inside the node.
    if (p == Protocol::LL128 && !shape.intra_nvlink) continue;
    if (ring_op) {
      double bus = shape.bus_bandwidth_Bps;
      if (p == Protocol::LL) bus = std::min(ll_max_bw_Bps(nodes), bus * 0.5);
      if (p == Protocol::LL128) bus *= 0.92;
      const double algbw = bus * n / nsteps;
      double lat_us = kRingBaseLat_us[pi];
      if (op == CollectiveOp::Broadcast) {
        // Rings that are not the same on every channel: per-step chunk latency, the
        // tree's for Simple.
        const double step = p == Protocol::Simple ? kTreeHwLat_us[hw][pi] : kRingHwLat_us[hw][pi];
        lat_us += nsteps * step;
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
      }
      if (op == CollectiveOp::AllReduce && p == Protocol::Simple && nodes > 1 && bytes_d / n >= 64)
        lat_us *= kRingPlateau;
      out.push_back({Algorithm::Ring, p, lat_us * kUs, algbw, lat_us * kUs + bytes_d / algbw});
    }
    if (op == CollectiveOp::AllReduce) {
      double bus = shape.bus_bandwidth_Bps * 0.92;
      if (p == Protocol::LL) bus = std::min(bus / 3.8, ll_max_bw_Bps(nodes));
      if (p == Protocol::LL128) bus *= nodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0;
      double algbw = bus * 0.5;
      const int log_size = log2_floor(bytes >> 6);
      if (log_size >= 0 && log_size < 23)
        algbw *= kTreeCorrection[pi][static_cast<std::size_t>(log_size)];
      const double intra_us = kTreeHwLat_us[intra_hw][pi];
      const double inter_us = kTreeHwLat_us[kNet][pi];
      const double lat_us =
          kTreeBaseLat_us[pi] +
          2 * ((ppn - 1) * intra_us + log2_floor(static_cast<std::uint64_t>(nodes)) * inter_us);
      out.push_back({Algorithm::Tree, p, lat_us * kUs, algbw, lat_us * kUs + bytes_d / algbw});
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const CostEstimate& a, const CostEstimate& b) {
    return a.time_s < b.time_s;
  });
  return out;
}

}  // namespace overlapsim::sim::detail
