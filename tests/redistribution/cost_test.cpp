// A plan's time on a cluster: each step is the collective the cost model times, every group
// at once; a mesh that does not cover the cluster is a user error.
#include <gtest/gtest.h>

#include "config/error.hpp"
#include "redistribution/cost.hpp"
#include "sim/engine/simulator.hpp"
#include "sim/network/flow_network.hpp"
#include "sim/profile/profile_load.hpp"
#include "workloads/cluster.hpp"
#include "workloads/scenario_inputs.hpp"

namespace overlapsim::redistribution {
namespace {

struct Machine {
  workloads::ClusterSpec cluster;
  sim::Topology topology;
  sim::Profile profile;
  sim::CollectiveTimingOptions timing;
};

Machine load(const std::string& file) {
  Machine m;
  m.cluster = workloads::load_cluster(std::string(OVERLAPSIM_SOURCE_DIR) + "/" + file);
  m.topology = workloads::build_topology(m.cluster);
  m.profile = sim::load_profile(m.cluster.gpu->profile_path);
  m.timing = workloads::collective_timing(m.cluster, m.profile, m.cluster.gpu->profile_path);
  return m;
}

// One local copy of `bytes` (read + written) on the profile's memory roofline, closed form.
double copy_s(const Machine& m, double bytes) {
  const auto& c = m.profile.compute;
  return c.launch_overhead_s.value +
         bytes / (c.memory_bandwidth_Bps.value * c.memory_efficiency.at(bytes));
}

// The time of one collective alone, through the same cost model.
double alone_s(const Machine& m, const sim::CollectiveRequest& req) {
  sim::Simulator simulator;
  sim::FlowNetwork net(simulator, m.topology);
  sim::CollectiveCostModel costs(m.profile.collectives, net, m.timing);
  costs.launch(req, [] {});
  simulator.run();
  return simulator.now();
}

TEST(RedistributionCost, AStepIsItsCollectiveOnTheCostModel) {
  const Machine m = load("workloads/clusters/h200-8gpu.yaml");
  const Mesh mesh = parse_mesh("x=8", "--mesh");
  const Shape shape{4096, 8192};
  const Layout from = parse_layout("P('x', None)", mesh, shape, "--from");
  const Layout to = parse_layout("P(None, 'x')", mesh, shape, "--to");
  const Plan p = synthesize(mesh, shape, 2, from, to);
  ASSERT_EQ(p.steps.size(), 1u);
  const PlanTiming t = time_plan(p, m.topology, m.profile, m.timing);
  sim::CollectiveRequest a2a;
  a2a.op = sim::CollectiveOp::AllToAll;
  a2a.ranks = {0, 1, 2, 3, 4, 5, 6, 7};
  a2a.bytes = 4096u * 8192 * 2 / 8;  // each device's shard, 1/8 to each peer
  // Each device packs the eight column blocks it sends, its own included (512 rows x 1024
  // columns, strided in its 512 x 8192 block); received pieces are whole rows of the
  // 4096 x 1024 target block, so they land in place.
  const double piece_bytes = 512.0 * 1024 * 2;
  EXPECT_NEAR(t.steps[0].copy_s, 8 * copy_s(m, 2 * piece_bytes), 1e-12);
  EXPECT_NEAR(t.time_s, alone_s(m, a2a) + 8 * copy_s(m, 2 * piece_bytes), 1e-12);
  EXPECT_EQ(t.steps[0].collective, "alltoall x 1 groups of 8");

  // Naive: the all-gather of the whole array (row blocks land in place), then the slice of
  // a column block, one strided copy of the 8 MiB target block.
  const Plan n = naive_plan(mesh, shape, 2, from, to);
  const PlanTiming tn = time_plan(n, m.topology, m.profile, m.timing);
  sim::CollectiveRequest ag = a2a;
  ag.op = sim::CollectiveOp::AllGather;
  ag.bytes = 4096u * 8192 * 2;
  EXPECT_NEAR(tn.time_s, alone_s(m, ag) + copy_s(m, 2.0 * 4096 * 1024 * 2), 1e-12);
  EXPECT_GT(tn.time_s, t.time_s);
}

TEST(RedistributionCost, GroupsRunConcurrently) {
  // x=2 across the 8 GPUs' halves, y=4 within: the all-gather over y runs in two groups
  // at once, as long as one group alone (they share no link in an NVSwitch host).
  const Machine m = load("workloads/clusters/h200-8gpu.yaml");
  const Mesh mesh = parse_mesh("x=2,y=4", "--mesh");
  const Shape shape{1 << 20};
  const Plan p = synthesize(mesh, shape, 2, parse_layout("P(('x','y'))", mesh, shape, "--from"),
                            parse_layout("P('x')", mesh, shape, "--to"));
  ASSERT_EQ(p.steps.size(), 1u);
  const PlanTiming t = time_plan(p, m.topology, m.profile, m.timing);
  sim::CollectiveRequest ag;
  ag.op = sim::CollectiveOp::AllGather;
  ag.ranks = {0, 1, 2, 3};
  ag.bytes = (1u << 20) / 2 * 2;
  EXPECT_DOUBLE_EQ(t.time_s, alone_s(m, ag));  // 1-D blocks land in place: no copies
  EXPECT_EQ(t.steps[0].copy_s, 0.0);
}

TEST(RedistributionCost, PermutePairsRunAtNcclsAllToAllRate) {
  // The 2-D grid transpose P('x', 'y') -> P('y', 'x') in each z slice of x=2,y=2,z=2: a
  // permute in which devices (0, 1) and (1, 0) of a slice swap their 8 MiB blocks, one sender
  // each. On one NVLink host a send/recv pair runs at the rate NCCL's all-to-all reached (the
  // same grouped send/recv), read at the all-to-all whose piece per peer is the send (the
  // curve nearest a pair, the profile's 2-rank one: 2 x the piece): the curve's latency, then the
  // piece at that bus bandwidth, plus the hops' wire latency (stretched with the rest).
  const Machine m = load("workloads/clusters/h200-8gpu.yaml");
  const Mesh mesh = parse_mesh("x=2,y=2,z=2", "--mesh");
  const Shape shape{4096, 4096};
  const Plan p = synthesize(mesh, shape, 2, parse_layout("P('x', 'y')", mesh, shape, "--from"),
                            parse_layout("P('y', 'x')", mesh, shape, "--to"));
  ASSERT_EQ(p.steps.size(), 1u);
  ASSERT_EQ(p.steps[0].kind, StepKind::Permute);
  const PlanTiming t = time_plan(p, m.topology, m.profile, m.timing);

  std::uint64_t largest = 0;  // the piece a moving device receives (8 MiB)
  for (int d = 0; d < mesh.num_devices(); ++d)
    for (const Piece& q : incoming(mesh, shape, p.steps[0], d))
      if (q.from != d) largest = std::max<std::uint64_t>(largest, q.box.elements() * 2);
  ASSERT_GT(largest, 0u);
  const sim::CollectiveCurve* a2a = nullptr;
  for (const auto& c : m.profile.collectives.curves)
    if (c.op == sim::CollectiveOp::AllToAll && c.ctas == 0 && (!a2a || c.ranks < a2a->ranks))
      a2a = &c;  // the curve nearest a pair
  ASSERT_NE(a2a, nullptr);
  const auto& seg = a2a->segment_for(largest * static_cast<std::uint64_t>(a2a->ranks));
  const double call_s = t.steps[0].time_s - t.steps[0].copy_s;
  // A redistribution runs between compute kernels: the whole call takes the curve's factor.
  const double expected = (seg.latency_s + static_cast<double>(largest) / seg.bus_bandwidth_Bps) *
                          a2a->in_loop_factor();
  EXPECT_EQ(largest, 8u << 20);
  EXPECT_GT(call_s, expected);  // plus the wire latency, stretched
  EXPECT_LT(call_s, expected + 3e-6);
  // A training step's send inside the host is timed the same way (the options every command
  // takes, workloads::collective_timing); the cluster path, which it took before, is faster
  // than that: it charges NCCL's protocol efficiency on the link rate.
  sim::CollectiveRequest sr;
  sr.op = sim::CollectiveOp::SendRecv;
  sr.ranks = {2, 4};
  sr.bytes = largest;
  ASSERT_TRUE(m.timing.sendrecv_from_alltoall);
  EXPECT_GT(alone_s(m, sr), expected);
  EXPECT_LT(alone_s(m, sr), expected + 3e-6);
  Machine cluster_path = m;
  cluster_path.timing.sendrecv_from_alltoall = false;
  EXPECT_LT(alone_s(cluster_path, sr), expected);
}

TEST(RedistributionCost, AMeshThatIsNotTheClusterIsRejected) {
  const Machine m = load("workloads/clusters/h200-8gpu.yaml");
  const Mesh mesh = parse_mesh("x=4", "--mesh");
  const Shape shape{16};
  const Plan p = synthesize(mesh, shape, 2, parse_layout("P('x')", mesh, shape, "--from"),
                            parse_layout("P(None)", mesh, shape, "--to"));
  try {
    time_plan(p, m.topology, m.profile, m.timing);
    FAIL() << "expected a ConfigError";
  } catch (const config::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("x=4 has 4 devices but the cluster has 8 GPUs"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace overlapsim::redistribution
