// Direct: every transfer of a step at once, one group per step; the network decides how
// the n(n-1) flows share links (the backend aggregates identical ones). This is how
// NCCL runs all-to-all (grouped point-to-point) and what PXN-less all-pairs
// allgather/reducescatter look like; allreduce is reducescatter then allgather.
//
// Above tuning.aggregate_min_pairs pairs, on a host-symmetric layout (host_symmetry.hpp),
// the pairs between hosts are built as one representative host pair per class with the
// class's size as copies: within a group of L hosts, host a sends to the next host of its
// group (L - 1 copies); across groups, to the host L further on (H - L copies). Both maps
// are bijections, so every link at a source, at a destination and between two groups
// carries the same weight as under the per-pair form, and each class gets the same
// max-min rate. The flow network puts pairs of one shape but different copies into
// different aggregates; where the per-pair form had them in one, both forms still end
// together when the links they share are the bottleneck (direct_test checks this on a
// rail fat-tree against the per-pair form). With static ECMP over several spines the
// representatives hash onto spines like a sample of the pairs: close, not exact.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <vector>

#include "sim/collectives/algorithms.hpp"
#include "sim/collectives/groups.hpp"
#include "sim/collectives/host_symmetry.hpp"

namespace overlapsim::sim::detail {
namespace {

// All-to-all with PXN: for a peer on another host, the sender's data goes over NVLink to
// the GPU of its own host with the peer's local index, and that GPU's NIC sends it to the
// peer (one rail). Both legs are in the same group (the proxy streams them). A host without
// that local index sends directly. Built per host pair and local index, so a 1,024-rank
// all-to-all on 8-GPU hosts is ~130k network transfers plus 8 x 8 per host, not 2n^2.
Phase pxn_all_pairs_phase(const NetworkApi& net, std::span<const int> members, std::uint64_t bytes,
                          const CollectiveTuning& tuning) {
  Phase phase;
  if (members.size() < 2 || bytes == 0) return phase;
  const auto hosts = group_by_host(net, members);
  std::vector<Transfer> transfers;
  // Sized first: a 1,024-rank all-to-all is ~137k transfers, and growing the vector to
  // that was most of building the phase.
  std::size_t count = 0;
  for (const auto& src : hosts) {
    const std::size_t g = src.size();
    for (const auto& dst : hosts) {
      if (&dst == &src) continue;
      const std::size_t d = dst.size();
      count += std::min(d, g) + (d > g ? (d - g) * g : 0);  // one each, or one per sender
    }
    count += g * (g - 1);
  }
  transfers.reserve(count);
  for (std::size_t hs = 0; hs < hosts.size(); ++hs) {
    const auto& src = hosts[hs];
    const std::size_t g = src.size();
    // relayed[a][b]: peers whose data rank src[a] hands to src[b] (its own host's peers
    // included: the direct intra-host part of the all-to-all).
    std::vector<std::uint64_t> relayed(g * g, 1);
    for (std::size_t hd = 0; hd < hosts.size(); ++hd) {
      if (hd == hs) continue;
      for (std::size_t l = 0; l < hosts[hd].size(); ++l) {
        const int dst = hosts[hd][l];
        if (l < g) {
          transfers.push_back(Transfer{src[l], dst, bytes * g});
          for (std::size_t a = 0; a < g; ++a) ++relayed[a * g + l];
        } else {
          for (int s : src) transfers.push_back(Transfer{s, dst, bytes});
        }
      }
    }
    for (std::size_t a = 0; a < g; ++a)
      for (std::size_t b = 0; b < g; ++b)
        if (a != b) transfers.push_back(Transfer{src[a], src[b], bytes * relayed[a * g + b]});
  }
  phase.transfers = canonical_transfers(std::move(transfers));
  phase.delay_after_s = tuning.step_latency_s;
  return phase;
}

// The partner of host a in each class of a symmetric layout, with the class size.
struct HostClass {
  std::size_t (*partner)(std::size_t a, std::size_t l, std::size_t h);
  std::uint32_t copies;
};

std::size_t next_in_group(std::size_t a, std::size_t l, std::size_t) {
  return a - a % l + (a % l + 1) % l;
}
std::size_t next_group(std::size_t a, std::size_t l, std::size_t h) { return (a + l) % h; }

std::vector<HostClass> host_classes(const HostSymmetry& sym) {
  const std::size_t h = sym.hosts.size(), l = sym.group_hosts;
  std::vector<HostClass> classes;
  if (l > 1) classes.push_back({next_in_group, static_cast<std::uint32_t>(l - 1)});
  if (l < h) classes.push_back({next_group, static_cast<std::uint32_t>(h - l)});
  return classes;
}

// The all-pairs phase of a symmetric layout: every pair inside a host, and one
// representative host pair per class for the rest.
Phase aggregate_all_pairs_phase(const HostSymmetry& sym, std::uint64_t bytes,
                                const CollectiveTuning& tuning) {
  Phase phase;
  const std::size_t h = sym.hosts.size(), l = sym.group_hosts;
  const auto classes = host_classes(sym);
  for (std::size_t a = 0; a < h; ++a) {
    const auto& src = sym.hosts[a];
    for (int s : src)
      for (int d : src)
        if (s != d) phase.transfers.push_back(Transfer{s, d, bytes});
    for (const HostClass& c : classes)
      for (int s : src)
        for (int d : sym.hosts[c.partner(a, l, h)])
          phase.transfers.push_back(Transfer{s, d, bytes, c.copies});
  }
  phase.transfers = canonical_transfers(std::move(phase.transfers));
  phase.delay_after_s = tuning.step_latency_s;
  return phase;
}

// The PXN all-to-all of a symmetric layout: every host's NVLink legs (each carries the
// data of all H hosts: its own peers' and the relayed), and per class one representative
// host pair's same-index (one rail) transfers of g shares each.
Phase aggregate_pxn_phase(const HostSymmetry& sym, std::uint64_t bytes,
                          const CollectiveTuning& tuning) {
  Phase phase;
  const std::size_t h = sym.hosts.size(), l = sym.group_hosts, g = sym.hosts.front().size();
  const auto classes = host_classes(sym);
  for (std::size_t a = 0; a < h; ++a) {
    const auto& src = sym.hosts[a];
    for (int s : src)
      for (int d : src)
        if (s != d) phase.transfers.push_back(Transfer{s, d, bytes * h});
    for (const HostClass& c : classes) {
      const auto& dst = sym.hosts[c.partner(a, l, h)];
      for (std::size_t i = 0; i < g; ++i)
        phase.transfers.push_back(Transfer{src[i], dst[i], bytes * g, c.copies});
    }
  }
  phase.transfers = canonical_transfers(std::move(phase.transfers));
  phase.delay_after_s = tuning.step_latency_s;
  return phase;
}

}  // namespace

Phase all_pairs_phase(const NetworkApi& net, std::span<const int> members, std::uint64_t bytes,
                      const CollectiveTuning& tuning) {
  if (bytes > 0)
    if (const auto sym = all_pairs_layout(net, members, tuning))
      return aggregate_all_pairs_phase(*sym, bytes, tuning);
  return all_pairs_phase(members, bytes, tuning);
}

Phase all_to_all_phase(const NetworkApi& net, std::span<const int> members, std::uint64_t bytes,
                       const CollectiveTuning& tuning) {
  if (!tuning.pxn) return all_pairs_phase(net, members, bytes, tuning);
  if (bytes > 0)
    if (const auto sym = all_pairs_layout(net, members, tuning))
      return aggregate_pxn_phase(*sym, bytes, tuning);
  return pxn_all_pairs_phase(net, members, bytes, tuning);
}

Phase all_pairs_phase(std::span<const int> members, std::uint64_t bytes,
                      const CollectiveTuning& tuning) {
  Phase phase;
  const std::size_t n = members.size();
  if (n < 2 || bytes == 0) return phase;
  phase.transfers.reserve(n * (n - 1));
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j)
      if (i != j) phase.transfers.push_back(Transfer{members[i], members[j], bytes});
  phase.delay_after_s = tuning.step_latency_s;
  return phase;
}

Plan direct_plan(const NetworkApi& net, const CollectiveRequest& req,
                 const CollectiveTuning& tuning) {
  Plan plan;
  plan.start_delay_s = tuning.launch_latency_s;
  const std::size_t n = req.ranks.size();
  const std::uint64_t share = ceil_div(req.bytes, n);
  switch (req.op) {
    case CollectiveOp::AllToAll:
      append_phase(plan, all_to_all_phase(net, req.ranks, share, tuning));
      break;
    case CollectiveOp::AllGather:
    case CollectiveOp::ReduceScatter:
      append_phase(plan, all_pairs_phase(net, req.ranks, share, tuning));
      break;
    case CollectiveOp::AllReduce:
      append_phase(plan, all_pairs_phase(net, req.ranks, share, tuning));  // reduce-scatter
      append_phase(plan, all_pairs_phase(net, req.ranks, share, tuning));  // allgather
      break;
    case CollectiveOp::Broadcast: {
      Phase phase;
      const int root = req.ranks[static_cast<std::size_t>(req.root)];
      for (int r : req.ranks)
        if (r != root && req.bytes > 0) phase.transfers.push_back(Transfer{root, r, req.bytes});
      phase.delay_after_s = tuning.step_latency_s;
      append_phase(plan, std::move(phase));
      break;
    }
    case CollectiveOp::SendRecv: {
      Phase phase;
      if (req.bytes > 0)
        phase.transfers.push_back(
            Transfer{req.ranks.front(), req.ranks[static_cast<std::size_t>(req.peer)], req.bytes});
      phase.delay_after_s = tuning.step_latency_s;
      append_phase(plan, std::move(phase));
      break;
    }
  }
  return plan;
}

}  // namespace overlapsim::sim::detail
