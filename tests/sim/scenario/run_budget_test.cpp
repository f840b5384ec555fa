// The run memory budget: the estimate grows with each count it is made of, never wraps, and
// the collective sizes it starts from are the transfer counts of the plans (closed forms).
#include "sim/scenario/run_budget.hpp"

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <cstdint>
#include <limits>

#include "sim/collectives/transfer_count.hpp"
#include "sim/engine/simulator.hpp"
#include "sim/network/flow_network.hpp"
#include "sim/topology/builders.hpp"

namespace overlapsim::sim {
namespace {

constexpr std::uint64_t kGiB = std::uint64_t{1} << 30;

RailFatTreeSpec fat_tree(int nodes, int gpus, int leaf_ports) {
  RailFatTreeSpec spec;
  spec.nodes = nodes;
  spec.node = NvSwitchNodeSpec{gpus, 450e9, 0.3e-6};
  spec.nics_per_node = gpus;
  spec.nic_bandwidth_Bps = 50e9;
  spec.gpu_nic_bandwidth_Bps = 63e9;
  spec.gpu_nic_latency_s = 1e-6;
  spec.link_latency_s = 0.15e-6;
  spec.leaf_down_ports = leaf_ports;
  return spec;
}

CollectiveRequest all_to_all(int n) {
  CollectiveRequest req;
  req.op = CollectiveOp::AllToAll;
  req.algo = Algorithm::Direct;
  for (int r = 0; r < n; ++r) req.ranks.push_back(r);
  req.bytes = kGiB;
  return req;
}

TEST(RunBudget, EstimateGrowsWithEveryCount) {
  const RunMemoryEstimate empty = estimate_run_memory({});
  EXPECT_GT(empty.total_bytes(), 0u);
  EXPECT_EQ(empty.total_bytes(), empty.base_bytes);
  for (int field = 0; field < 4; ++field) {
    RunSize s;
    std::uint64_t* counts[] = {&s.topology_vertices, &s.topology_links, &s.ops,
                               &s.transfers_in_flight};
    *counts[field] = 1'000'000;
    const std::uint64_t one = estimate_run_memory(s).total_bytes();
    *counts[field] = 2'000'000;
    const std::uint64_t two = estimate_run_memory(s).total_bytes();
    EXPECT_GT(one, empty.total_bytes()) << field;
    EXPECT_GT(two, one) << field;
  }
  // Flows grow linearly with transfers (each is a record, a route and solver entries).
  RunSize s1, s2, s3;
  s1.transfers_in_flight = 100'000'000;
  s2.transfers_in_flight = 200'000'000;
  s3.transfers_in_flight = 300'000'000;
  const std::uint64_t f1 = estimate_run_memory(s1).flow_bytes;
  const std::uint64_t f2 = estimate_run_memory(s2).flow_bytes;
  const std::uint64_t f3 = estimate_run_memory(s3).flow_bytes;
  EXPECT_GT(f2, f1);
  EXPECT_EQ(f3 - f2, f2 - f1);
}

TEST(RunBudget, HugeCountsSaturateInsteadOfWrapping) {
  RunSize s;
  s.transfers_in_flight = std::numeric_limits<std::uint64_t>::max() / 2;
  s.ops = std::numeric_limits<std::uint64_t>::max() / 3;
  const RunMemoryEstimate e = estimate_run_memory(s);
  EXPECT_GE(e.flow_bytes, s.transfers_in_flight);
  EXPECT_TRUE(over_memory_budget(e, std::numeric_limits<std::uint64_t>::max() - 1).has_value());
}

TEST(RunBudget, RefusesOnlyAboveTheLimit) {
  RunSize s;
  s.transfers_in_flight = 10'000'000;
  const RunMemoryEstimate e = estimate_run_memory(s);
  EXPECT_FALSE(over_memory_budget(e, e.total_bytes()).has_value());
  const auto reason = over_memory_budget(e, e.total_bytes() - 1);
  ASSERT_TRUE(reason.has_value());
  EXPECT_NE(reason->find("10000000 transfers in flight"), std::string::npos) << *reason;
  EXPECT_EQ(reason->find('\n'), std::string::npos);
}

TEST(RunBudget, DefaultLimitIsFourFifthsOfAvailableMemory) {
  const std::uint64_t physical = physical_memory_bytes();
  ASSERT_GT(physical, 0u);  // Linux: sysconf knows
  const std::uint64_t available = available_memory_bytes();
  EXPECT_GT(available, 0u);
  EXPECT_LE(available, physical);  // a ulimit or a container can only lower it
  EXPECT_EQ(default_memory_limit_bytes(), available / 5 * 4);
  EXPECT_EQ(max_ops_within(default_memory_limit_bytes()),
            default_memory_limit_bytes() / (estimate_run_memory(RunSize{0, 0, 1, 0}).graph_bytes));
}

// ASan's runtime, linked into a sanitized build's executables whether or not this file is
// instrumented (the test code is not by default: cmake/OverlapsimSanitizers.cmake).
extern "C" __attribute__((weak)) void __asan_init();

TEST(RunBudget, AnAddressSpaceLimitLowersTheDefault) {
  if (&__asan_init != nullptr)
    GTEST_SKIP() << "ASan reserves terabytes of address space; a limit would break it";
  rlimit saved{};
  ASSERT_EQ(getrlimit(RLIMIT_AS, &saved), 0);
  const std::uint64_t half = physical_memory_bytes() / 2;
  if (saved.rlim_cur != RLIM_INFINITY && saved.rlim_cur < half)
    GTEST_SKIP() << "the address space is limited below half of physical memory already";
  rlimit lowered = saved;
  lowered.rlim_cur = half;
  ASSERT_EQ(setrlimit(RLIMIT_AS, &lowered), 0);
  const std::uint64_t available = available_memory_bytes();
  ASSERT_EQ(setrlimit(RLIMIT_AS, &saved), 0);
  EXPECT_LE(available, half);
}

TEST(RunBudget, AllToAllTransfersAreThePlansCounts) {
  // 16 hosts x 4 GPUs on 4-host leaves: H = 16, g = 4, L = 4 (two classes of host pairs).
  const Topology topo = build_rail_fat_tree(fat_tree(16, 4, 4));
  Simulator sim;
  FlowNetwork net(sim, topo);
  const std::uint64_t n = 64, h = 16, g = 4;
  CollectiveTuning per_pair;
  per_pair.aggregate_min_pairs = std::numeric_limits<std::uint64_t>::max();
  EXPECT_EQ(peak_group_transfers(net, all_to_all(64), per_pair), n * (n - 1));
  per_pair.pxn = true;  // per (remote host, local index), plus NVLink legs
  EXPECT_EQ(peak_group_transfers(net, all_to_all(64), per_pair), n * (h - 1) + h * g * (g - 1));
  CollectiveTuning aggregated;
  aggregated.aggregate_min_pairs = 0;
  EXPECT_EQ(peak_group_transfers(net, all_to_all(64), aggregated), h * g * (g - 1) + 2 * h * g * g);
  aggregated.pxn = true;
  EXPECT_EQ(peak_group_transfers(net, all_to_all(64), aggregated), h * g * (g - 1) + 2 * h * g);
}

TEST(RunBudget, SixteenThousandRankAllToAllFitsOnlyAggregated) {
  // The shipped 2,048-node cluster's shape: 2,048 x 8 GPUs, 32 nodes per leaf.
  const Topology topo = build_rail_fat_tree(fat_tree(2048, 8, 32));
  CollectiveTuning per_pair;
  per_pair.aggregate_min_pairs = std::numeric_limits<std::uint64_t>::max();
  const RunSize refused = collective_run_size(topo, all_to_all(16384), per_pair);
  EXPECT_EQ(refused.transfers_in_flight, std::uint64_t{16384} * 16383);
  EXPECT_TRUE(over_memory_budget(estimate_run_memory(refused), 4 * kGiB).has_value());
  const RunSize runs = collective_run_size(topo, all_to_all(16384), CollectiveTuning{});
  EXPECT_EQ(runs.transfers_in_flight, 2048u * 8 * 7 + 2 * 2048 * 64);
  EXPECT_FALSE(over_memory_budget(estimate_run_memory(runs), 4 * kGiB).has_value())
      << estimate_run_memory(runs).explain();
}

// A flow keeps its route: on a ring an all-to-all's routes average n/4 links, and the run's
// memory grows with them (2,048 GPUs measured past 24 GB before it was killed), while a ring
// all-reduce's neighbour routes stay one link long.
TEST(RunBudget, LongRoutesOfARingCountInTheFlows) {
  RingSpec spec;
  spec.npus = 2048;
  spec.link_bandwidth_Bps = 50e9;
  spec.link_latency_s = 500e-9;
  const Topology ring = build_ring(spec);
  const RunSize pairs = collective_run_size(ring, all_to_all(2048), CollectiveTuning{});
  // The sample's mean is within a quarter of the exact n/4 = 512.
  EXPECT_GT(pairs.route_links_in_flight, pairs.transfers_in_flight * 384);
  EXPECT_LT(pairs.route_links_in_flight, pairs.transfers_in_flight * 640);
  EXPECT_TRUE(over_memory_budget(estimate_run_memory(pairs), 16 * kGiB).has_value())
      << estimate_run_memory(pairs).explain();
  CollectiveRequest all_reduce = all_to_all(2048);
  all_reduce.op = CollectiveOp::AllReduce;
  all_reduce.algo = Algorithm::Ring;
  const RunSize neighbours = collective_run_size(ring, all_reduce, CollectiveTuning{});
  EXPECT_EQ(neighbours.route_links_in_flight, neighbours.transfers_in_flight);
  // Routes no longer than the measured 6 links cost what they did.
  RunSize six = neighbours;
  six.route_links_in_flight = 6 * six.transfers_in_flight;
  RunSize unknown = neighbours;
  unknown.route_links_in_flight = 0;
  EXPECT_EQ(estimate_run_memory(six).flow_bytes, estimate_run_memory(unknown).flow_bytes);
}

TEST(RunBudget, StepSizeCountsEveryCommunicatorOfAUsedFamily) {
  const Topology topo = build_rail_fat_tree(fat_tree(4, 2, 4));  // 8 GPUs, one leaf
  StepGraph step;
  step.world_size = 8;
  step.groups = {
      {"tp", {0, 1}}, {"tp", {2, 3}}, {"tp", {4, 5}}, {"tp", {6, 7}}, {"dp", {0, 2, 4, 6}}};
  RankProgram rank;
  OpNode a2a;
  a2a.kind = OpKind::Collective;
  a2a.collective = CollectiveOp::AllToAll;
  a2a.comm_group = 0;
  boost::add_vertex(a2a, rank.graph);
  boost::add_vertex(OpNode{}, rank.graph);
  step.ranks.push_back(std::move(rank));
  const RunSize s = step_run_size(step, topo);
  EXPECT_EQ(s.ops, 2u);
  // Four tp groups of one host each: 2 x 1 transfers each; the dp family runs nothing.
  EXPECT_EQ(s.transfers_in_flight, 4u * 2);
  EXPECT_EQ(s.topology_links, topo.num_links());
}

}  // namespace
}  // namespace overlapsim::sim
