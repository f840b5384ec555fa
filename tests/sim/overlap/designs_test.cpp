// Invariants of the overlap-design models, on one pair with
// closed-form component times: a GEMM of F FLOPs takes F / 1e15 s, the collective
// bytes / B. No design beats max(T_op, T_coll); with free communication each design
// costs what it states beyond sequential; with perfect parameters tile-wise approaches
// the bound as its groups grow; runs are deterministic.
#include "sim/overlap/designs.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "config/error.hpp"
#include "sim/overlap/pair_simulation.hpp"
#include "tests/sim/overlap/overlap_test_util.hpp"

namespace overlapsim::sim {
namespace {

using testing::design_profile;
using testing::gemm_op;
using testing::set_param;
using testing::two_gpu_node;

const std::vector<std::string> kOverlapping = {"decomposed", "tilewise", "fused", "shaped"};

// A collective of `bytes` taking bytes / bandwidth_Bps seconds.
PairCase pair_case(OpNode op, CollectiveOp coll, std::uint64_t bytes, double bandwidth_Bps,
                   bool producer = true) {
  PairCase pc;
  pc.compute = std::move(op);
  pc.collective = coll;
  pc.comm_bytes = bytes;
  pc.producer = producer;
  pc.comm_time_points = {{1ull << 40, static_cast<double>(1ull << 40) / bandwidth_Bps}};
  return pc;
}

double gemm_s(const OpNode& op) { return 2.0 * op.gemm.m * op.gemm.n * op.gemm.k / 1e15; }

TEST(OverlapDesigns, NoDesignBeatsTheBoundOfItsPair) {
  const Topology topo = two_gpu_node();
  for (bool perfect : {false, true}) {
    const Profile profile = design_profile(perfect);
    for (auto [m, n, k] : std::vector<std::array<std::int64_t, 3>>{
             {8192, 8192, 2048}, {16384, 8192, 4096}, {4096, 4096, 4096}, {32768, 7168, 2048}}) {
      for (CollectiveOp coll :
           {CollectiveOp::AllReduce, CollectiveOp::ReduceScatter, CollectiveOp::AllToAll}) {
        for (double bw : {50e9, 300e9, 3000e9}) {
          for (bool producer : {true, false}) {
            const PairCase pc = pair_case(gemm_op("gemm", m, n, k), coll,
                                          static_cast<std::uint64_t>(m) * n * 2, bw, producer);
            const double t_op = gemm_s(pc.compute);
            const double t_comm = static_cast<double>(pc.comm_bytes) / bw;
            const double bound = std::max(t_op, t_comm);
            for (const auto& d : kOverlapping) {
              const PairOutcome r = simulate_pair(pc, d, profile, topo);
              // fused moves its bytes by stores over NVLink, not by the collective: its
              // bound is the link's (the profile's 450 GB/s for the half it sends its peer).
              const double fused_bound =
                  std::max(t_op, static_cast<double>(pc.comm_bytes) / 2 / 450e9);
              EXPECT_GE(r.time_s, (d == "fused" && r.overlapped ? fused_bound : bound) * (1 - 1e-12))
                  << d << " " << m << "x" << n << "x" << k << " bw " << bw << " perfect " << perfect
                  << " producer " << producer;
              EXPECT_NEAR(r.op_alone_s, t_op, 1e-12);
              EXPECT_GE(r.compute_s, t_op * (1 - 1e-12)) << d;  // overheads only add
              EXPECT_LE(r.compute_s, r.time_s * (1 + 1e-12)) << d;
            }
            const PairOutcome seq = simulate_pair(pc, "sequential", profile, topo);
            EXPECT_NEAR(seq.time_s, t_op + t_comm, 1e-9 * (t_op + t_comm));
            // The duty cycle validate times a design's GEMM clock by: sequential computes
            // for exactly its op's time.
            EXPECT_NEAR(seq.compute_s, t_op, 1e-9 * t_op);
          }
        }
      }
    }
  }
}

TEST(OverlapDesigns, WithFreeCommunicationEachDesignCostsItsStatedOverheads) {
  const Topology topo = two_gpu_node();
  const Profile profile = design_profile(false);
  const OpNode op = gemm_op("gemm", 16384, 8192, 4096);
  const double t_op = gemm_s(op);
  PairCase pc = pair_case(op, CollectiveOp::AllReduce, 16384ull * 8192 * 2, 1e30);
  pc.comm_time_points = {{1ull << 40, 0.0}};
  EXPECT_NEAR(simulate_pair(pc, "sequential", profile, topo).time_s, t_op, 1e-12);

  // The collective's given times include NCCL's fixed cost per call, so the designs add
  // no call latency of their own here.
  // decomposed: 4 chunks of m/4 rows (each reads the whole weight: at 1e15 B/s that is
  // hidden under the FLOPs); the collectives take no time.
  EXPECT_NEAR(simulate_pair(pc, "decomposed", profile, topo).time_s, t_op, 1e-9);

  // tilewise: the own GEMM (x1.1) with signals (x1.05), wave-quantised on the SMs the
  // predictor leaves it: communication being free, it takes the smallest carve-out it
  // tries (s/4 = 4 SMs), where 4096 tiles are 32 waves as on all 132 SMs (36 on 116);
  // then the last group's wait kernel.
  const double tiles = (16384 / 128) * (8192 / 256);
  const double waves_full = std::ceil(tiles / 132), waves = std::ceil(tiles / 128);
  EXPECT_NEAR(simulate_pair(pc, "tilewise", profile, topo).time_s,
              t_op * 1.1 * 1.05 * waves / waves_full + 10e-6, 1e-9);

  // shaped: 4 chunks, each GEMM on 116 of the 132 SMs, slowed in proportion.
  EXPECT_NEAR(simulate_pair(pc, "shaped", profile, topo).time_s, t_op * 132.0 / 116.0, 1e-9);

  // fused applies to GEMM + All-to-All: the GEMM, its epilogue's stores of the half it
  // sends its peer (at 5e11 B/s), then the receivers' finish; no NCCL call.
  pc.collective = CollectiveOp::AllToAll;
  const PairOutcome fused = simulate_pair(pc, "fused", profile, topo);
  EXPECT_TRUE(fused.overlapped);
  EXPECT_NEAR(fused.time_s, t_op + 16384.0 * 8192 * 2 / 2 / 5e11 + 2e-6, 1e-9);
}

// shaped: a compute-bound GEMM slows in proportion to the SMs it keeps (cuBLASLt plans it
// for the SM target; no wave quantisation), a memory-bound one not at all.
TEST(OverlapDesigns, ShapedGemmSlowsInProportionUnlessMemoryBound) {
  const Topology topo = two_gpu_node();
  Profile few = design_profile(false);  // comm_sms 16: the GEMM keeps 116 SMs
  Profile one = few;
  set_param(one, "shaped", "comm_sms", 1);  // it keeps 131
  const auto compute_s = [&](const OpNode& op, const Profile& p) {
    PairCase pc = pair_case(op, CollectiveOp::AllReduce, 1ull << 20, 1e30);
    pc.comm_time_points = {{1ull << 40, 0.0}};
    return simulate_pair(pc, "shaped", p, topo).compute_s;
  };
  // 16384 x 8192 x 4096: 1024 tiles of 128 x 256 a chunk, 9 waves on 116 SMs and 8 on
  // 131; the model now says 131 / 116, not 9 / 8.
  const OpNode big = gemm_op("gemm", 16384, 8192, 4096);
  EXPECT_NEAR(compute_s(big, few) / compute_s(big, one), 131.0 / 116.0, 1e-9);
  // 64 x 8192 x 8192 at 1e12 B/s: reading the weight (128 MiB, 134 us a chunk) outlasts the
  // FLOPs (2 us a chunk at 1e15): held by HBM, so the SMs given up cost nothing.
  few.compute = testing::unit_compute_profile(1e12);
  one.compute = few.compute;
  const OpNode skinny = gemm_op("gemm", 64, 8192, 8192);
  EXPECT_NEAR(compute_s(skinny, few), compute_s(skinny, one), 1e-12);
}

// shaped: a part of the collective is slowed by comm_interference_slowdown for the time a
// group of the GEMM runs beside its transfer. Comm-bound: 4 groups of 1 ms, 4 parts of 2 ms
// (NCCL at 8 ms for the whole, no CTA or call cost, no compute interference). Part 0 moves
// its bytes in [1, 3] ms beside groups 1 and 2 (2 ms), so it takes 2 + 2 x 0.5 = 3 ms; the
// rest run after the GEMM: 1 + 3 + 3 x 2 = 10 ms (9 ms without the slowdown).
TEST(OverlapDesigns, ShapedPartSlowsBesideTheGemm) {
  const Topology topo = two_gpu_node();
  Profile p = design_profile(true);
  set_param(p, "shaped", "comm_interference_slowdown", 1.5);
  set_param(p, "shaped", "comm_slowdown_allreduce", 1.0);
  const std::uint64_t bytes = 1ull << 30;
  PairCase pc = pair_case(gemm_op("gemm", 16384, 8192, 4096), CollectiveOp::AllReduce, bytes,
                          1e30);
  pc.op_time_s = 4e-3 * 131.0 / 132.0;  // a group on the 131 SMs left: 1 ms
  pc.comm_time_points = {{bytes, 8e-3}};
  EXPECT_NEAR(simulate_pair(pc, "shaped", p, topo).time_s, 10e-3, 1e-6);
  set_param(p, "shaped", "comm_interference_slowdown", 1.0);
  EXPECT_NEAR(simulate_pair(pc, "shaped", p, topo).time_s, 9e-3, 1e-6);
}

// shaped: where the profile measured NCCL on comm_sms CTAs and on its default, each part is
// stretched by their ratio at the part's size (not at the whole collective's, and not by
// comm_slowdown_*). 4 MiB in 4 parts of 1 MiB; default 10 us + bytes / 200 GB/s, 16 CTAs
// 30 us + bytes / 100 GB/s: 2.66 x at 1 MiB, 2.32 x at 4 MiB. Comm-bound (a 4 us GEMM):
// the first group, then the four parts one after another.
TEST(OverlapDesigns, ShapedStretchesEachPartByTheCtaCurvesAtItsSize) {
  const Topology topo = two_gpu_node();
  Profile p = design_profile(true);
  set_param(p, "shaped", "comm_sms", 16);
  auto curve = [](int ctas, double latency_s, double busbw_Bps) {
    CollectiveCurve c;
    c.op = CollectiveOp::AllReduce;
    c.scope = CommScope::IntraNode;
    c.ranks = 2;
    c.ctas = ctas;
    c.segments = {{0, latency_s, busbw_Bps}};
    return c;
  };
  p.collectives.curves = {curve(0, 10e-6, 200e9), curve(16, 30e-6, 100e9)};
  const std::uint64_t bytes = 4ull << 20;
  const double part = static_cast<double>(bytes / 4);
  const double stretch = (30e-6 + part / 100e9) / (10e-6 + part / 200e9);
  ASSERT_GT(std::abs(stretch - (30e-6 + 4 * part / 100e9) / (10e-6 + 4 * part / 200e9)), 0.3);
  PairCase pc = pair_case(gemm_op("gemm", 16384, 8192, 4096), CollectiveOp::AllReduce, bytes, 1e30);
  pc.op_time_s = 4e-6;
  pc.comm_time_points = {{bytes, 100e-6}};
  const double group_s = 1e-6 * 132.0 / 116.0;
  EXPECT_NEAR(simulate_pair(pc, "shaped", p, topo).time_s, group_s + 100e-6 * stretch, 1e-9);
}

// The predictor times a group's collective by the measured curve at the group's size,
// stretched by NCCL's slowdown on the carve-out at that size (both size-dependent).
TEST(OverlapDesigns, TilewisePredictorTimesEachGroupAtItsSize) {
  WaveGroupProblem w;
  w.waves = 4;
  w.sms = 100;
  w.tiles = 400;
  w.wave_s = 1e-3;
  w.wait_s = 1e-6;
  w.bytes = 4e8;
  w.max_groups = 1;
  w.comm_time_at = [](double b) { return 10e-6 + b / 1e11; };
  w.stretch_at = [](double b) { return b > 1e8 ? 2.0 : 3.0; };
  // One group: all waves, then one call of 4e8 B: 1 us + 2 x (10 us + 4 ms).
  EXPECT_NEAR(plan_wave_groups(w).end_s, 4e-3 + 1e-6 + 2 * (10e-6 + 4e-3), 1e-12);
  // Two groups of 2 waves, 2e8 B each: the second call starts when the first ends.
  w.max_groups = 2;
  w.wave_s = 10e-3;  // compute-bound: two groups beat one
  const WaveGroupPlan two = plan_wave_groups(w);
  ASSERT_EQ(two.sizes, (std::vector<int>{3, 1}));
  // 3 waves (30 ms), 3e8 B call (2 x 3.01 ms, ends 36.02 ms + 1 us); 4th wave ends 40 ms;
  // its 1e8 B call takes 3 x (10 us + 1 ms).
  EXPECT_NEAR(two.end_s, 40e-3 + 1e-6 + 3 * (10e-6 + 1e-3), 1e-12);
}

// Without a measured carve-out the tile-wise design tries comm_sms, /2 and /4 and keeps
// the one its predictor finds fastest; a replayed one (PairCase::comm_sms, as validate
// replays the kernel's) is used as is: here, where the GEMM dominates and 16 SMs cost it a
// wave, replaying 16 is slower than the search, and 4 and 16 give different times.
TEST(OverlapDesigns, ReplayedCarveOutIsNotSearched) {
  const Profile profile = design_profile(false);
  const Topology topo = two_gpu_node();
  PairCase pc = pair_case(gemm_op("gemm", 16384, 8192, 8192), CollectiveOp::AllReduce,
                          16384ull * 8192 * 2, 300e9);
  const double searched = simulate_pair(pc, "tilewise", profile, topo).time_s;
  pc.comm_sms = 16;
  const double replayed = simulate_pair(pc, "tilewise", profile, topo).time_s;
  EXPECT_GT(replayed, searched * 1.001);
  pc.comm_sms = 4;
  EXPECT_NE(simulate_pair(pc, "tilewise", profile, topo).time_s, replayed);
}

TEST(OverlapDesigns, PerfectTilewiseApproachesTheBoundAsGroupsGrow) {
  const Topology topo = two_gpu_node();
  Profile profile = design_profile(true);
  // Balanced pair: the collective takes as long as the GEMM (the hardest case).
  const OpNode op = gemm_op("gemm", 32768, 16384, 4096);  // 16384 tiles: 125 waves on 131 SMs
  const double t_op = gemm_s(op);
  const std::uint64_t bytes = 32768ull * 16384 * 2;
  const PairCase pc = pair_case(op, CollectiveOp::AllReduce, bytes, bytes / t_op);
  double previous = 1e30;
  std::vector<double> gaps;
  for (int groups : {1, 2, 4, 8, 16, 32, 64}) {
    set_param(profile, "tilewise", "max_groups", groups);
    const double t = simulate_pair(pc, "tilewise", profile, topo).time_s;
    EXPECT_LE(t, previous * (1 + 1e-12)) << groups << " groups";
    previous = t;
    gaps.push_back(t / t_op - 1);
  }
  EXPECT_NEAR(gaps.front(), 1.0, 0.02);  // one group: the collective after the GEMM
  // 64 groups: a one-wave head, then tails of ~1/63 of the collective, plus 131 vs 132 SMs.
  EXPECT_LT(gaps.back(), 0.035);
}

TEST(OverlapDesigns, DesignsApplyToTheirPairsAndFallBackOtherwise) {
  const Topology topo = two_gpu_node();
  const Profile profile = design_profile(false);
  OpNode gemv = gemm_op("gemm", 1, 8192, 8192);
  gemv.kind = OpKind::Gemv;
  const PairCase gemv_ar = pair_case(gemv, CollectiveOp::AllReduce, 16384, 300e9);
  EXPECT_TRUE(simulate_pair(gemv_ar, "fused", profile, topo).overlapped);
  const PairOutcome tw = simulate_pair(gemv_ar, "tilewise", profile, topo);
  EXPECT_FALSE(tw.overlapped);
  EXPECT_NE(tw.why_not.find("not GEMM"), std::string::npos) << tw.why_not;
  EXPECT_NEAR(tw.time_s, simulate_pair(gemv_ar, "sequential", profile, topo).time_s, 1e-15);

  const PairCase gemm_ar = pair_case(gemm_op("gemm", 8192, 8192, 2048), CollectiveOp::AllReduce,
                                     8192ull * 8192 * 2, 300e9);
  EXPECT_FALSE(simulate_pair(gemm_ar, "fused", profile, topo).overlapped);
  EXPECT_TRUE(simulate_pair(gemm_ar, "tilewise", profile, topo).overlapped);

  // AllGather + GEMM (consumer): decomposed and shaped only.
  const PairCase ag = pair_case(gemm_op("gemm", 8192, 8192, 8192), CollectiveOp::AllGather,
                                8192ull * 8192 * 2, 300e9, false);
  EXPECT_TRUE(simulate_pair(ag, "decomposed", profile, topo).overlapped);
  EXPECT_TRUE(simulate_pair(ag, "shaped", profile, topo).overlapped);
  EXPECT_FALSE(simulate_pair(ag, "tilewise", profile, topo).overlapped);
  EXPECT_FALSE(simulate_pair(ag, "fused", profile, topo).overlapped);

  OpNode emb;
  emb.name = "lookup";
  emb.kind = OpKind::EmbeddingLookup;
  emb.bytes = 1ull << 30;
  const PairCase emb_a2a = pair_case(emb, CollectiveOp::AllToAll, 256ull << 20, 300e9);
  EXPECT_TRUE(simulate_pair(emb_a2a, "fused", profile, topo).overlapped);
}

TEST(OverlapDesigns, Deterministic) {
  const Topology topo = two_gpu_node();
  const Profile profile = design_profile(false);
  PairCase pc = pair_case(gemm_op("gemm", 16384, 7168, 2048), CollectiveOp::AllToAll,
                          16384ull * 7168 * 2, 300e9);
  pc.comm_time_points.clear();  // on the flow network
  for (const auto& d : kOverlapping) {
    const double a = simulate_pair(pc, d, profile, topo).time_s;
    const double b = simulate_pair(pc, d, profile, topo).time_s;
    EXPECT_EQ(a, b) << d;
    EXPECT_GT(a, 0) << d;
  }
}

TEST(OverlapDesigns, MissingParameterNamesProfileAndKey) {
  const Topology topo = two_gpu_node();
  Profile profile = design_profile(false);
  profile.designs.by_design["tilewise"].erase("comm_sms");
  const PairCase pc = pair_case(gemm_op("gemm", 8192, 8192, 2048), CollectiveOp::AllReduce,
                                8192ull * 8192 * 2, 300e9);
  try {
    simulate_pair(pc, "tilewise", profile, topo);
    FAIL() << "expected an error";
  } catch (const config::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("designs.tilewise.comm_sms: missing"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace overlapsim::sim
