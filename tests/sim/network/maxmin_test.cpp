#include "sim/network/maxmin.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

using overlapsim::sim::MaxMinSolver;
using Res = MaxMinSolver::ResourceId;
using Flow = MaxMinSolver::FlowId;

namespace {

Flow add(MaxMinSolver& s, std::vector<Res> path, std::uint32_t multiplicity = 1) {
  return s.add_flow(path, multiplicity);
}

// The defining property of a max-min fair allocation: every flow with resources crosses a
// saturated resource on which no other flow gets more than it does.
void expect_max_min_fair(const MaxMinSolver& s, const std::vector<Flow>& flows) {
  std::vector<double> load(s.num_resources(), 0.0);
  std::vector<double> max_rate(s.num_resources(), 0.0);
  for (Flow f : flows) {
    for (Res r : s.resources_of(f)) {
      load[r] += s.multiplicity(f) * s.rate_Bps(f);
      max_rate[r] = std::max(max_rate[r], s.rate_Bps(f));
    }
  }
  for (Res r = 0; r < s.num_resources(); ++r)
    EXPECT_LE(load[r], s.capacity_Bps(r) * (1 + 1e-9)) << "resource " << r << " over capacity";
  for (Flow f : flows) {
    bool has_bottleneck = false;
    for (Res r : s.resources_of(f)) {
      const bool saturated = load[r] >= s.capacity_Bps(r) * (1 - 1e-9);
      const bool largest = s.rate_Bps(f) >= max_rate[r] * (1 - 1e-9);
      has_bottleneck = has_bottleneck || (saturated && largest);
    }
    EXPECT_TRUE(has_bottleneck) << "flow " << f << " (rate " << s.rate_Bps(f)
                                << ") has no bottleneck resource";
  }
}

// An incremental solve must give every live flow the rate a solver built from scratch with
// the same resources and flows gives it.
void expect_equals_fresh_solve(const MaxMinSolver& s, const std::vector<double>& caps,
                               const std::vector<Flow>& live, const std::string& where) {
  MaxMinSolver fresh;
  for (double c : caps) fresh.add_resource(c);
  std::vector<Flow> fresh_ids;
  for (Flow f : live) fresh_ids.push_back(fresh.add_flow(s.resources_of(f), s.multiplicity(f)));
  fresh.solve();
  for (std::size_t i = 0; i < live.size(); ++i)
    EXPECT_NEAR(s.rate_Bps(live[i]), fresh.rate_Bps(fresh_ids[i]),
                1e-9 * fresh.rate_Bps(fresh_ids[i]))
        << where;
}

// Each of the `num_res` resources with probability 1 / `one_in`, never none.
std::vector<Res> random_path(std::mt19937_64& rng, int num_res, int one_in) {
  std::vector<Res> path;
  for (Res r = 0; r < static_cast<Res>(num_res); ++r)
    if (rng() % one_in == 0) path.push_back(r);
  if (path.empty()) path.push_back(static_cast<Res>(rng() % num_res));
  return path;
}

// A random path over island `island` of resources, the islands `per_island` wide each.
std::vector<Res> island_path(std::mt19937_64& rng, int island, int per_island) {
  std::vector<Res> path = random_path(rng, per_island, 3);
  for (Res& r : path) r += static_cast<Res>(island * per_island);
  return path;
}

void remove_random_flow(MaxMinSolver& s, std::vector<Flow>& live, std::mt19937_64& rng) {
  const std::size_t j = rng() % live.size();
  s.remove_flow(live[j]);
  live.erase(live.begin() + static_cast<std::ptrdiff_t>(j));
}

}  // namespace

TEST(MaxMinSolver, OneResourceTwoFlowsSplitEvenly) {
  MaxMinSolver s;
  const Res link = s.add_resource(10.0);
  const Flow a = add(s, {link});
  const Flow b = add(s, {link});
  s.solve();
  EXPECT_DOUBLE_EQ(s.rate_Bps(a), 5.0);
  EXPECT_DOUBLE_EQ(s.rate_Bps(b), 5.0);
  EXPECT_DOUBLE_EQ(s.load_Bps(link), 10.0);
}

TEST(MaxMinSolver, ParkingLotLongFlowGetsHalf) {
  // A long flow over n links and one short flow per link: every link carries two flows,
  // so all of them get C/2.
  for (int n : {1, 2, 5, 17}) {
    MaxMinSolver s;
    std::vector<Res> links;
    for (int i = 0; i < n; ++i) links.push_back(s.add_resource(100.0));
    const Flow long_flow = s.add_flow(links);
    std::vector<Flow> shorts;
    for (Res r : links) shorts.push_back(add(s, {r}));
    s.solve();
    EXPECT_DOUBLE_EQ(s.rate_Bps(long_flow), 50.0) << "n=" << n;
    for (Flow f : shorts) EXPECT_DOUBLE_EQ(s.rate_Bps(f), 50.0) << "n=" << n;
  }
}

TEST(MaxMinSolver, BottleneckBehindFastLink) {
  // Flow a crosses a fast link then a slow one; flow b only the fast one. a is held to the
  // slow link's 10, and b takes the rest of the fast link rather than half of it.
  MaxMinSolver s;
  const Res fast = s.add_resource(100.0);
  const Res slow = s.add_resource(10.0);
  const Flow a = add(s, {fast, slow});
  const Flow b = add(s, {fast});
  s.solve();
  EXPECT_DOUBLE_EQ(s.rate_Bps(a), 10.0);
  EXPECT_DOUBLE_EQ(s.rate_Bps(b), 90.0);
  EXPECT_DOUBLE_EQ(s.load_Bps(fast), 100.0);
}

TEST(MaxMinSolver, TwoLevels) {
  // L0 (1) holds f0 to 1; the other two flows on L1 (4) split what f0 leaves: 1.5 each.
  MaxMinSolver s;
  const Res l0 = s.add_resource(1.0);
  const Res l1 = s.add_resource(4.0);
  const Flow f0 = add(s, {l0, l1});
  const Flow f1 = add(s, {l1});
  const Flow f2 = add(s, {l1});
  s.solve();
  EXPECT_DOUBLE_EQ(s.rate_Bps(f0), 1.0);
  EXPECT_DOUBLE_EQ(s.rate_Bps(f1), 1.5);
  EXPECT_DOUBLE_EQ(s.rate_Bps(f2), 1.5);
}

TEST(MaxMinSolver, MultiplicityCountsEachMember) {
  // Three identical flows folded into one plus one single flow on a link of 8: each of the
  // four members gets 2, the folded flow loads the link with 6.
  MaxMinSolver s;
  const Res link = s.add_resource(8.0);
  const Flow triple = add(s, {link}, 3);
  const Flow single = add(s, {link});
  s.solve();
  EXPECT_DOUBLE_EQ(s.rate_Bps(triple), 2.0);
  EXPECT_DOUBLE_EQ(s.rate_Bps(single), 2.0);
  EXPECT_DOUBLE_EQ(s.load_Bps(link), 8.0);
}

TEST(MaxMinSolver, MultiplicityEqualsSeparateFlows) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 20; ++trial) {
    MaxMinSolver folded, separate;
    const int num_res = 6;
    for (int r = 0; r < num_res; ++r) {
      const double cap = std::uniform_real_distribution<double>(1.0, 50.0)(rng);
      folded.add_resource(cap);
      separate.add_resource(cap);
    }
    std::vector<std::pair<Flow, std::vector<Flow>>> pairs;
    for (int i = 0; i < 8; ++i) {
      const std::vector<Res> path = random_path(rng, num_res, 3);
      const auto k = static_cast<std::uint32_t>(1 + rng() % 4);
      std::vector<Flow> members;
      for (std::uint32_t j = 0; j < k; ++j) members.push_back(separate.add_flow(path));
      pairs.emplace_back(folded.add_flow(path, k), members);
    }
    folded.solve();
    separate.solve();
    for (const auto& [f, members] : pairs)
      for (Flow m : members) EXPECT_NEAR(folded.rate_Bps(f), separate.rate_Bps(m), 1e-9);
  }
}

TEST(MaxMinSolver, WeightedFlowLoadsEachResourceByItsWeight) {
  // An aggregate of 3 members on A (capacity 6), one of which also crosses B (capacity
  // 10), beside a plain flow on B. A saturates first, at 6 / 3 = 2: the aggregate freezes
  // at 2 and loads B with 1 x 2; the plain flow takes the remaining 8 of B.
  MaxMinSolver s;
  const Res a = s.add_resource(6.0);
  const Res b = s.add_resource(10.0);
  const std::vector<Res> path = {a, b};
  const std::vector<std::uint32_t> weights = {3, 1};
  const Flow aggregate = s.add_weighted_flow(path, weights);
  const Flow plain = add(s, {b});
  s.solve();
  EXPECT_DOUBLE_EQ(s.rate_Bps(aggregate), 2.0);
  EXPECT_DOUBLE_EQ(s.rate_Bps(plain), 8.0);
  EXPECT_DOUBLE_EQ(s.load_Bps(a), 6.0);
  EXPECT_DOUBLE_EQ(s.load_Bps(b), 10.0);
  EXPECT_EQ(s.multiplicity(aggregate), 3u);
  EXPECT_EQ(s.weights_of(aggregate)[1], 1u);
  // Removing the aggregate gives B back to the plain flow.
  s.remove_flow(aggregate);
  s.solve();
  EXPECT_DOUBLE_EQ(s.rate_Bps(plain), 10.0);
  EXPECT_DOUBLE_EQ(s.load_Bps(b), 10.0);
}

TEST(MaxMinSolver, WeightedFlowOfSymmetricMembersEqualsSeparateFlows) {
  // Four members, member i on its own source link S_i and destination link D_(i+1 mod 4)
  // (a shifted exchange), with a shared trunk: symmetric, so every member gets the same
  // max-min rate, which the aggregate (weight 1 on each S and D, 4 on the trunk) reproduces.
  MaxMinSolver folded, separate;
  std::vector<Res> src, dst;
  for (int i = 0; i < 4; ++i) {
    src.push_back(folded.add_resource(5.0));
    separate.add_resource(5.0);
  }
  for (int i = 0; i < 4; ++i) {
    dst.push_back(folded.add_resource(7.0));
    separate.add_resource(7.0);
  }
  const Res trunk = folded.add_resource(12.0);
  separate.add_resource(12.0);
  std::vector<Res> path = {trunk};
  std::vector<std::uint32_t> weights = {4};
  std::vector<Flow> members;
  for (int i = 0; i < 4; ++i) {
    path.push_back(src[i]);
    path.push_back(dst[(i + 1) % 4]);
    weights.push_back(1);
    weights.push_back(1);
    members.push_back(separate.add_flow(std::vector<Res>{src[i], trunk, dst[(i + 1) % 4]}));
  }
  const Flow aggregate = folded.add_weighted_flow(path, weights);
  folded.solve();
  separate.solve();
  for (Flow m : members) EXPECT_DOUBLE_EQ(separate.rate_Bps(m), 3.0);  // 12 / 4
  EXPECT_DOUBLE_EQ(folded.rate_Bps(aggregate), 3.0);
  for (Res r = 0; r < folded.num_resources(); ++r)
    EXPECT_DOUBLE_EQ(folded.load_Bps(r), separate.load_Bps(r)) << "resource " << r;
}

TEST(MaxMinSolver, WeightedFlowRejectsBadWeights) {
  MaxMinSolver s;
  const Res a = s.add_resource(1.0);
  const std::vector<Res> path = {a};
  const std::vector<std::uint32_t> zero = {0}, two = {1, 1};
  EXPECT_THROW(s.add_weighted_flow(path, zero), std::invalid_argument);
  EXPECT_THROW(s.add_weighted_flow(path, two), std::invalid_argument);
  EXPECT_EQ(s.num_active(), 0u);
}

TEST(MaxMinSolver, FlowWithoutResourcesIsUnconstrained) {
  MaxMinSolver s;
  const Res link = s.add_resource(10.0);
  const Flow free_flow = s.add_flow({});
  const Flow a = add(s, {link});
  s.solve();
  EXPECT_EQ(s.rate_Bps(free_flow), std::numeric_limits<double>::infinity());
  EXPECT_DOUBLE_EQ(s.rate_Bps(a), 10.0);
  EXPECT_DOUBLE_EQ(s.load_Bps(link), 10.0);
  s.remove_flow(free_flow);
  s.solve();
  EXPECT_DOUBLE_EQ(s.rate_Bps(a), 10.0);
}

TEST(MaxMinSolver, RemovalCanLowerAnotherFlow) {
  // Max-min rates are not monotone in the flow set: removing d lets b rise on L0, which
  // takes L1 capacity from c (6.67 -> 5). The partial re-solve must catch that.
  MaxMinSolver s;
  const Res l0 = s.add_resource(10.0);
  const Res l1 = s.add_resource(10.0);
  const Flow a = add(s, {l0});
  const Flow b = add(s, {l0, l1});
  const Flow c = add(s, {l1});
  const Flow d = add(s, {l0});
  s.solve();
  EXPECT_NEAR(s.rate_Bps(b), 10.0 / 3, 1e-12);
  EXPECT_NEAR(s.rate_Bps(c), 20.0 / 3, 1e-12);
  s.remove_flow(d);
  EXPECT_EQ(s.solve().size(), 3u);  // d had the lowest rate: everyone is re-solved
  EXPECT_DOUBLE_EQ(s.rate_Bps(a), 5.0);
  EXPECT_DOUBLE_EQ(s.rate_Bps(b), 5.0);
  EXPECT_DOUBLE_EQ(s.rate_Bps(c), 5.0);
}

TEST(MaxMinSolver, PartialResolveTouchesOnlyFasterFlows) {
  // Slow flows (on a 1-capacity link) stay; removing a fast flow re-solves only fast ones.
  MaxMinSolver s;
  const Res slow = s.add_resource(1.0);
  const Res fast = s.add_resource(100.0);
  std::vector<Flow> slow_flows, fast_flows;
  for (int i = 0; i < 10; ++i) slow_flows.push_back(add(s, {slow}));
  for (int i = 0; i < 4; ++i) fast_flows.push_back(add(s, {fast}));
  EXPECT_EQ(s.solve().size(), 14u);
  s.remove_flow(fast_flows[0]);
  const auto recomputed = s.solve();
  EXPECT_EQ(recomputed.size(), 3u);
  for (Flow f : slow_flows) EXPECT_DOUBLE_EQ(s.rate_Bps(f), 0.1);
  for (int i = 1; i < 4; ++i) EXPECT_NEAR(s.rate_Bps(fast_flows[i]), 100.0 / 3, 1e-12);
  EXPECT_TRUE(s.solve().empty());  // nothing changed since
}

TEST(MaxMinSolver, AddingAFastFlowLeavesSlowerFlowsAlone) {
  // Ten flows held to 0.1 on a slow link; adding a flow on a separate fast link (and one
  // that joins the fast flows) must not re-solve the slow ones: capacity / flows on the
  // new flows' resources (100 / 2) bounds every level that can change from below.
  MaxMinSolver s;
  const Res slow = s.add_resource(1.0);
  const Res fast = s.add_resource(100.0);
  std::vector<Flow> slow_flows;
  for (int i = 0; i < 10; ++i) slow_flows.push_back(add(s, {slow}));
  const Flow f1 = add(s, {fast});
  s.solve();
  const Flow f2 = add(s, {fast});
  const auto recomputed = s.solve();
  EXPECT_EQ(recomputed.size(), 2u);
  EXPECT_EQ(s.partial_solves(), 1u);
  EXPECT_DOUBLE_EQ(s.rate_Bps(f1), 50.0);
  EXPECT_DOUBLE_EQ(s.rate_Bps(f2), 50.0);
  for (Flow f : slow_flows) EXPECT_DOUBLE_EQ(s.rate_Bps(f), 0.1);
  // A flow across both links has the slow link's bound (1/11): everyone is re-solved.
  const Flow both = add(s, {slow, fast});
  EXPECT_EQ(s.solve().size(), 13u);
  EXPECT_NEAR(s.rate_Bps(both), 1.0 / 11, 1e-12);
  EXPECT_NEAR(s.rate_Bps(f1), (100.0 - 1.0 / 11) / 2, 1e-12);
}

TEST(MaxMinSolver, IncrementalSolvesMatchFreshSolves) {
  // Random networks; add and remove flows in rounds; after each solve the rates must equal
  // a solver built from scratch with the same active flows, and be max-min fair.
  std::mt19937_64 rng(12345);
  std::uint64_t partial_solves = 0;
  for (int trial = 0; trial < 60; ++trial) {
    MaxMinSolver s;
    const int num_res = 3 + static_cast<int>(rng() % 12);
    std::vector<double> caps;
    for (int r = 0; r < num_res; ++r) {
      caps.push_back(std::uniform_real_distribution<double>(1.0, 100.0)(rng));
      s.add_resource(caps.back());
    }
    std::vector<Flow> live;
    for (int round = 0; round < 16; ++round) {
      // Additions, removals, or both before one solve.
      const int kind = round == 0 ? 0 : static_cast<int>(rng() % 3);
      if (kind != 1) {
        const int n = 1 + static_cast<int>(rng() % 15);
        for (int i = 0; i < n; ++i) {
          const std::vector<Res> path = random_path(rng, num_res, 4);
          live.push_back(s.add_flow(path, static_cast<std::uint32_t>(1 + rng() % 3)));
        }
      }
      if (kind != 0) {
        const std::size_t n = std::min<std::size_t>(live.size(), 1 + rng() % 4);
        for (std::size_t i = 0; i < n; ++i) remove_random_flow(s, live, rng);
      }
      s.solve();
      expect_equals_fresh_solve(
          s, caps, live, "trial " + std::to_string(trial) + " round " + std::to_string(round));
      expect_max_min_fair(s, live);
    }
    partial_solves += s.partial_solves();
  }
  EXPECT_GT(partial_solves, 30u);  // the incremental path was exercised
}

// Disjoint islands of resources (a pipeline's sends on their own NICs): a change in one
// island re-solves only its component, and the rates must still equal a fresh solve.
TEST(MaxMinSolver, ComponentSolvesMatchFreshSolves) {
  std::mt19937_64 rng(2026);
  constexpr int kIslands = 8, kPerIsland = 40;
  MaxMinSolver s;
  std::vector<double> caps;
  for (int r = 0; r < kIslands * kPerIsland; ++r) {
    caps.push_back(std::uniform_real_distribution<double>(1.0, 100.0)(rng));
    s.add_resource(caps.back());
  }
  std::vector<Flow> live;
  for (int island = 0; island < kIslands; ++island)
    for (int i = 0; i < 10; ++i)
      live.push_back(s.add_flow(island_path(rng, island, kPerIsland),
                                static_cast<std::uint32_t>(1 + rng() % 3)));
  s.solve();
  expect_equals_fresh_solve(s, caps, live, "initial");
  for (int round = 0; round < 200; ++round) {
    const int island = static_cast<int>(rng() % kIslands);
    const int kind = static_cast<int>(rng() % 3);
    if (kind != 1)
      for (int i = 0, n = 1 + static_cast<int>(rng() % 3); i < n; ++i)
        live.push_back(s.add_flow(island_path(rng, island, kPerIsland),
                                  static_cast<std::uint32_t>(1 + rng() % 3)));
    if (kind != 0)
      for (int i = 0, n = 1 + static_cast<int>(rng() % 3); i < n && live.size() > 1; ++i)
        remove_random_flow(s, live, rng);
    s.solve();
    expect_equals_fresh_solve(s, caps, live, "round " + std::to_string(round));
    expect_max_min_fair(s, live);
  }
  EXPECT_GT(s.component_solves(), 50u);  // the component path was exercised
}

// The per-resource flow index the component solve walks is dropped once the active flows
// cross more than 2^20 resources in all (a ring's all-to-all), and built again once no flow
// is active; rates stay those of a fresh solve throughout.
TEST(MaxMinSolver, FlowIndexIsDroppedPastItsBoundAndRebuiltWhenIdle) {
  std::mt19937_64 rng(7);
  constexpr int kIslands = 9, kPerIsland = 64;
  MaxMinSolver s;
  std::vector<double> caps;
  for (int r = 0; r < kIslands * kPerIsland; ++r) {
    // Island 0 is wide, so that its many flows stay above every other island's level and
    // the walk would be taken if the index were there.
    caps.push_back(r < kPerIsland ? 1e12 : std::uniform_real_distribution<double>(1.0, 100.0)(rng));
    s.add_resource(caps.back());
  }
  auto churn = [&](std::vector<Flow>& live, int rounds, const std::string& phase) {
    for (int round = 0; round < rounds; ++round) {
      const int island = 1 + static_cast<int>(rng() % (kIslands - 1));
      for (int i = 0; i < 3; ++i) live.push_back(s.add_flow(island_path(rng, island, kPerIsland)));
      s.remove_flow(live[live.size() - 4]);
      live.erase(live.end() - 4);
      s.solve();
      expect_equals_fresh_solve(s, caps, live, phase + " round " + std::to_string(round));
    }
  };
  std::vector<Flow> live;
  for (int island = 1; island < kIslands; ++island)
    for (int i = 0; i < 10; ++i) live.push_back(s.add_flow(island_path(rng, island, kPerIsland)));
  s.solve();
  churn(live, 20, "indexed");
  const std::uint64_t indexed_component_solves = s.component_solves();
  EXPECT_GT(indexed_component_solves, 0u);

  // 16,400 flows over all 64 resources of island 0: 1,049,600 incidences, past the bound.
  std::vector<Flow> big;
  std::vector<Res> whole(kPerIsland);
  for (int r = 0; r < kPerIsland; ++r) whole[r] = static_cast<Res>(r);
  for (int i = 0; i < 16400; ++i) big.push_back(s.add_flow(whole));
  s.solve();
  std::vector<Flow> all = big;
  all.insert(all.end(), live.begin(), live.end());
  expect_equals_fresh_solve(s, caps, all, "past the bound");
  churn(all, 20, "unindexed");  // the churn that walked components above
  EXPECT_EQ(s.component_solves(), indexed_component_solves);  // no index, no walk

  for (Flow f : all) s.remove_flow(f);
  s.solve();
  live.clear();
  for (int island = 1; island < kIslands; ++island)
    for (int i = 0; i < 10; ++i) live.push_back(s.add_flow(island_path(rng, island, kPerIsland)));
  s.solve();
  churn(live, 20, "rebuilt");
  EXPECT_GT(s.component_solves(), indexed_component_solves);  // the index is back
}

// Flows crossing hundreds of resources (like an all-to-all's aggregates): after the first
// freezes most queued resources have no unfrozen flow left, which the filling drops from its
// heap in bulk; the allocation must stay max-min fair, and incremental solves equal fresh ones.
TEST(MaxMinSolver, LongPathsStayMaxMinFair) {
  std::mt19937_64 rng(777);
  for (int trial = 0; trial < 20; ++trial) {
    MaxMinSolver s;
    std::vector<double> caps;
    auto resource = [&] {
      caps.push_back(std::uniform_real_distribution<double>(1.0, 100.0)(rng));
      return s.add_resource(caps.back());
    };
    // A few shared resources, and each flow's own long path (its NIC links, say): once a
    // flow freezes, its own resources are dead entries.
    std::vector<Res> shared;
    for (int r = 0; r < 10; ++r) shared.push_back(resource());
    std::vector<Flow> live;
    const int flows = 10 + static_cast<int>(rng() % 20);
    for (int i = 0; i < flows; ++i) {
      std::vector<Res> path;
      for (int k = 0; k < 1 + static_cast<int>(rng() % 3); ++k) {
        const Res r = shared[rng() % shared.size()];
        if (std::find(path.begin(), path.end(), r) == path.end()) path.push_back(r);
      }
      const int own = 50 + static_cast<int>(rng() % 100);
      for (int k = 0; k < own; ++k) path.push_back(resource());
      live.push_back(s.add_flow(path, static_cast<std::uint32_t>(1 + rng() % 3)));
    }
    s.solve();
    expect_max_min_fair(s, live);
    // Remove a few and re-solve incrementally: equal to a fresh solve.
    for (int k = 0; k < 3; ++k) remove_random_flow(s, live, rng);
    s.solve();
    expect_equals_fresh_solve(s, caps, live, "trial " + std::to_string(trial));
    expect_max_min_fair(s, live);
  }
}

// Capacities from a small set give the filling few distinct levels, which it orders by a
// counting sort rather than a heap; more than 16 distinct levels take the heap. Both must
// freeze resources lowest level first (a resource taken too early would freeze its flows
// above their bottleneck's share and overload it).
TEST(MaxMinSolver, FewAndManyDistinctLevelsStayMaxMinFair) {
  std::mt19937_64 rng(4242);
  for (int trial = 0; trial < 40; ++trial) {
    MaxMinSolver s;
    const bool few = trial % 2 == 0;
    const int num_res = 20 + static_cast<int>(rng() % 40);
    std::vector<double> caps;
    for (int r = 0; r < num_res; ++r) {
      caps.push_back(few ? 10.0 * static_cast<double>(1 + rng() % 3)
                         : std::uniform_real_distribution<double>(1.0, 100.0)(rng));
      s.add_resource(caps.back());
    }
    std::vector<Flow> live;
    for (int round = 0; round < 8; ++round) {
      const int n = 1 + static_cast<int>(rng() % 20);
      for (int i = 0; i < n; ++i) live.push_back(add(s, random_path(rng, num_res, 8)));
      if (round > 0)
        for (int k = 0; k < 2 && !live.empty(); ++k) remove_random_flow(s, live, rng);
      s.solve();
      expect_max_min_fair(s, live);
      expect_equals_fresh_solve(
          s, caps, live, "trial " + std::to_string(trial) + " round " + std::to_string(round));
    }
  }
}

// Resources are taken lowest level first whatever their ids and first-touch order: the
// shared resource (id 0, level 60 / 3 = 20) comes after the two NIC-like ones (level 10
// each, a tie). Taken first it would freeze every flow at 20, over the small ones' capacity.
TEST(MaxMinSolver, LowerLevelsFreezeBeforeLowerIds) {
  MaxMinSolver s;
  const Res shared = s.add_resource(60);
  const Res small_a = s.add_resource(10);
  const Res small_b = s.add_resource(10);
  const Flow c = add(s, {shared});
  const Flow b = add(s, {small_b, shared});
  const Flow a = add(s, {shared, small_a});
  s.solve();
  EXPECT_EQ(s.rate_Bps(a), 10.0);
  EXPECT_EQ(s.rate_Bps(b), 10.0);
  EXPECT_EQ(s.rate_Bps(c), 40.0);
}

TEST(MaxMinSolver, DeterministicBitForBit) {
  auto run = [] {
    std::mt19937_64 rng(99);
    MaxMinSolver s;
    for (int r = 0; r < 20; ++r)
      s.add_resource(std::uniform_real_distribution<double>(1.0, 10.0)(rng));
    std::vector<Flow> flows;
    for (int i = 0; i < 200; ++i) {
      std::vector<Res> path;
      for (int h = 0; h < 4; ++h) path.push_back(static_cast<Res>(rng() % 20));
      flows.push_back(s.add_flow(path));
    }
    s.solve();
    for (int i = 0; i < 50; ++i) s.remove_flow(flows[static_cast<std::size_t>(i * 3)]);
    s.solve();
    std::vector<double> rates;
    for (Flow f : flows)
      if (s.is_active(f)) rates.push_back(s.rate_Bps(f));
    return rates;
  };
  const auto first = run();
  const auto second = run();
  ASSERT_EQ(first.size(), second.size());
  for (std::size_t i = 0; i < first.size(); ++i) EXPECT_EQ(first[i], second[i]);
}

TEST(MaxMinSolver, RejectsBadInput) {
  MaxMinSolver s;
  EXPECT_THROW(s.add_resource(0.0), std::invalid_argument);
  EXPECT_THROW(s.add_resource(-1.0), std::invalid_argument);
  EXPECT_THROW(s.add_resource(std::numeric_limits<double>::infinity()), std::invalid_argument);
  const Res r = s.add_resource(1.0);
  EXPECT_THROW(add(s, {r + 1}), std::invalid_argument);
  EXPECT_THROW(add(s, {r}, 0), std::invalid_argument);
  const Flow f = add(s, {r});
  s.remove_flow(f);
  EXPECT_THROW(s.remove_flow(f), std::invalid_argument);
  EXPECT_THROW(s.remove_flow(1234), std::invalid_argument);
}

TEST(MaxMinSolver, ReusesIdsAndCompactsPaths) {
  // Enough churn to trigger path-pool compaction; rates stay right afterwards.
  MaxMinSolver s;
  const Res a = s.add_resource(6.0);
  const Res b = s.add_resource(6.0);
  const Flow keep = add(s, {a, b});
  for (int round = 0; round < 40; ++round) {
    std::vector<Flow> batch;
    for (int i = 0; i < 20000; ++i) batch.push_back(add(s, {a, b, a, b}));
    s.solve();
    for (Flow f : batch) s.remove_flow(f);
  }
  const Flow other = add(s, {b});
  s.solve();
  EXPECT_DOUBLE_EQ(s.rate_Bps(keep), 3.0);
  EXPECT_DOUBLE_EQ(s.rate_Bps(other), 3.0);
  EXPECT_EQ(s.num_active(), 2u);
}
