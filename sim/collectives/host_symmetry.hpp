#pragma once
// Whether a communicator sits on the machine symmetrically enough that an all-pairs pattern
// can be simulated through one representative pair per class of equivalent pairs (what
// keeps a 16,384-rank all-to-all to a few hundred thousand transfers instead of 268
// million). The classes are host pairs inside one group of consecutive hosts (a leaf
// switch) and host pairs across groups.
#include <cstddef>
#include <optional>
#include <span>
#include <vector>

#include "sim/network/network_api.hpp"

namespace overlapsim::sim {
struct CollectiveTuning;
}

namespace overlapsim::sim::detail {

struct HostSymmetry {
  std::vector<std::vector<int>> hosts;  // members by host, as group_by_host
  std::size_t group_hosts = 1;          // L: consecutive hosts per group, divides hosts.size()
};

// The layout when the members are H >= 2 hosts of equally many members and the hosts cut
// into groups of L consecutive hosts such that, judged by the zero-load path estimate of a
// same-index and a cross-index member pair, every pair of hosts within a group looks alike
// and every pair across groups looks alike. Rows of up to kMaxProbedGroups groups are
// checked (first and last host of each), so that the check costs O(H) path estimates, not
// O(H^2). nullopt otherwise, or when the network gives no estimates.
std::optional<HostSymmetry> host_symmetry(const NetworkApi& net, std::span<const int> members);

inline constexpr std::size_t kMaxProbedGroups = 32;

// The layout to aggregate an all-pairs pattern over `members` by: host_symmetry() when the
// members make more than tuning.aggregate_min_pairs pairs, else nullopt (per pair).
std::optional<HostSymmetry> all_pairs_layout(const NetworkApi& net, std::span<const int> members,
                                             const CollectiveTuning& tuning);

}  // namespace overlapsim::sim::detail
