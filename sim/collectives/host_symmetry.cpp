#include "sim/collectives/host_symmetry.hpp"

#include <algorithm>
#include <cstdint>

#include "sim/collectives/collective.hpp"
#include "sim/collectives/groups.hpp"

namespace overlapsim::sim::detail {
namespace {

// What a host pair looks like from outside: the path of its first members (same local
// index: one rail) and of the source's last member to the destination's first (a
// different index when hosts hold several members).
struct Signature {
  PathEstimate same_index;
  PathEstimate cross_index;
  bool operator==(const Signature& o) const {
    return same_index.latency_s == o.same_index.latency_s &&
           same_index.bandwidth_Bps == o.same_index.bandwidth_Bps &&
           cross_index.latency_s == o.cross_index.latency_s &&
           cross_index.bandwidth_Bps == o.cross_index.bandwidth_Bps;
  }
};

std::optional<Signature> signature(const NetworkApi& net, const std::vector<int>& src,
                                   const std::vector<int>& dst) {
  const auto same = net.path_estimate(src.front(), dst.front());
  const auto cross = net.path_estimate(src.back(), dst.front());
  if (!same || !cross) return std::nullopt;
  return Signature{*same, *cross};
}

}  // namespace

std::optional<HostSymmetry> host_symmetry(const NetworkApi& net, std::span<const int> members) {
  HostSymmetry sym;
  sym.hosts = group_by_host(net, members);
  const std::size_t h = sym.hosts.size();
  if (h < 2) return std::nullopt;
  const std::size_t g = sym.hosts.front().size();
  for (const auto& host : sym.hosts)
    if (host.size() != g) return std::nullopt;

  // Row 0 fixes L: the hosts after host 0 that look like host 1 are its group.
  std::vector<Signature> row(h);
  for (std::size_t b = 1; b < h; ++b) {
    const auto s = signature(net, sym.hosts[0], sym.hosts[b]);
    if (!s) return std::nullopt;
    row[b] = *s;
  }
  std::size_t l = 1;
  while (l < h && row[l] == row[1]) ++l;
  if (l == h) {
    sym.group_hosts = h;  // every pair alike: one group
  } else {
    if (h % l != 0) return std::nullopt;
    sym.group_hosts = l;
  }
  const std::size_t groups = h / sym.group_hosts;
  const Signature within = row[1];
  const Signature across = groups > 1 ? row[sym.group_hosts] : row[1];

  // Rows of evenly spread groups: each pair must be `within` inside a group, `across` out.
  const std::size_t probed = std::min(groups, kMaxProbedGroups);
  for (std::size_t k = 0; k < probed; ++k) {
    const std::size_t group = probed == 1 ? 0 : k * (groups - 1) / (probed - 1);
    for (const std::size_t a :
         {group * sym.group_hosts, group * sym.group_hosts + sym.group_hosts - 1}) {
      for (std::size_t b = 0; b < h; ++b) {
        if (b == a) continue;
        const auto s = signature(net, sym.hosts[a], sym.hosts[b]);
        const bool same_group = a / sym.group_hosts == b / sym.group_hosts;
        if (!s || !(*s == (same_group ? within : across))) return std::nullopt;
      }
    }
  }
  return sym;
}

std::optional<HostSymmetry> all_pairs_layout(const NetworkApi& net, std::span<const int> members,
                                             const CollectiveTuning& tuning) {
  const std::uint64_t n = members.size();
  if (n < 2 || n * (n - 1) <= tuning.aggregate_min_pairs) return std::nullopt;
  return host_symmetry(net, members);
}

}  // namespace overlapsim::sim::detail
