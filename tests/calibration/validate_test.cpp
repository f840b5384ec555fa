#include "calibration/validate.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "calibration/csv.hpp"
#include "calibration/fit.hpp"
#include "calibration/validation_record.hpp"
#include "config/error.hpp"
#include "sim/profile/compute_model.hpp"
#include "sim/profile/profile_load.hpp"
#include "tests/calibration/calib_test_util.hpp"

namespace overlapsim::calibration {
namespace {

namespace fs = std::filesystem;
using namespace overlapsim::calibration::testing;

const char* kCluster = "workloads/clusters/h200x2-nvlink.yaml";

sim::Profile synthetic_profile(const Truth& t) {
  // One directory per process: ctest runs this binary's tests in parallel processes.
  const fs::path dir =
      fs::temp_directory_path() / ("overlapsim_validate_test_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  write_text(dir / "manifest.yaml", manifest_yaml("NVIDIA H200", {"bench.csv"}));
  write_text(dir / "bench.csv", synthetic_csv(t));
  return fit_profile(dir.string()).profile;
}

TEST(KindStats, QuantilesInterpolateBetweenOrderStatistics) {
  const KindStats k = kind_stats("x", {0.05, 0.01, 0.03, 0.02, 0.04});
  EXPECT_EQ(k.count, 5);
  EXPECT_DOUBLE_EQ(k.median_abs_err, 0.03);
  EXPECT_NEAR(k.p90_abs_err, 0.046, 1e-12);  // 0.04 + 0.6 * (0.05 - 0.04)
  EXPECT_DOUBLE_EQ(k.max_abs_err, 0.05);
}

// Ring rows (the kernel's `*_ring*` designs) replay the configuration their name gives:
// they join the copy-engine kind, listed apart from the direct route's rows, and a
// configuration the planner does not have (the split last wave) is not predicted.
TEST(Validate, RingRowsReplayTheConfigurationTheirNameGives) {
  const sim::Profile profile = sim::load_profile("calibration/profiles/h200-nvswitch-4gpu.yaml");
  const auto cluster = workloads::load_cluster("workloads/clusters/h200-8gpu.yaml");
  const unsigned long long bytes = 8192ull * 8192 * 2;
  auto row = [&](const std::string& op, const std::string& design, int groups) {
    return bench_row(op, design, 8192, 8192, 4096, bytes, groups, 1e-3, "NVIDIA H200", 4);
  };
  std::string csv = kBenchHeader;
  csv += row("gemm+allreduce", "tilewise_ce_tk_ring", 2);
  csv += row("gemm+allreduce", "tilewise_ce_tk_ring_s2d_side_whole", 2);
  csv += row("gemm+allreduce", "tilewise_ce_ring_c4_par", 2);
  csv += row("gemm+reducescatter", "tilewise_ce_ring", 8);
  csv += row("gemm+reducescatter", "tilewise_ce", 8);
  csv += row("gemm+allreduce", "tilewise_ce_tk_ring_k2", 2);
  const auto rows = parse_measurements(parse_csv(csv, "held.csv"));
  const ValidationReport r = validate(profile, rows, cluster);
  std::map<std::string, int> count;
  for (const auto& k : r.kinds) count[k.kind] = k.count;
  EXPECT_EQ(count["tilewise_ce"], 5);
  EXPECT_EQ(count["tilewise_ce_ring"], 4);
  EXPECT_EQ(count["tilewise_ce_direct"], 1);
  ASSERT_EQ(r.rows.size(), 5u);
  // Each configuration its own plan: no two all-reduce predictions alike.
  EXPECT_NE(r.rows[0].predicted_s, r.rows[1].predicted_s);
  EXPECT_NE(r.rows[0].predicted_s, r.rows[2].predicted_s);
  EXPECT_NE(r.rows[1].predicted_s, r.rows[2].predicted_s);
  ASSERT_EQ(r.unmodelled.size(), 1u);
  EXPECT_EQ(r.unmodelled[0].kind, "tilewise_ce_tk_ring_k2");
}

// GEMVs and embedding bags are timed by the memory curves, not the GEMM models: a kind of
// their own, which the uncertainty band gives memory-bound kernels.
TEST(Validate, GemvRowsAreMemoryBound) {
  const Truth t;
  const sim::Profile profile = synthetic_profile(t);
  std::string csv = kBenchHeader;
  csv += bench_row("gemv", "cublas", 1, 8192, 8192, 0, 1, 40e-6);
  csv += bench_row("gemm", "cublas", 4096, 1024, 8192, 0, 1, gemm_s(t, 4096, 1024, 8192));
  const auto rows = parse_measurements(parse_csv(csv, "held.csv"));
  const ValidationReport r = validate(profile, rows, workloads::load_cluster(kCluster));
  std::map<std::string, int> count;
  for (const auto& k : r.kinds) count[k.kind] = k.count;
  EXPECT_EQ(count["compute"], 1);
  EXPECT_EQ(count["memory_bound"], 1);
  ASSERT_EQ(r.rows.size(), 2u);
  EXPECT_EQ(r.rows[0].kind, "memory_bound");
  EXPECT_TRUE(r.rows[0].sub_kind.empty());
}

// A streaming kernel's row is the step's elementwise op of the row's bytes moved, timed by
// the memory curve (not the GEMV curve a profile may also have): memory-bound, sub-kind
// memory_bound_elementwise.
TEST(Validate, ElementwiseRowsAreTheStepsElementwiseOps) {
  const Truth t;
  sim::Profile profile = synthetic_profile(t);
  profile.compute.gemv_efficiency = profile.compute.memory_efficiency;
  for (auto& [x, y] : profile.compute.gemv_efficiency.points) y *= 0.5;
  std::string csv = kBenchHeader;
  csv += bench_row("elementwise", "add", 1 << 24, 1, 1, 3ull << 25, 1, 30e-6, "NVIDIA H200", 1);
  const auto rows = parse_measurements(parse_csv(csv, "held.csv"));
  const ValidationReport r = validate(profile, rows, workloads::load_cluster(kCluster));
  ASSERT_EQ(r.rows.size(), 1u);
  EXPECT_EQ(r.rows[0].kind, "memory_bound");
  EXPECT_EQ(r.rows[0].sub_kind, "memory_bound_elementwise");
  sim::OpNode add;
  add.kind = sim::OpKind::Elementwise;
  add.precision = sim::Precision::BF16;
  add.bytes = 3ull << 25;
  EXPECT_DOUBLE_EQ(r.rows[0].predicted_s, sim::ComputeModel(profile.compute).time_s(add));
}

// Measurements made exactly (1 + e) times the truth must show relative error 1/(1+e) - 1.
TEST(Validate, KnownErrorsPerKind) {
  const Truth t;
  const sim::Profile profile = synthetic_profile(t);
  const double gemm = gemm_s(t, 4096, 1024, 8192);     // a fitted grid node
  const double coll = allreduce_s(t, 64.0 * 1048576);  // inside the second band
  std::string csv = kBenchHeader;
  csv += bench_row("gemm", "cublas", 4096, 1024, 8192, 0, 1, gemm * 1.10);
  csv += bench_row("allreduce", "nccl", 0, 0, 0, 64ull << 20, 1, coll * 0.95);
  csv += bench_row("gemm+allreduce", "sequential", 4096, 1024, 8192, 64ull << 20, 1,
                   (gemm + coll) * 1.02);
  csv += bench_row("gemm+allreduce", "decomposed", 4096, 1024, 8192, 64ull << 20, 2, gemm);
  csv += bench_row("gemm", "own", 4096, 1024, 8192, 0, 1, gemm);
  const auto rows = parse_measurements(parse_csv(csv, "held.csv"));
  const ValidationReport r = validate(profile, rows, workloads::load_cluster(kCluster));
  ASSERT_EQ(r.kinds.size(), 5u);
  EXPECT_EQ(r.kinds[0].kind, "compute");
  EXPECT_NEAR(r.kinds[0].max_abs_err, 1 - 1 / 1.10, 1e-4);
  EXPECT_EQ(r.kinds[1].kind, "collective");
  EXPECT_NEAR(r.kinds[1].max_abs_err, 1 / 0.95 - 1, 1e-4);
  EXPECT_EQ(r.kinds[2].kind, "sequential");
  EXPECT_NEAR(r.kinds[2].max_abs_err, 1 - 1 / 1.02, 1e-4);
  // The decomposed row through the design model (sim/overlap; its error is not known in
  // closed form here, tests/sim/overlap checks the model).
  EXPECT_EQ(r.kinds[3].kind, "decomposed");
  EXPECT_EQ(r.kinds[3].count, 1);
  // The flow model of the same allreduce on the cluster file, for comparison.
  EXPECT_EQ(r.kinds[4].kind, "collective_flow");
  EXPECT_EQ(r.kinds[4].count, 1);
  ASSERT_EQ(r.unmodelled.size(), 1u);
  EXPECT_EQ(r.unmodelled[0].kind, "gemm own");
  const std::string json = format_validation_json(r);
  EXPECT_NE(json.find("\"kinds\""), std::string::npos);
  EXPECT_NE(json.find("\"median_abs_err\""), std::string::npos);
  EXPECT_NE(format_validation_table(r).find("worst"), std::string::npos);
}

TEST(Validate, RowsNeedingMoreGpusThanTheClusterAreAnError) {
  const sim::Profile profile = synthetic_profile(Truth{});
  std::string csv = kBenchHeader;
  csv += bench_row("allreduce", "nccl", 0, 0, 0, 1 << 20, 1, 1e-5, "NVIDIA H200", 8);
  const auto rows = parse_measurements(parse_csv(csv, "held.csv"));
  EXPECT_THROW(validate(profile, rows, workloads::load_cluster(kCluster)), config::ConfigError);
}

// A 4-GPU collective with a 2-GPU profile on an NVLink host: the flow network at the
// curve's efficiency (sim/collectives/collective_cost_model.hpp), latency + 2(n-1)/n S / busbw plus
// the ring's hop latencies; a 4-GPU pair is not predicted with a 2-GPU curve.
TEST(Validate, OtherCommunicatorSizesUseTheEfficiencyPath) {
  const Truth t;
  const sim::Profile profile = synthetic_profile(t);
  const double bytes = 64.0 * 1048576;
  const double closed = t.alpha2_s + 1.5 * bytes / t.busbw2_Bps;
  std::string csv = kBenchHeader;
  csv += bench_row("allreduce", "nccl", 0, 0, 0, 64ull << 20, 1, closed, "NVIDIA H200", 4);
  csv += bench_row("gemm+allreduce", "sequential", 4096, 1024, 8192, 64ull << 20, 1, closed,
                   "NVIDIA H200", 4);
  const auto rows = parse_measurements(parse_csv(csv, "held4.csv"));
  const ValidationReport r =
      validate(profile, rows, workloads::load_cluster("workloads/clusters/h200-8gpu.yaml"));
  ASSERT_EQ(r.kinds.size(), 2u);
  EXPECT_EQ(r.kinds[0].kind, "collective_eff");
  EXPECT_LT(r.kinds[0].max_abs_err, 0.02);  // the hop latencies: 6 steps x 2 hops x 0.3 us
  EXPECT_EQ(r.kinds[1].kind, "collective_flow");
  ASSERT_EQ(r.unmodelled.size(), 1u);
  EXPECT_EQ(r.unmodelled[0].kind, "sequential");
}

// Tile-wise rows of the copy-engine transport are predicted by that transport's model, with
// the copy-engine parameters the profile carries (from datasheet-h200.yaml).
TEST(Validate, CopyEngineTilewiseRowsHaveTheirOwnKind) {
  const sim::Profile profile = synthetic_profile(Truth{});
  std::string csv = kBenchHeader;
  csv += bench_row("gemm+allreduce", "tilewise_ce", 4096, 1024, 8192, 64ull << 20, 4, 1e-3);
  csv += bench_row("gemm+allreduce", "tilewise", 4096, 1024, 8192, 64ull << 20, 4, 1e-3);
  const auto rows = parse_measurements(parse_csv(csv, "ce.csv"));
  const ValidationReport r = validate(profile, rows, workloads::load_cluster(kCluster));
  ASSERT_EQ(r.rows.size(), 2u);
  EXPECT_EQ(r.rows[0].kind, "tilewise_ce");
  EXPECT_EQ(r.rows[1].kind, "tilewise");
  EXPECT_GT(r.rows[0].predicted_s, 0);
  // Different transports, different predictions (NCCL on a carve-out vs copy engines).
  EXPECT_NE(r.rows[0].predicted_s, r.rows[1].predicted_s);
}

// The shaped runner's pairs (`shaped:s<S>:c<C>`, chunks k) are replayed by the shaped model
// at its own grid point only: S = C = designs.shaped.comm_sms with designs.shaped.chunks; the
// other points are listed as not predicted, with why.
TEST(Validate, ShapedRowsAtTheModelsPointOnly) {
  const sim::Profile profile = sim::load_profile("calibration/profiles/datasheet-h100.yaml");
  std::string csv = kBenchHeader;
  csv += bench_row("gemm+allreduce", "shaped:s16:c16", 8192, 8192, 2048, 128ull << 20, 4, 1e-3);
  csv += bench_row("gemm+allreduce", "shaped:s8:c8", 8192, 8192, 2048, 128ull << 20, 4, 1e-3);
  csv += bench_row("gemm+allreduce", "shaped:s16:c16", 8192, 8192, 2048, 128ull << 20, 2, 1e-3);
  const auto rows = parse_measurements(parse_csv(csv, "shaped.csv"));
  const ValidationReport r =
      validate(profile, rows, workloads::load_cluster("workloads/clusters/h100-128node-ndr.yaml"));
  ASSERT_EQ(r.rows.size(), 1u);
  EXPECT_EQ(r.rows[0].kind, "shaped");
  // The pair is no faster than its GEMM alone on all SMs.
  const sim::ComputeModel model(profile.compute);
  sim::OpNode gemm;
  gemm.kind = sim::OpKind::Gemm;
  gemm.gemm = {8192, 8192, 2048, 1};
  EXPECT_GT(r.rows[0].predicted_s, model.time_s(gemm));
  ASSERT_EQ(r.unmodelled.size(), 1u);
  EXPECT_EQ(r.unmodelled[0].kind, "shaped");
  EXPECT_EQ(r.unmodelled[0].count, 2);
  EXPECT_NE(r.unmodelled[0].reason.find("another grid point"), std::string::npos)
      << r.unmodelled[0].reason;
}

// A collective timed inside a pair loop (calibrate's pair case, or a plain overlap-bench
// pair row's collective carrying the GEMM shape) is predicted by curve x
// in_compute_loop_factor, the same collective alone by the curve; `collective` keeps both,
// the sub-kinds split them. The sequential pair's collective runs between compute kernels.
// Compute rows are also reported per input type, where more than one type occurs: the
// types' counts add up to compute's, and a bf16-only file has no per-type kinds.
TEST(Validate, ComputeRowsPerInputTypeWhereSeveralOccur) {
  const auto count_of = [](const ValidationReport& r, const std::string& kind) {
    for (const auto& k : r.kinds)
      if (k.kind == kind) return k.count;
    return 0;
  };
  const ValidationReport mixed =
      validate(sim::load_profile("calibration/profiles/h200-1gpu.yaml"),
               read_measurements("calibration/data/h200x1-dtypes/heldout.csv"),
               workloads::load_cluster(kCluster));
  EXPECT_GT(count_of(mixed, "compute_fp8"), 0);
  EXPECT_GT(count_of(mixed, "compute_fp16"), 0);
  EXPECT_GT(count_of(mixed, "compute_fp8_block"), 0);  // by fp8 x the block factor
  EXPECT_EQ(count_of(mixed, "compute_bf16") + count_of(mixed, "compute_fp16") +
                count_of(mixed, "compute_fp8") + count_of(mixed, "compute_fp8_block"),
            count_of(mixed, "compute"));
  const ValidationReport bf16 = validate(sim::load_profile("calibration/profiles/h200-nvlink.yaml"),
                                         read_measurements("calibration/data/h200x2/heldout.csv"),
                                         workloads::load_cluster(kCluster));
  EXPECT_GT(count_of(bf16, "compute"), 0);
  EXPECT_EQ(count_of(bf16, "compute_bf16"), 0);
}

TEST(Validate, InComputeLoopFactorAppliesToLoopRowsOnly) {
  const Truth t;
  sim::Profile profile = synthetic_profile(t);
  sim::Profile plain = profile;
  for (auto& c : profile.collectives.curves)
    if (c.op == sim::CollectiveOp::AllReduce && c.ctas == 0)
      c.in_compute_loop_factor = sim::Sourced{1.1, {sim::SourceKind::Measured, "test", 0.0}};
  const double coll = allreduce_s(t, 64.0 * 1048576);
  const double gemm = gemm_s(t, 4096, 1024, 8192);
  std::string csv(kBenchHeader);
  csv.pop_back();
  csv += ",ctas,case\n";
  auto with_case = [](std::string row, const std::string& key) {
    row.pop_back();
    return row + ",0," + key + "\n";
  };
  csv += with_case(bench_row("allreduce", "nccl", 0, 0, 0, 64ull << 20, 1, coll),
                   "collectives/allreduce/ctas0/sizes");
  csv += with_case(bench_row("allreduce", "nccl", 4096, 1024, 8192, 64ull << 20, 1, 1.1 * coll),
                   "designs/gemm+allreduce/sequential/shapes");
  csv += with_case(bench_row("gemm+allreduce", "sequential", 4096, 1024, 8192, 64ull << 20, 1,
                             gemm + 1.1 * coll),
                   "designs/gemm+allreduce/sequential/shapes");
  // A plain overlap-bench pair run (no case column): the collective row with m > 0.
  const std::string plain_csv =
      std::string(kBenchHeader) +
      bench_row("allreduce", "nccl", 4096, 1024, 8192, 64ull << 20, 1, 1.1 * coll);
  const auto rows = parse_measurements(parse_csv(csv, "held.csv"));
  const auto plain_rows = parse_measurements(parse_csv(plain_csv, "plain.csv"));
  const auto cluster = workloads::load_cluster(kCluster);
  const ValidationReport r = validate(profile, rows, cluster);
  const ValidationReport before = validate(plain, rows, cluster);
  std::map<std::string, const ValidationRow*> by_where, before_where;
  for (const auto& row : r.rows)
    if (row.kind != "collective_flow") by_where[row.row->where()] = &row;
  for (const auto& row : before.rows)
    if (row.kind != "collective_flow") before_where[row.row->where()] = &row;
  const ValidationRow* alone = by_where["held.csv:2"];
  const ValidationRow* loop = by_where["held.csv:3"];
  ASSERT_TRUE(alone && loop);
  EXPECT_EQ(alone->sub_kind, "collective_alone");
  EXPECT_EQ(loop->sub_kind, "collective_in_loop");
  EXPECT_NEAR(alone->rel_err, 0, 1e-3);  // the curve is the truth within its fit
  EXPECT_NEAR(loop->predicted_s, 1.1 * alone->predicted_s, 1e-12);
  EXPECT_NEAR(before_where["held.csv:3"]->predicted_s, alone->predicted_s, 1e-12);
  // The sequential pair: its collective 10 % longer than with the plain profile.
  EXPECT_NEAR(by_where["held.csv:4"]->predicted_s - before_where["held.csv:4"]->predicted_s,
              0.1 * alone->predicted_s, 1e-9);
  std::vector<std::string> kinds;
  for (const auto& k : r.kinds) kinds.push_back(k.kind);
  ASSERT_GE(kinds.size(), 4u);
  EXPECT_EQ(kinds[0], "collective");
  EXPECT_EQ(kinds[1], "collective_alone");
  EXPECT_EQ(kinds[2], "collective_in_loop");
  EXPECT_EQ(r.kinds[0].count, 2);
  const ValidationReport p = validate(profile, plain_rows, cluster);
  ASSERT_FALSE(p.rows.empty());
  EXPECT_EQ(p.rows[0].sub_kind, "collective_in_loop");
  EXPECT_NEAR(p.rows[0].predicted_s, loop->predicted_s, 1e-12);
}

// The shipped profiles are what `overlapsim fit` makes of the shipped data (so they are not
// stale), they load, and validate runs on their held-out rows. The 2-GPU profile is fitted
// and the 8-GPU profiles are fitted on the 4-GPU one (which carries its 4-rank curves). The figures
// are printed, not asserted: the acceptance bars are reported in docs/calibration.md.
struct ShippedCase {
  const char* profile;
  const char* data;
  const char* base;  // "" = the datasheet profile
  const char* cluster;
  // Held-out rows of the data the profile's carried models came from (the fp8 and fp16 GEMM
  // models its base chain fitted on one GPU), validated with its own.
  std::vector<std::string> also = {};
};

// Test lists name the case by its profile, not by the struct's bytes.
void PrintTo(const ShippedCase& c, std::ostream* os) { *os << c.profile; }

class ShippedProfile : public ::testing::TestWithParam<ShippedCase> {};

// The one-GPU dtype runs whose fp16 and fp8 fits every later profile carries, and the H200's
// memory-bound kernels at sizes no suite fits (validate's `memory_bound` rows).
constexpr const char* kH200Dtypes = "calibration/data/h200x1-dtypes/heldout.csv";
constexpr const char* kH200MemoryBound = "calibration/data/h200x1-memory-bound/heldout.csv";
// PyTorch's streaming kernels (copy, add, scale) on one H200, which the memory curve times.
constexpr const char* kH200Elementwise = "benchmarks/results/h200x1/elementwise_probe/rows.csv";
constexpr const char* kH100Dtypes = "calibration/data/h100x1-dtypes/heldout.csv";
// The shaped runs' baselines on 2 and 4 H100s (cuBLAS GEMMs, NCCL collectives, the
// sequential and decomposed pairs), which the H200's NVLink curves carried into the H100
// profiles, and the decomposed design's parameters, are checked against.
constexpr const char* kH100Baselines = "benchmarks/results/h100x4/shaped/baseline_rows.csv";
// The shaped pairs at the model's grid point (16 SMs free, NCCL on 16 CTAs, 4 chunks) of
// the three shaped runs of each GPU (benchmarks/gpu/shaped_point_rows.py), which the shaped
// design's parameters were fitted to and validate replays with the profile's own models.
constexpr const char* kH100ShapedPoint = "benchmarks/results/h100x4/shaped/model_point_rows.csv";
constexpr const char* kH200ShapedPoint = "benchmarks/results/h200x4/shaped/model_point_rows.csv";

TEST_P(ShippedProfile, RefitsByteIdenticallyAndValidatesOnHeldOut) {
  const ShippedCase& c = GetParam();
  FitOptions options;
  options.base_profile = c.base;
  const FitResult r = fit_profile(c.data, options);
  std::ifstream in(c.profile);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const sim::Profile profile = sim::load_profile(c.profile);
  std::vector<std::string> heldout = {std::string(c.data) + "/heldout.csv"};
  heldout.insert(heldout.end(), c.also.begin(), c.also.end());
  const auto rows = read_measurements(heldout);
  std::string flags;
  for (const std::string& file : heldout) flags += " --measurements " + file;
  const ValidationReport report = validate(profile, rows, workloads::load_cluster(c.cluster));
  ASSERT_FALSE(report.kinds.empty());
  // The shipped file is the fit followed by its held-out errors (validate --record).
  EXPECT_EQ(with_validation_section(r.yaml, report, heldout, c.cluster), text)
      << "rerun: overlapsim fit " << c.data << " --out " << c.profile << (*c.base ? " --base " : "")
      << c.base << " && overlapsim validate --profile " << c.profile << flags << " --cluster "
      << c.cluster << " --record";
  std::printf("%s", format_validation_table(report, 5).c_str());
  for (const auto& k : report.kinds) {
    EXPECT_GT(k.count, 0);
    EXPECT_TRUE(std::isfinite(k.max_abs_err));
  }
}

// datasheet-h100.yaml holds copies of the GEMM models fitted into h100-1gpu.yaml (the H100
// clusters read the datasheet profile): they must stay the fitted ones.
TEST(ShippedProfiles, DatasheetH100CarriesTheFittedGemmModels) {
  const sim::Profile fitted = sim::load_profile("calibration/profiles/h100-1gpu.yaml");
  const sim::Profile sheet = sim::load_profile("calibration/profiles/datasheet-h100.yaml");
  using Tables = std::map<sim::Precision, sim::GemmTable> sim::ComputeProfile::*;
  for (Tables which : {&sim::ComputeProfile::gemm_tables, &sim::ComputeProfile::own_gemm_tables}) {
    const sim::GemmTable& f = (fitted.compute.*which).at(sim::Precision::BF16);
    const sim::GemmTable& d = (sheet.compute.*which).at(sim::Precision::BF16);
    EXPECT_EQ(d.source.citation.rfind(f.source.citation, 0), 0u) << d.source.citation;
    for (double m : {768.0, 3072.0, 8192.0})
      for (double k : {1536.0, 11008.0})
        EXPECT_EQ(d.compute_s(m, 5120, k), f.compute_s(m, 5120, k)) << m << " x 5120 x " << k;
  }
}

// Its validation section is what `validate --record` writes for its held-out rows: the bf16
// off-grid run and the dtype run (its fp8 model's), so fp8 projections on H100 size their
// compute band from held-out fp8 rows, and the H100's own NCCL rows, so its intra-host
// collectives are sized by the carried curves' error on this chip.
TEST(ShippedProfiles, DatasheetH100ValidationIsItsHeldOutRows) {
  const std::string path = "calibration/profiles/datasheet-h100.yaml";
  const std::string cluster = "workloads/clusters/h100-128node-ndr.yaml";
  const std::vector<std::string> files = {"calibration/data/h100x1-gemm-offgrid/heldout.csv",
                                          kH100Dtypes, kH100Baselines, kH100ShapedPoint};
  const auto rows = read_measurements(files);
  std::ifstream in(path);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const sim::Profile profile = sim::load_profile(path);
  ValidationReport report = validate(profile, rows, workloads::load_cluster(cluster));
  report.profile_path = path;
  EXPECT_EQ(with_validation_section(text, report, files, cluster), text);
  ASSERT_TRUE(profile.validation.find("compute_fp8").has_value());
  ASSERT_TRUE(profile.validation.find("collective").has_value());
  ASSERT_TRUE(profile.validation.find("decomposed").has_value());
  ASSERT_TRUE(profile.validation.find("shaped").has_value());
  EXPECT_EQ(profile.validation.measurements, files);
}

// The H100's intra-host collective curves are the H200's (same GH100 die, same NVLink 4
// and NVSwitch): copies of every curve of h200-nvswitch-8gpu.yaml, each marked assumed and
// saying so (calibration/profiles/carry_nvlink_curves.py), so a refit of the H200 profiles
// cannot leave stale copies behind.
TEST(ShippedProfiles, DatasheetH100CarriesTheH200NvlinkCurves) {
  const sim::Profile h200 = sim::load_profile("calibration/profiles/h200-nvswitch-8gpu.yaml");
  for (const char* path :
       {"calibration/profiles/datasheet-h100.yaml", "calibration/profiles/h100-1gpu.yaml"}) {
    const sim::Profile h100 = sim::load_profile(path);
    ASSERT_EQ(h100.collectives.curves.size(), h200.collectives.curves.size()) << path;
    for (std::size_t i = 0; i < h200.collectives.curves.size(); ++i) {
      const sim::CollectiveCurve& from = h200.collectives.curves[i];
      const sim::CollectiveCurve& to = h100.collectives.curves[i];
      EXPECT_EQ(to.op, from.op);
      EXPECT_EQ(to.ranks, from.ranks);
      EXPECT_EQ(to.ctas, from.ctas);
      for (std::uint64_t bytes : {1ull << 10, 1ull << 20, 1ull << 27, 1ull << 32})
        EXPECT_EQ(to.time_s(bytes, to.ranks), from.time_s(bytes, from.ranks)) << path << " " << i;
      EXPECT_EQ(to.in_loop_factor(), from.in_loop_factor());
      EXPECT_EQ(to.source.kind, sim::SourceKind::Assumed) << path << " " << i;
      EXPECT_EQ(to.source.citation.rfind(from.source.citation, 0), 0u) << to.source.citation;
      EXPECT_NE(to.source.citation.find("taken for the H100 SXM5"), std::string::npos);
    }
  }
}

// Its fp8 cuBLASLt model is the fit of the one-H100 dtype run (with the fp8 workload shapes
// it lists): the same model, the same citation.
TEST(ShippedProfiles, DatasheetH100CarriesTheFittedFp8Model) {
  FitOptions options;
  options.base_profile = "calibration/profiles/datasheet-h100.yaml";
  const FitResult r = fit_profile("calibration/data/h100x1-dtypes", options);
  const sim::Profile fitted = sim::load_profile_string(r.yaml, "fit of h100x1-dtypes");
  const sim::Profile sheet = sim::load_profile("calibration/profiles/datasheet-h100.yaml");
  const sim::GemmTable& f = fitted.compute.gemm_tables.at(sim::Precision::FP8);
  const sim::GemmTable& d = sheet.compute.gemm_tables.at(sim::Precision::FP8);
  EXPECT_EQ(d.source.citation, f.source.citation);
  for (double m : {768.0, 3072.0, 8192.0})
    for (double k : {1536.0, 11008.0})
      EXPECT_EQ(d.compute_s(m, 5120, k), f.compute_s(m, 5120, k)) << m << " x 5120 x " << k;
}

INSTANTIATE_TEST_SUITE_P(
    Shipped, ShippedProfile,
    ::testing::Values(ShippedCase{"calibration/profiles/h200-nvlink.yaml",
                                  "calibration/data/h200x2",
                                  "calibration/profiles/h200-1gpu.yaml",
                                  kCluster,
                                  {kH200Dtypes, kH200MemoryBound, kH200Elementwise}},
                      ShippedCase{"calibration/profiles/h200-1gpu.yaml",
                                  "calibration/data/h200x1-dtypes",
                                  "",
                                  kCluster,
                                  {kH200MemoryBound, kH200Elementwise}},
                      ShippedCase{"calibration/profiles/h200-nvswitch-4gpu.yaml",
                                  "calibration/data/h200x4-2026-11-27",
                                  "calibration/profiles/h200-nvlink.yaml",
                                  "workloads/clusters/h200-8gpu.yaml",
                                  {kH200Dtypes, kH200MemoryBound, kH200Elementwise,
                                   kH200ShapedPoint}},
                      ShippedCase{"calibration/profiles/h200-nvswitch-8gpu.yaml",
                                  "calibration/data/h200x8",
                                  "calibration/profiles/h200-nvswitch-4gpu.yaml",
                                  "workloads/clusters/h200-8gpu.yaml",
                                  {kH200Dtypes, kH200MemoryBound, kH200Elementwise,
                                   kH200ShapedPoint}},
                      ShippedCase{"calibration/profiles/h100-1gpu.yaml",
                                  "calibration/data/h100x1-gemm-offgrid",
                                  "",
                                  "workloads/clusters/h100-128node-ndr.yaml",
                                  {kH100Dtypes, kH100Baselines, kH100ShapedPoint}}));

}  // namespace
}  // namespace overlapsim::calibration
