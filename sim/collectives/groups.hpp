#pragma once
// How a communicator sits on the machine: its ranks per host, the rings NCCL-style
// channels follow, and the zero-load latency/bandwidth along a sequence of hops.
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "sim/network/network_api.hpp"

namespace overlapsim::sim::detail {

// Members grouped by host: hosts in order of first appearance, members in
// communicator order within each host.
std::vector<std::vector<int>> group_by_host(const NetworkApi& net, std::span<const int> members);

// The rings of a ring collective, one per channel. When the communicator is blocks of
// g > 1 consecutive ranks on distinct hosts (the usual layout), NCCL runs one channel
// per GPU so that every NIC carries inter-node traffic; channel c enters host b at local
// rank (c - b) mod g and leaves it towards the same local rank of host b + 1 (a same-rail
// hop). Otherwise a single ring in communicator order.
std::vector<std::vector<int>> ring_channels(const NetworkApi& net, std::span<const int> members);

struct PathStats {
  double latency_sum_s = 0;      // sum over the hops
  double latency_max_s = 0;      // slowest single hop
  double min_bandwidth_Bps = 0;  // narrowest hop
  int hops = 0;
};

// Stats over members[i] -> members[i+1] (and members.back() -> members.front() when
// `closed`); nullopt when the backend gives no estimate for some hop.
std::optional<PathStats> hop_stats(const NetworkApi& net, std::span<const int> members,
                                   bool closed);

}  // namespace overlapsim::sim::detail
