// NCCL's costs on top of the flow network, in closed form: the latency terms are NCCL's
// tuning.cc formulas less the wire latency the flows pay, the efficiencies its bus
// bandwidth refinements, the all-to-all its p2p launch, per-peer posts and PXN routing.
#include "sim/collectives/nccl_call_cost.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <tuple>

#include "sim/collectives/algorithms.hpp"
#include "sim/collectives/collective_cost_model.hpp"
#include "sim/collectives/nccl_cost.hpp"
#include "tests/sim/collectives/analytic_network.hpp"

namespace overlapsim::sim {
namespace {

using detail::CommShape;
using detail::nccl_call_cost;
using detail::nccl_costs;
using detail::Protocol;
using testing::AnalyticNetwork;
using testing::iota_ranks;

constexpr double kUs = 1e-6;
constexpr std::uint64_t kGiB = 1ull << 30;

const detail::CostEstimate& find(const std::vector<detail::CostEstimate>& costs, Algorithm a,
                                 Protocol p) {
  for (const auto& c : costs)
    if (c.algo == a && c.protocol == p) return c;
  throw std::runtime_error("missing entry");
}

CollectiveRequest call_request(CollectiveOp op, int n, std::uint64_t bytes,
                          Algorithm algo = Algorithm::Auto) {
  CollectiveRequest r;
  r.op = op;
  r.algo = algo;
  r.ranks = iota_ranks(n);
  r.bytes = bytes;
  return r;
}

// 2 nodes x 8 GPUs: 30 ring steps, 2 of them across nodes. Ring LL: base 6.6 + 28 x
// max(NVLink 0.6, net overhead 1.0) + 2 x NET 2.7 = 40.0 us. The flows pay 28 intra hops
// of 0.6 us and 2 inter hops of 2.6 us (22 us), so 18 us is software.
TEST(NcclCallCost, TwoNodeRingLatencyIsNcclsFormulaLessTheWire) {
  const CommShape shape{16, 2, true, 400e9, 0.6e-6, 2.6e-6};
  const auto costs = nccl_costs(CollectiveOp::AllReduce, 1 << 20, shape);
  const auto& ll = find(costs, Algorithm::Ring, Protocol::LL);
  EXPECT_NEAR(ll.latency_s, 40.0 * kUs, 1e-12);
  EXPECT_NEAR(ll.wire_latency_s, 22.0 * kUs, 1e-12);
  EXPECT_NEAR(ll.software_latency_s, 18.0 * kUs, 1e-12);
  // Simple: intra steps max(3.4, 3 x 1.0), inter steps 14.0, x1.4 ring plateau.
  const auto& simple = find(costs, Algorithm::Ring, Protocol::Simple);
  EXPECT_NEAR(simple.latency_s, (8.4 + 28 * 3.4 + 2 * 14.0) * 1.4 * kUs, 1e-12);
  EXPECT_NEAR(simple.software_latency_s, ((8.4 + 28 * 3.4 + 2 * 14.0) * 1.4 - 22.0) * kUs, 1e-12);
}

// NVLSTree across 2 hosts with NVLink SHARP: NVLink 25 us + 2 x log2(2) x NET 14 us =
// 53 us, of which the flows pay one NVLink hop and two network hops (5.8 us); its network part
// moves at efficiency 1 (nvlsEfficiency is NCCL's factor on the NVLS rate inside the hosts)
// and pays the pipeline fill: 1 GiB in rounds of 16 channels x 8 heads x 128 KiB = 16 MiB,
// 64 rounds through 2 + log2(2) = 3 stages, (64 + 2) / 64. Only the cost model's cluster path
// considers it (with_nvls).
TEST(NcclCallCost, NvlsTreeLatencyAndEfficiency) {
  CommShape shape{16, 2, true, 400e9, 0.6e-6, 2.6e-6};
  shape.nvls = true;
  const auto with = nccl_costs(CollectiveOp::AllReduce, kGiB, shape, /*with_nvls=*/true);
  const auto it = std::find_if(with.begin(), with.end(),
                               [](const detail::CostEstimate& c) { return c.nvls_tree; });
  ASSERT_NE(it, with.end());
  EXPECT_EQ(it->algo, Algorithm::Tree);
  EXPECT_EQ(it->protocol, Protocol::Simple);
  EXPECT_NEAR(it->latency_s, 53.0 * kUs, 1e-12);
  EXPECT_NEAR(it->software_latency_s, (53.0 - 5.8) * kUs, 1e-12);
  EXPECT_DOUBLE_EQ(it->efficiency, 1.0);
  EXPECT_DOUBLE_EQ(it->pipeline_stretch, 66.0 / 64.0);
  const auto without = nccl_costs(CollectiveOp::AllReduce, kGiB, shape);
  EXPECT_TRUE(std::none_of(without.begin(), without.end(),
                           [](const detail::CostEstimate& c) { return c.nvls_tree; }));
  shape.nvls = false;
  const auto no_sharp = nccl_costs(CollectiveOp::AllReduce, kGiB, shape, true);
  EXPECT_TRUE(std::none_of(no_sharp.begin(), no_sharp.end(),
                           [](const detail::CostEstimate& c) { return c.nvls_tree; }));
}

TEST(NcclCallCost, SoftwareLatencyNeverBelowTheBaseLatency) {
  // Hops slower than NCCL's per-step latencies: only the launch is left.
  const CommShape shape{16, 2, true, 400e9, 10e-6, 20e-6};
  const auto costs = nccl_costs(CollectiveOp::AllReduce, 1 << 20, shape);
  EXPECT_NEAR(find(costs, Algorithm::Ring, Protocol::LL).software_latency_s, 6.6 * kUs, 1e-12);
  EXPECT_NEAR(find(costs, Algorithm::Tree, Protocol::Simple).software_latency_s, 8.4 * kUs, 1e-12);
}

TEST(NcclCallCost, ProtocolEfficienciesAreNcclsBusBandwidthRefinements) {
  const CommShape shape{16, 2, true, 400e9, 0.6e-6, 2.6e-6};
  const auto costs = nccl_costs(CollectiveOp::AllReduce, kGiB, shape);
  EXPECT_DOUBLE_EQ(find(costs, Algorithm::Ring, Protocol::Simple).efficiency, 1.0);
  EXPECT_DOUBLE_EQ(find(costs, Algorithm::Ring, Protocol::LL128).efficiency, 0.92);
  // LL: half of 400 GB/s, capped by llMaxBw at 2 nodes (39 GB/s).
  EXPECT_DOUBLE_EQ(find(costs, Algorithm::Ring, Protocol::LL).efficiency, 39.0 / 400.0);
  // Tree Simple at 1 GiB: 0.92, beyond the size-correction table.
  EXPECT_DOUBLE_EQ(find(costs, Algorithm::Tree, Protocol::Simple).efficiency, 0.92);
  // Tree Simple at 1 MiB: x treeCorrectionFactor[Simple][log2(1 MiB / 64) = 14] = 0.5.
  const auto mid = nccl_costs(CollectiveOp::AllReduce, 1 << 20, shape);
  EXPECT_DOUBLE_EQ(find(mid, Algorithm::Tree, Protocol::Simple).efficiency, 0.92 * 0.5);
}

// 2 hosts x 2 GPUs, every pair 1 us and 100 GB/s (NVLink-class): a 1 GiB ring allreduce
// through the cost model's cluster path is NCCL's software latency, then the streamed ring
// (2 channels), whose transfer time is stretched by 1 / (Simple 1.0 x NIC path 0.97).
TEST(NcclCallCost, ClusterPathIsSoftwareLatencyPlusStretchedFlows) {
  Simulator clock;
  AnalyticNetwork net(clock, 4, 1e-6, 100e9, /*ranks_per_host=*/2);
  const CollectiveProfile none;
  CollectiveCostModel costs(none, net);
  const auto req = call_request(CollectiveOp::AllReduce, 4, kGiB, Algorithm::Ring);
  const auto cost = nccl_call_cost(req, net);
  EXPECT_EQ(cost.algo, Algorithm::Ring);
  EXPECT_EQ(cost.protocol, Protocol::Simple);
  // 6 steps, 2 inter-node: (8.4 + 4 x 3.4 + 2 x 14.0) x 1.4 = 70 us; the wire is 6 x 1 us.
  EXPECT_NEAR(cost.latency_s, 64.0 * kUs, 1e-12);
  EXPECT_NEAR(cost.wire_latency_s, 6.0 * kUs, 1e-12);
  EXPECT_NEAR(cost.efficiency, 48.5 / 50.0, 1e-12);
  double done_s = -1;
  costs.launch(req, [&] { done_s = clock.now(); });
  clock.run();
  // Each of 2 channels streams 6 x 2^30 / 4 / 2 bytes at 100 GB/s after 1 us; 5 more hops.
  const double bytes_per_link = 6.0 * (kGiB / 4) / 2;
  const double flow_s = 1e-6 + bytes_per_link / 100e9 + 5e-6;
  EXPECT_NEAR(done_s, 64.0 * kUs + 6e-6 + (flow_s - 6e-6) / (48.5 / 50.0), 1e-12);
  EXPECT_NE(costs.describe(CollectiveOp::AllReduce, 4, false).find("NCCL"), std::string::npos);
}

// 2 hosts x 8 GPUs whose pairs run at 500 GB/s (NVLink 4 class: NVLink SHARP): a 1 GiB
// all-reduce is NCCL's NVLSTree, which carries its pipeline fill (8 heads: 64 rounds of
// 16 MiB through 3 stages) into the call's cost and its description.
TEST(NcclCallCost, NvlsTreeCallCarriesItsPipelineFill) {
  Simulator clock;
  AnalyticNetwork net(clock, 16, 1e-6, 500e9, /*ranks_per_host=*/8);
  const auto cost = nccl_call_cost(call_request(CollectiveOp::AllReduce, 16, kGiB), net);
  ASSERT_TRUE(cost.nvls_tree);
  EXPECT_DOUBLE_EQ(cost.pipeline_stretch, 66.0 / 64.0);
  EXPECT_NEAR(cost.efficiency, 48.5 / 50.0, 1e-12);
  EXPECT_NE(detail::describe(cost).find("x 1.03 fill"), std::string::npos)
      << detail::describe(cost);
  // A ring keeps NCCL's own size terms: no fill.
  const auto ring =
      nccl_call_cost(call_request(CollectiveOp::AllReduce, 16, kGiB, Algorithm::Ring), net);
  EXPECT_DOUBLE_EQ(ring.pipeline_stretch, 1.0);
  EXPECT_EQ(detail::describe(ring).find("fill"), std::string::npos);
}

TEST(NcclCallCost, BareFlowsWhenNcclCostsAreOff) {
  Simulator clock;
  AnalyticNetwork net(clock, 4, 1e-6, 100e9, 2);
  const CollectiveProfile none;
  CollectiveTimingOptions options;
  options.nccl_costs = false;
  CollectiveCostModel costs(none, net, options);
  const auto req = call_request(CollectiveOp::AllReduce, 4, kGiB, Algorithm::Ring);
  EXPECT_FALSE(costs.charges_call_latency(CollectiveOp::AllReduce, 4, false));
  double done_s = -1;
  costs.launch(req, [&] { done_s = clock.now(); });
  clock.run();
  EXPECT_NEAR(done_s, 1e-6 + 6.0 * (kGiB / 4) / 2 / 100e9 + 5e-6, 1e-12);
}

// All-to-all on 2 hosts x 2 GPUs: a Simple launch (8.4 us), one round of peers whose step is
// NET Simple 14 us less the 1 us wire, and a 1 us proxy post for each of the 2 remote peers.
TEST(NcclCallCost, AllToAllPaysLaunchRoundsAndAPostPerNetworkPeer) {
  Simulator clock;
  AnalyticNetwork net(clock, 4, 1e-6, 100e9, 2);
  const auto cost = nccl_call_cost(call_request(CollectiveOp::AllToAll, 4, 1 << 20), net);
  EXPECT_EQ(cost.algo, Algorithm::Direct);
  EXPECT_TRUE(cost.pxn);
  EXPECT_NEAR(cost.latency_s, (8.4 + 13.0 + 2 * 1.0) * kUs, 1e-12);
}

TEST(NcclCallCost, ManyPeerAllToAllPaysEveryPeer) {
  // 128 hosts x 8: 1016 network peers, each a proxy post of 1 us; 1023 peers fit in
  // ceil(1023 / (8 x 32)) = 4 rounds of NET steps.
  Simulator clock;
  AnalyticNetwork net(clock, 1024, 1e-6, 100e9, 8);
  const auto cost = nccl_call_cost(call_request(CollectiveOp::AllToAll, 1024, 1 << 20), net);
  EXPECT_NEAR(cost.latency_s, (8.4 + 4 * 13.0 + 1016 * 1.0) * kUs, 1e-9);
  // One host: no network peers, no PXN, NVLink steps.
  Simulator clock1;
  AnalyticNetwork one(clock1, 8, 0.5e-6, 400e9, 8);
  const auto intra = nccl_call_cost(call_request(CollectiveOp::AllToAll, 8, 1 << 20), one);
  EXPECT_FALSE(intra.pxn);
  EXPECT_NEAR(intra.latency_s, (8.4 + (3.4 - 0.5)) * kUs, 1e-12);
  EXPECT_DOUBLE_EQ(intra.efficiency, 1.0);
}

// PXN: rank 0's data for rank 3 (host 1, local index 1) goes 0 -> 1 over NVLink and 1 -> 3
// over rank 1's NIC; every network transfer stays on one rail (0 <-> 2, 1 <-> 3).
TEST(NcclCallCost, PxnRoutesAllToAllThroughThePeersRail) {
  Simulator clock;
  AnalyticNetwork net(clock, 4, 1e-6, 100e9, 2);
  auto req = call_request(CollectiveOp::AllToAll, 4, 4 << 20, Algorithm::Direct);
  CollectiveTuning tuning;
  tuning.pxn = true;
  const detail::Plan plan = detail::direct_plan(net, req, tuning);
  ASSERT_EQ(plan.phases.size(), 1u);
  const std::uint64_t share = 1 << 20;
  std::vector<std::tuple<int, int, std::uint64_t>> got;
  for (const Transfer& t : plan.phases[0].transfers)
    got.emplace_back(t.src_rank, t.dst_rank, t.bytes);
  const std::vector<std::tuple<int, int, std::uint64_t>> want = {
      {0, 1, 2 * share}, {0, 2, 2 * share}, {1, 0, 2 * share}, {1, 3, 2 * share},
      {2, 0, 2 * share}, {2, 3, 2 * share}, {3, 1, 2 * share}, {3, 2, 2 * share}};
  EXPECT_EQ(got, want);
  // Without PXN every pair sends directly, across rails too (0 -> 3).
  const detail::Plan direct = detail::direct_plan(net, req, {});
  EXPECT_EQ(direct.phases[0].transfers.size(), 12u);
}

}  // namespace
}  // namespace overlapsim::sim
