// The fused design against the fused kernels as measured (2 and 4 H100s): every measured
// fused pair simulated as a step, with its compute part and NCCL alone given their measured
// times, under `sequential` and `fused` with the shipped H100 profile. The predicted
// speed-up sequential / fused is checked against the measured sequential_own / fused (the
// same compute part, then NCCL: what the design itself changes). docs/designs.md prints
// the table this test prints.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "calibration/fit_fused.hpp"
#include "sim/overlap/pair_simulation.hpp"
#include "sim/profile/profile_load.hpp"
#include "sim/topology/builders.hpp"

namespace overlapsim::sim {
namespace {

const char* name_of(FusedPair p) {
  switch (p) {
    case FusedPair::EmbeddingAllToAll:
      return "embedding+A2A";
    case FusedPair::GemvAllReduce:
      return "GEMV+AR";
    case FusedPair::GemmAllToAll:
      return "GEMM+A2A";
  }
  return "?";
}

PairCase case_of(const calibration::FusedRow& r) {
  PairCase pc;
  OpNode op;
  op.name = "op";
  switch (r.pair) {
    case FusedPair::EmbeddingAllToAll:
      op.kind = OpKind::EmbeddingLookup;
      // Local batch x ranks bags, k lookups a sample over 26 tables, 256-byte rows.
      op.bytes = static_cast<std::uint64_t>(r.m) * r.world * r.k * 256;
      pc.collective = CollectiveOp::AllToAll;
      break;
    case FusedPair::GemvAllReduce:
      op.kind = OpKind::Gemv;
      op.gemm = {r.m, r.n, r.k, 1};
      pc.collective = CollectiveOp::AllReduce;
      break;
    case FusedPair::GemmAllToAll:
      op.kind = OpKind::Gemm;
      op.gemm = {r.m, r.n, r.k, 1};
      pc.collective = CollectiveOp::AllToAll;
      break;
  }
  pc.compute = op;
  pc.comm_bytes = r.comm_bytes;
  pc.world = r.world;
  pc.op_time_s = r.op_s;
  pc.comm_time_points = {{r.comm_bytes, r.collective_s}};
  return pc;
}

// The shipped H100 profile, its GEMMs timed by the efficiency curve (which simulate_pair
// scales to a measured time exactly) instead of the GEMM tables.
Profile h100_profile() {
  Profile p = load_profile(std::string(OVERLAPSIM_SOURCE_DIR) +
                           "/calibration/profiles/datasheet-h100.yaml");
  p.compute.gemm_tables.clear();
  p.compute.own_gemm_tables.clear();
  return p;
}

FusedCosts shipped_costs(const Profile& p) {
  DesignParameters d(p, "fused");
  return FusedCosts::read(d);
}

TEST(FusedMeasured, PredictedSpeedupMatchesTheKernels) {
  const std::string root = OVERLAPSIM_SOURCE_DIR;
  const Profile profile = h100_profile();
  NvSwitchNodeSpec spec;
  spec.gpus = 4;
  spec.nvlink_bandwidth_Bps = 450e9;
  spec.nvlink_latency_s = 0.3e-6;
  const Topology topo = build_nvswitch_node(spec);
  const auto rows = calibration::load_fused_rows(root, calibration::fused_measurement_files());
  ASSERT_EQ(rows.size(), 55u);
  std::vector<double> errors;
  std::printf("| pair | ranks | m x n x k | measured seq_own / fused | predicted | error |\n");
  std::printf("| --- | --- | --- | --- | --- | --- |\n");
  for (const calibration::FusedRow& r : rows) {
    ASSERT_GT(r.sequential_own_s, 0) << r.where;
    ASSERT_GT(r.collective_s, 0) << r.where;
    const PairCase pc = case_of(r);
    const PairOutcome seq = simulate_pair(pc, "sequential", profile, topo);
    const PairOutcome fused = simulate_pair(pc, "fused", profile, topo);
    ASSERT_TRUE(fused.overlapped) << r.where << ": " << fused.why_not;
    ASSERT_NEAR(seq.op_alone_s, r.op_s, 1e-9 * r.op_s) << r.where;
    // Sequential is the op then NCCL as measured alone; fused is the model's closed form.
    EXPECT_NEAR(seq.time_s, r.op_s + r.collective_s, 1e-9) << r.where;
    const FusedTimes t = fused_times(shipped_costs(profile), r.pair, r.op_s, r.pushed_bytes());
    EXPECT_NEAR(fused.time_s, t.total_s(), 1e-9) << r.where;
    // The NVLink bound binds on no measured row: the stores take less than the op.
    EXPECT_LT(r.pushed_bytes() / t.compute_s, shipped_costs(profile).nvlink_store_Bps) << r.where;
    const double measured = r.sequential_own_s / r.fused_s;
    const double predicted = seq.time_s / fused.time_s;
    const double err = predicted / measured - 1;
    errors.push_back(std::abs(err));
    std::printf("| %s | %d | %lldx%lldx%lld | %.3f | %.3f | %+.1f%% |\n", name_of(r.pair), r.world,
                static_cast<long long>(r.m), static_cast<long long>(r.n),
                static_cast<long long>(r.k), measured, predicted, 100 * err);
    // The pairs a step fuses (DLRM's lookup, MoE's combine) within 10 %; GEMV + AllReduce,
    // where the exchange is a few microseconds of clock noise, within 25 %.
    EXPECT_LT(std::abs(err), r.pair == FusedPair::GemvAllReduce ? 0.25 : 0.10) << r.where;
  }
  std::sort(errors.begin(), errors.end());
  const double median = errors[errors.size() / 2];
  const auto within10 =
      std::count_if(errors.begin(), errors.end(), [](double e) { return e < 0.10; });
  std::printf("speed-up error: median %.1f%%, max %.1f%%, within 10%%: %ld of %zu\n", 100 * median,
              100 * errors.back(), static_cast<long>(within10), errors.size());
  EXPECT_LT(median, 0.05);
  EXPECT_GE(within10, static_cast<long>(errors.size()) * 9 / 10);
}

// A communicator across hosts is not fused (the kernel's stores reach NVLink peers only):
// the pair runs as under sequential, and says why.
TEST(FusedMeasured, InterHostCommunicatorRunsSequential) {
  const std::string root = OVERLAPSIM_SOURCE_DIR;
  const Profile profile = h100_profile();
  const auto rows = calibration::load_fused_rows(root, calibration::fused_measurement_files());
  RailFatTreeSpec two_hosts;
  two_hosts.nodes = 2;
  two_hosts.node = NvSwitchNodeSpec{2, 450e9, 1e-6};
  two_hosts.nics_per_node = 2;
  two_hosts.nic_bandwidth_Bps = 50e9;
  two_hosts.gpu_nic_bandwidth_Bps = 64e9;
  two_hosts.gpu_nic_latency_s = 2e-6;
  two_hosts.link_latency_s = 1e-6;
  const Topology cluster = build_rail_fat_tree(two_hosts);
  PairCase pc = case_of(rows.front());  // embedding + all-to-all
  pc.world = 4;
  const PairOutcome across = simulate_pair(pc, "fused", profile, cluster);
  EXPECT_FALSE(across.overlapped);
  EXPECT_NE(across.why_not.find("spans hosts"), std::string::npos) << across.why_not;
  EXPECT_EQ(across.time_s, simulate_pair(pc, "sequential", profile, cluster).time_s);
  // The same pair on the 2 GPUs of one host is fused.
  pc.world = 2;
  EXPECT_TRUE(simulate_pair(pc, "fused", profile, cluster).overlapped);
}

}  // namespace
}  // namespace overlapsim::sim
