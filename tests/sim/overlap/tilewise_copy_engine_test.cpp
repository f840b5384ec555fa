// The tile-wise design's copy-engine transport against closed forms (no measurement of the
// kernel exists yet): one group per part on 2 GPUs worked by hand, the event simulation
// equal to the closed-form plan, no pair faster than its GEMM or its copies, free copies
// leave the GEMM on every SM, and a profile without the transport's parameters says so.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "config/error.hpp"
#include "sim/overlap/designs.hpp"
#include "sim/overlap/pair_simulation.hpp"
#include "tests/sim/overlap/overlap_test_util.hpp"

namespace overlapsim::sim {
namespace {

using testing::design_profile;
using testing::set_param;
using testing::two_gpu_node;

constexpr double kCopyBps = 1e11;

Profile copy_engine_profile(bool perfect, double epilogue_fraction, int max_groups) {
  Profile p = design_profile(perfect);
  set_param(p, "tilewise", "copy_engine_bandwidth_Bps", kCopyBps);
  set_param(p, "tilewise", "copy_engine_latency_s", 0);
  set_param(p, "tilewise", "epilogue_reduce_overhead_fraction", epilogue_fraction);
  set_param(p, "tilewise", "max_groups", max_groups);
  return p;
}

PairCase ce_pair(std::int64_t m, std::int64_t n, std::int64_t k, CollectiveOp coll) {
  PairCase pc;
  pc.compute.name = "gemm";
  pc.compute.kind = OpKind::Gemm;
  pc.compute.gemm = {m, n, k, 1};
  pc.collective = coll;
  pc.comm_bytes = static_cast<std::uint64_t>(m * n * 2);
  // NCCL's time is not used by this transport; give it one anyway (sequential's).
  pc.comm_time_points = {{1ull << 40, static_cast<double>(1ull << 40) / 300e9}};
  pc.copy_engine = true;
  return pc;
}

double gemm_s(const PairCase& pc) {
  return 2.0 * pc.compute.gemm.m * pc.compute.gemm.n * pc.compute.gemm.k / 1e15;
}

// The closed-form plan's problem: `tiles` over `sms` SMs in `gemm_time_s`, `bytes` of output,
// copies at `copy_Bps`; one group per part, no copy latency, no epilogue cost until set.
CopyEngineProblem problem(CollectiveOp op, int world, int sms, double tiles, double gemm_time_s,
                          double bytes, double copy_Bps) {
  CopyEngineProblem w;
  w.op = op;
  w.world = world;
  w.groups_per_part = 1;
  w.sms = sms;
  w.tiles = tiles;
  w.gemm_s = gemm_time_s;
  w.bytes = bytes;
  w.copy_Bps = copy_Bps;
  return w;
}

// 16384x8192x4096: 4096 tiles, 32 waves on 132 SMs; the peer half (2048 tiles) ends with
// wave 16, at half the GEMM. Its copy: 128 MiB at 100 GB/s.
TEST(TilewiseCopyEngine, OneGroupPerPartOnTwoGpusByHand) {
  const Topology topo = two_gpu_node();
  const Profile profile = copy_engine_profile(true, 0.1, 1);
  const PairCase rs = ce_pair(16384, 8192, 4096, CollectiveOp::ReduceScatter);
  const double t_op = gemm_s(rs);
  const double x = static_cast<double>(rs.comm_bytes) / 2 / kCopyBps;
  const double peer_sent = t_op / 2 + x;  // peer part computed, then copied
  // ReduceScatter: the own half (with the epilogue's 10 %) waits for the peer's half.
  const double own = std::max(t_op / 2 + t_op / 2 * 1.1, peer_sent);
  EXPECT_NEAR(simulate_pair(rs, "tilewise", profile, topo).time_s, own, 1e-9);
  // AllReduce: then the reduced own half goes back to the peer.
  PairCase ar = rs;
  ar.collective = CollectiveOp::AllReduce;
  EXPECT_NEAR(simulate_pair(ar, "tilewise", profile, topo).time_s, own + x, 1e-9);
  // All-to-All: no reduction; the own half is stored locally.
  PairCase a2a = rs;
  a2a.collective = CollectiveOp::AllToAll;
  EXPECT_NEAR(simulate_pair(a2a, "tilewise", profile, topo).time_s, std::max(t_op, peer_sent),
              1e-9);
}

// A fixed cost per copy adds to every copy: with one group per part on 2 GPUs, ReduceScatter's
// own half waits for the peer half's copy, now 5 us longer.
TEST(TilewiseCopyEngine, CopyLatencyIsChargedPerCopy) {
  const Topology topo = two_gpu_node();
  Profile profile = copy_engine_profile(true, 0.1, 1);
  set_param(profile, "tilewise", "copy_engine_latency_s", 5e-6);
  const PairCase rs = ce_pair(16384, 8192, 4096, CollectiveOp::ReduceScatter);
  const double t_op = gemm_s(rs);
  const double x = 5e-6 + static_cast<double>(rs.comm_bytes) / 2 / kCopyBps;
  EXPECT_NEAR(simulate_pair(rs, "tilewise", profile, topo).time_s, t_op / 2 + x, 1e-9);
  PairCase ar = rs;
  ar.collective = CollectiveOp::AllReduce;
  EXPECT_NEAR(simulate_pair(ar, "tilewise", profile, topo).time_s, t_op / 2 + 2 * x, 1e-9);
}

// Measured stream operations per copy (flag write, counter wait and reset) replace the
// assumed wait per group: the same case as above with a 3 us wait, then with 5 us of
// stream operations and no wait.
TEST(TilewiseCopyEngine, StreamOperationsReplaceTheWaitPerGroup) {
  const Topology topo = two_gpu_node();
  Profile profile = copy_engine_profile(true, 0.1, 1);
  set_param(profile, "tilewise", "wait_overhead_s", 3e-6);
  const PairCase rs = ce_pair(16384, 8192, 4096, CollectiveOp::ReduceScatter);
  const double t_op = gemm_s(rs);
  const double x = static_cast<double>(rs.comm_bytes) / 2 / kCopyBps;
  EXPECT_NEAR(simulate_pair(rs, "tilewise", profile, topo).time_s, t_op / 2 + 3e-6 + x, 1e-9);
  set_param(profile, "tilewise", "copy_engine_stream_ops_s", 5e-6);
  EXPECT_NEAR(simulate_pair(rs, "tilewise", profile, topo).time_s, t_op / 2 + x + 5e-6, 1e-9);
  PairCase ar = rs;
  ar.collective = CollectiveOp::AllReduce;
  EXPECT_NEAR(simulate_pair(ar, "tilewise", profile, topo).time_s, t_op / 2 + 2 * (x + 5e-6), 1e-9);
}

TEST(TilewiseCopyEngine, EventSimulationEqualsTheClosedFormPlan) {
  const Topology topo = two_gpu_node();
  const Profile profile = copy_engine_profile(true, 0.05, 16);
  for (auto coll : {CollectiveOp::AllReduce, CollectiveOp::ReduceScatter, CollectiveOp::AllToAll})
    for (auto [m, n, k] : std::vector<std::array<std::int64_t, 3>>{
             {8192, 8192, 2048}, {4096, 4096, 4096}, {32768, 7168, 2048}}) {
      const PairCase pc = ce_pair(m, n, k, coll);
      double best = 1e300;
      for (int g : {2, 4, 8, 16}) {  // the kernel tuner's groups per part, up to max_groups
        CopyEngineProblem w =
            problem(coll, 2, 132, std::ceil(m / 128.0) * std::ceil(n / 256.0), gemm_s(pc),
                    static_cast<double>(pc.comm_bytes), kCopyBps);
        w.groups_per_part = g;
        w.epilogue_fraction = 0.05;
        best = std::min(best, plan_copy_engine(w).end_s);
      }
      EXPECT_NEAR(simulate_pair(pc, "tilewise", profile, topo).time_s, best, 1e-9 * best)
          << to_string(coll) << " " << m << "x" << n << "x" << k;
    }
}

// The ring route's best plan as the design searches it (groups 2..16, row chunks 1, 2, 4 or
// 2 or 4 slabs, plain or skewed, for an all-reduce with at most 4 groups a part or sub-slab,
// phase 2 on the comm stream or its own), with
// the profile's copy rate and no fixed costs: what a > 2-rank pair takes where it beats the
// direct route.
double best_ring_s(CollectiveOp op, int world, double tiles, double gemm_time_s, double bytes,
                   double contention) {
  tilewise_plan::RingProblem r;
  r.op = op == CollectiveOp::AllReduce ? tilewise_plan::Collective::AllReduce
                                       : tilewise_plan::Collective::ReduceScatter;
  r.world = world;
  r.tiles = tiles;
  r.ctas = 132;
  r.gemm_s = gemm_time_s;
  r.bytes = bytes;
  r.copy_s = tilewise_plan::linear_time(0, kCopyBps);
  r.phase2_contention = contention;
  double best = 1e300;
  for (int g : {2, 4, 8, 16})
    for (int chunks : {1, 2, 4})
      for (int slabs : {1, 2, 4})
        for (bool skew : {false, true})
          for (bool own_streams : {false, true}) {
            if (chunks > 1 && slabs > 1) continue;
            if (skew && slabs == 1) continue;
            const bool cut = chunks > 1 || slabs > 1;
            if ((cut || own_streams) && op != CollectiveOp::AllReduce) continue;
            if (cut && g > 4) continue;
            r.groups_per_part = g;
            r.row_chunks = chunks;
            r.slabs = slabs;
            r.slab_skew = skew;
            r.phase2_own_streams = own_streams;
            best = std::min(best, tilewise_plan::plan_ring(r).end_s);
          }
  return best;
}

// On 4 ranks the design reads the > 2-rank keys where the profile has them: the event
// simulation equals the best closed-form plan with them, and without them the plan with
// the fraction per peer and no contention (the older profiles' meaning); the ring route is
// the other candidate, the same with or without the keys but for its contention.
TEST(TilewiseCopyEngine, FourRanksReadTheGeneralEpilogueAndContentionKeys) {
  NvSwitchNodeSpec spec;
  spec.gpus = 4;
  spec.nvlink_bandwidth_Bps = 450e9;
  spec.nvlink_latency_s = 0.3e-6;
  const Topology topo = build_nvswitch_node(spec);
  const Profile old_profile = copy_engine_profile(true, 0.05, 16);
  Profile profile = old_profile;
  set_param(profile, "tilewise", "epilogue_reduce_bandwidth_Bps", 1.5e12);
  set_param(profile, "tilewise", "copy_engine_phase2_contention", 0.3);
  for (auto coll : {CollectiveOp::AllReduce, CollectiveOp::ReduceScatter}) {
    PairCase pc = ce_pair(8192, 8192, 4096, coll);
    pc.world = 4;
    for (bool with_keys : {true, false}) {
      double best = 1e300;
      for (int g : {2, 4, 8, 16}) {
        CopyEngineProblem w = problem(coll, 4, 132, 64.0 * 32, gemm_s(pc),
                                      static_cast<double>(pc.comm_bytes), kCopyBps);
        w.groups_per_part = g;
        w.epilogue_fraction = 0.05;
        w.epilogue_reduce_Bps = with_keys ? 1.5e12 : 0;
        w.phase2_contention = with_keys ? 0.3 : 0;
        best = std::min(best, plan_copy_engine(w).end_s);
      }
      best = std::min(best, best_ring_s(coll, 4, 64.0 * 32, gemm_s(pc),
                                        static_cast<double>(pc.comm_bytes), with_keys ? 0.3 : 0));
      EXPECT_NEAR(simulate_pair(pc, "tilewise", with_keys ? profile : old_profile, topo).time_s,
                  best, 1e-9 * best)
          << to_string(coll) << " keys " << with_keys;
    }
  }
}

// A profile without epilogue_reduce_bandwidth_Bps (before the fit had it) keeps the
// fraction's earlier meaning on more than 2 ranks: one share per peer's partial, so with free
// copies the own part (the last 1/n of the GEMM's waves) costs 1 + e (n - 1) times its time.
TEST(TilewiseCopyEngine, WithoutTheEpilogueRateTheFractionCountsPerPeer) {
  for (int n : {2, 4, 8}) {
    // 8 waves per part: each part ends on a wave boundary.
    CopyEngineProblem w =
        problem(CollectiveOp::ReduceScatter, n, 128, 128.0 * 8 * n, 1e-3, 1e9, 1e30);
    w.epilogue_fraction = 0.05;
    const double own_s = w.gemm_s / n;
    EXPECT_NEAR(plan_copy_engine(w).end_s, w.gemm_s - own_s + own_s * (1 + 0.05 * (n - 1)), 1e-12)
        << n;
    w.op = CollectiveOp::AllToAll;  // no reduction, no epilogue cost
    EXPECT_NEAR(plan_copy_engine(w).end_s, w.gemm_s, 1e-12) << n;
  }
}

// More than 2 ranks: the general epilogue path stalls its SM for n + 2 passes over each own
// tile (its store, the own re-read and write, n - 1 partials) at epilogue_reduce_Bps over
// all SMs. With free copies and 8 own tiles per SM: the GEMM plus 8 such stalls. 2 ranks
// keep the fraction of the own part's time; All-to-All reduces nothing.
TEST(TilewiseCopyEngine, GeneralEpilogueStallsEachOwnTile) {
  for (int n : {2, 4, 8}) {
    const double tiles = 128.0 * 8 * n;  // bf16 128 x 256 tiles
    CopyEngineProblem w = problem(CollectiveOp::ReduceScatter, n, 128, tiles, 1e-3,
                                  2.0 * 128 * 256 * tiles, 1e30);
    w.epilogue_fraction = 0.05;
    w.epilogue_reduce_Bps = 1.5e12;
    const double pass_s = 2.0 * 128 * 256 * 128 / 1.5e12;  // one tile on every SM
    for (int g : {1, 2, 4}) {
      w.groups_per_part = g;
      const double expected =
          n == 2 ? w.gemm_s + w.gemm_s / n * 0.05 : w.gemm_s + 8 * (n + 2) * pass_s;
      EXPECT_NEAR(plan_copy_engine(w).end_s, expected, 1e-12) << n << " ranks, " << g;
    }
    w.op = CollectiveOp::AllToAll;
    EXPECT_NEAR(plan_copy_engine(w).end_s, w.gemm_s, 1e-12) << n;
  }
}

// The last partial to arrive still has one own tile's passes ahead of it: with copies slower
// than the GEMM, ReduceScatter on 4 ranks ends one tile's stall after the last arrival.
TEST(TilewiseCopyEngine, TheLastArrivalIsReducedAfterItLands) {
  // One wave per part; 1 GB a group: 10 ms a copy at 100 GB/s.
  CopyEngineProblem w =
      problem(CollectiveOp::ReduceScatter, 4, 128, 128.0 * 4, 4e-3, 4e9, 1e11);
  w.epilogue_reduce_Bps = 1e12;
  const double x = 1e9 / 1e11;
  const double arrival = 1e-3 + 3 * x;  // three peer groups queued behind the first wave
  const double tile_s = 6 * (4e9 / w.tiles) * 128 / 1e12;
  EXPECT_NEAR(plan_copy_engine(w).end_s, arrival + tile_s, 1e-12);
}

// AllReduce's phase 2 with contention c: each of the n - 1 copies of a reduced group takes
// X(b) (1 + c (n - 2)). One group per part, copies hidden under the GEMM's later waves: the
// pair ends when the last own group's copies do, F + (n - 1) X (1 + c (n - 2)).
TEST(TilewiseCopyEngine, PhaseTwoContentionStretchesTheCopiesBack) {
  for (int n : {2, 4, 8})
    for (double c : {0.0, 0.5}) {
      // One wave per part, 1 ms each; 100 MB a group: 1 us a copy at 1e14 B/s.
      CopyEngineProblem w =
          problem(CollectiveOp::AllReduce, n, 128, 128.0 * n, 1e-3 * n, 1e8 * n, 1e14);
      w.phase2_contention = c;
      const double x = 1e8 / 1e14;
      EXPECT_NEAR(plan_copy_engine(w).end_s, w.gemm_s + (n - 1) * x * (1 + c * (n - 2)), 1e-12)
          << n << " ranks, c " << c;
    }
}

// Bound: the GEMM alone, and the bytes this rank's copy engines move (peers' parts, and for
// AllReduce the reduced part back to the peer) at the copy rate.
TEST(TilewiseCopyEngine, NoPairBeatsItsGemmOrItsCopies) {
  const Topology topo = two_gpu_node();
  for (bool perfect : {true, false}) {
    const Profile profile = copy_engine_profile(perfect, perfect ? 0 : 0.05, 16);
    for (auto coll : {CollectiveOp::AllReduce, CollectiveOp::ReduceScatter, CollectiveOp::AllToAll})
      for (auto [m, n, k] : std::vector<std::array<std::int64_t, 3>>{
               {8192, 8192, 2048}, {16384, 8192, 4096}, {2048, 8192, 8192}, {32768, 7168, 2048}}) {
        const PairCase pc = ce_pair(m, n, k, coll);
        const double copy_bytes =
            static_cast<double>(pc.comm_bytes) / 2 * (coll == CollectiveOp::AllReduce ? 2 : 1);
        const double bound = std::max(gemm_s(pc), copy_bytes / kCopyBps);
        const PairOutcome r = simulate_pair(pc, "tilewise", profile, topo);
        EXPECT_TRUE(r.overlapped);
        EXPECT_GE(r.time_s, bound * (1 - 1e-12)) << to_string(coll) << " perfect " << perfect;
      }
  }
}

// With copies free the GEMM keeps every SM: the pair costs the GEMM alone (no carve-out,
// unlike the NCCL transport's waves on SMs - s), plus the epilogue's reduction of the own part.
TEST(TilewiseCopyEngine, FreeCopiesCostTheGemmOnEverySm) {
  const Topology topo = two_gpu_node();
  Profile profile = copy_engine_profile(true, 0.1, 2);
  set_param(profile, "tilewise", "copy_engine_bandwidth_Bps", 1e30);
  const PairCase rs = ce_pair(16384, 8192, 4096, CollectiveOp::ReduceScatter);
  const double t_op = gemm_s(rs);
  EXPECT_NEAR(simulate_pair(rs, "tilewise", profile, topo).time_s, t_op * (1 + 0.1 / 2), 1e-9);
  PairCase a2a = rs;
  a2a.collective = CollectiveOp::AllToAll;
  EXPECT_NEAR(simulate_pair(a2a, "tilewise", profile, topo).time_s, t_op, 1e-9);
}

// With compute.own_gemm_tables the design times its GEMM by them, not by the vendor's
// time x own_gemm_time_ratio: a wave model at half the vendor rate doubles the pair.
TEST(TilewiseCopyEngine, OwnGemmTablesReplaceTheRatio) {
  const Topology topo = two_gpu_node();
  Profile profile = copy_engine_profile(true, 0, 2);
  set_param(profile, "tilewise", "copy_engine_bandwidth_Bps", 1e30);
  set_param(profile, "tilewise", "own_gemm_time_ratio", 3.0);  // ignored below
  GemmTable own;
  own.waves.mainloop_flops_per_s = 0.5e15;
  profile.compute.own_gemm_tables[Precision::BF16] = own;
  const PairCase a2a = ce_pair(16384, 8192, 4096, CollectiveOp::AllToAll);
  EXPECT_NEAR(simulate_pair(a2a, "tilewise", profile, topo).time_s, 2 * gemm_s(a2a), 1e-9);
  // A precision the own tables lack (fp16 here) falls back to the ratio; without the ratio
  // that is an error naming the key.
  profile.compute.peak_flops_per_s[Precision::FP16] =
      profile.compute.peak_flops_per_s.at(Precision::BF16);
  profile.compute.gemm_efficiency[Precision::FP16] =
      profile.compute.gemm_efficiency.at(Precision::BF16);
  PairCase half = a2a;
  half.compute.precision = Precision::FP16;
  EXPECT_NEAR(simulate_pair(half, "tilewise", profile, topo).time_s, 3 * gemm_s(half), 1e-9);
  Profile no_ratio = profile;
  no_ratio.designs.by_design["tilewise"].erase("own_gemm_time_ratio");
  EXPECT_NEAR(simulate_pair(a2a, "tilewise", no_ratio, topo).time_s, 2 * gemm_s(a2a), 1e-9);
  try {
    simulate_pair(half, "tilewise", no_ratio, topo);
    ADD_FAILURE() << "expected an error for fp16 without own table or ratio";
  } catch (const config::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("designs.tilewise.own_gemm_time_ratio: missing"),
              std::string::npos)
        << e.what();
  }
  profile.compute.own_gemm_tables.clear();
  EXPECT_NEAR(simulate_pair(a2a, "tilewise", profile, topo).time_s, 3 * gemm_s(a2a), 1e-9);
}

// The tail kernel carries the all-reduce's last own group: with one group per part on 2 GPUs
// and copies hidden under the GEMM the pair ends at F + Y(b) instead of F + wait + X(b); with
// two groups the first own group still goes by the copy engines, and the tail kernel starts
// after that copy where it is still on the link.
TEST(TilewiseCopyEngine, TailKernelCarriesTheLastOwnGroup) {
  // 256 tiles on 64 SMs: 4 waves of 0.5 ms; 100 MB a part.
  CopyEngineProblem w = problem(CollectiveOp::AllReduce, 2, 64, 256.0, 2e-3, 2e8, 1e12);
  const double wait = 3e-6;
  w.wait_s = wait;
  w.copy_latency_s = 2e-6;
  // The peer part (done at 1 ms) arrives by 1.105 ms; the own part is done at 2 ms.
  const double x = 2e-6 + 1e8 / 1e12;
  EXPECT_NEAR(plan_copy_engine(w).end_s, 2e-3 + wait + x, 1e-12);
  w.tail_Bps = 2e12;
  w.tail_latency_s = 9e-6;
  EXPECT_NEAR(plan_copy_engine(w).end_s, 2e-3 + 9e-6 + 1e8 / 2e12, 1e-12);
  // Two groups a part (one wave each) and slow copies (50 MB at 80 GB/s: 627 us): peer
  // groups arrive at a1 = 0.5 ms + wait + X and a2 = max(1 ms, a1) + wait + X; own group 0
  // (done at 1.5 ms) is copied back from max(1.5 ms, a2), past the GEMM's end at 2 ms, and
  // the tail kernel follows that copy.
  w.groups_per_part = 2;
  w.copy_Bps = 8e10;
  const double xh = 2e-6 + 5e7 / 8e10, yh = 9e-6 + 5e7 / 2e12;
  const double a1 = 0.5e-3 + wait + xh, a2 = std::max(1e-3, a1) + wait + xh;
  const double own0_back = std::max(1.5e-3, a2) + wait + xh;
  ASSERT_GT(own0_back, 2e-3);
  EXPECT_NEAR(plan_copy_engine(w).end_s, own0_back + yh, 1e-12);
  w.tail_Bps = 0;
  EXPECT_NEAR(plan_copy_engine(w).end_s, own0_back + wait + xh, 1e-12);
  // ReduceScatter has no phase 2: the tail rate changes nothing.
  w.op = CollectiveOp::ReduceScatter;
  const double rs = plan_copy_engine(w).end_s;
  w.tail_Bps = 2e12;
  EXPECT_DOUBLE_EQ(plan_copy_engine(w).end_s, rs);
}

// The design reads the tail kernel's rates where the profile has both: Auto takes the faster
// phase 2 per groups-per-part candidate, CopyEngine and TailKernel force one; forcing the
// tail kernel without its rates, or a profile with only one of them, names the keys.
TEST(TilewiseCopyEngine, TailKernelPhase2FromTheProfile) {
  const Topology topo = two_gpu_node();
  Profile profile = copy_engine_profile(true, 0, 1);
  const PairCase ar = ce_pair(16384, 8192, 4096, CollectiveOp::AllReduce);
  const double copy_engines = simulate_pair(ar, "tilewise", profile, topo).time_s;
  PairCase forced = ar;
  forced.phase2 = TilewiseDesign::AllReducePhase2::TailKernel;
  try {
    simulate_pair(forced, "tilewise", profile, topo);
    ADD_FAILURE() << "expected an error: no tail-kernel rates";
  } catch (const config::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("tail_kernel_bandwidth_Bps"), std::string::npos)
        << e.what();
  }
  // A tail kernel twice as fast as the copy engines, no fixed time: the last own half (all of
  // it, one group) leaves in half the time.
  set_param(profile, "tilewise", "tail_kernel_bandwidth_Bps", 2 * kCopyBps);
  set_param(profile, "tilewise", "tail_kernel_latency_s", 0);
  const double half_part = static_cast<double>(ar.comm_bytes) / 2;
  const double tail = simulate_pair(ar, "tilewise", profile, topo).time_s;
  EXPECT_NEAR(tail, copy_engines - half_part / kCopyBps + half_part / (2 * kCopyBps), 1e-9);
  EXPECT_NEAR(simulate_pair(forced, "tilewise", profile, topo).time_s, tail, 1e-12);
  PairCase ce = ar;
  ce.phase2 = TilewiseDesign::AllReducePhase2::CopyEngine;
  EXPECT_NEAR(simulate_pair(ce, "tilewise", profile, topo).time_s, copy_engines, 1e-12);
  // A slow tail kernel: Auto keeps the copy engines.
  set_param(profile, "tilewise", "tail_kernel_bandwidth_Bps", kCopyBps / 4);
  EXPECT_NEAR(simulate_pair(ar, "tilewise", profile, topo).time_s, copy_engines, 1e-12);
  Profile half_keyed = profile;
  half_keyed.designs.by_design["tilewise"].erase("tail_kernel_latency_s");
  try {
    simulate_pair(ar, "tilewise", half_keyed, topo);
    ADD_FAILURE() << "expected an error: only one tail-kernel key";
  } catch (const config::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("designs.tilewise.tail_kernel_latency_s missing"),
              std::string::npos)
        << e.what();
  }
}

// AllGather+GEMM, the consumer side, on 4 ranks: 4096x8448x4096 is 32 x 33 = 1056 tiles,
// 8 waves of 132; a rank's block is 2 waves, a chunk of 2 per block 1 wave.
PairCase ag_pair() {
  PairCase pc = ce_pair(4096, 8448, 4096, CollectiveOp::AllGather);
  pc.comm_bytes = 4096ull * 4096 * 2;  // the gathered A
  pc.producer = false;
  pc.world = 4;
  return pc;
}

Topology four_gpu_node() {
  NvSwitchNodeSpec spec;
  spec.gpus = 4;
  spec.nvlink_bandwidth_Bps = 450e9;
  spec.nvlink_latency_s = 0.3e-6;
  return build_nvswitch_node(spec);
}

// Free pushes hide entirely: the pair is the GEMM. Slow ones: the rotated steps end at
// 3 c (latency + shard / c / rate), and the last chunk's wave follows; c = 2 is the best of
// 1, 2, 4 here (1: 3 x 110 us + 2 waves; 4: 12 x 35 us + 1 wave).
TEST(TilewiseCopyEngine, AllGatherGemmHidesItsPushesOrEndsAfterTheLast) {
  const Topology topo = four_gpu_node();
  Profile profile = copy_engine_profile(true, 0, 16);
  const PairCase pc = ag_pair();
  const double t = gemm_s(pc), wave = t / 8, shard = 4096.0 * 4096 * 2 / 4;
  set_param(profile, "tilewise", "allgather_push_bandwidth_Bps", 1e30);
  set_param(profile, "tilewise", "allgather_push_latency_s", 0);
  PairOutcome free = simulate_pair(pc, "tilewise", profile, topo);
  EXPECT_TRUE(free.overlapped) << free.why_not;
  EXPECT_NEAR(free.time_s, t, 1e-9 * t);
  const double rate = shard / 100e-6, latency = 10e-6;  // a whole block: 100 us + 10 us
  set_param(profile, "tilewise", "allgather_push_bandwidth_Bps", rate);
  set_param(profile, "tilewise", "allgather_push_latency_s", latency);
  const double two_chunks = 6 * (latency + shard / 2 / rate) + wave;
  ASSERT_LT(two_chunks, 3 * (latency + shard / rate) + 2 * wave);
  ASSERT_LT(two_chunks, 12 * (latency + shard / 4 / rate) + wave);
  EXPECT_NEAR(simulate_pair(pc, "tilewise", profile, topo).time_s, two_chunks, 1e-9);
}

// Without the push keys the consumer pair stays sequential (older profiles); one key alone
// names the other.
TEST(TilewiseCopyEngine, AllGatherGemmNeedsBothPushKeys) {
  const Topology topo = four_gpu_node();
  Profile profile = copy_engine_profile(true, 0, 16);
  const PairOutcome none = simulate_pair(ag_pair(), "tilewise", profile, topo);
  EXPECT_FALSE(none.overlapped);
  EXPECT_NE(none.why_not.find("allgather_push"), std::string::npos) << none.why_not;
  set_param(profile, "tilewise", "allgather_push_bandwidth_Bps", 3e11);
  try {
    simulate_pair(ag_pair(), "tilewise", profile, topo);
    ADD_FAILURE() << "expected an error: only one push key";
  } catch (const config::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("designs.tilewise.allgather_push_latency_s missing"),
              std::string::npos)
        << e.what();
  }
}

TEST(TilewiseCopyEngine, MissingParametersNameTheKey) {
  const Topology topo = two_gpu_node();
  const Profile profile = design_profile(false);  // NCCL transport's parameters only
  try {
    simulate_pair(ce_pair(8192, 8192, 2048, CollectiveOp::AllReduce), "tilewise", profile, topo);
    FAIL() << "expected a missing-parameter error";
  } catch (const config::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("designs.tilewise.copy_engine_bandwidth_Bps"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace overlapsim::sim
