#include "sim/profile/profile_load.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "config/error.hpp"

namespace overlapsim::sim {
namespace {

const std::string kDir = std::string(OVERLAPSIM_SOURCE_DIR) + "/calibration/profiles/";

// The smallest valid profile; tests break one thing at a time.
const std::string kMinimal = R"(format: 1
kind: datasheet
device: {name: Test GPU, sms: 100, source: datasheet, citation: "test sheet"}
compute:
  peak_flops_per_s:
    bf16: {value: 1000TFLOPS, source: datasheet, citation: "test sheet"}
  memory_bandwidth_Bps: {value: 2TBps, source: datasheet, citation: "test sheet"}
  memory_capacity_bytes: {value: 80GB, source: datasheet, citation: "test sheet"}
  launch_overhead_s: {value: 2us, source: paper, citation: "test paper"}
  efficiency:
    gemm:
      bf16: {over: flops, points: [[1e9, 0.2], [1e11, 0.6]], source: measured, fit_error: 0.05, citation: "test run"}
    attention_forward: {over: flops, points: [[1e9, 0.5]], source: paper, citation: "p"}
    attention_backward: {over: flops, points: [[1e9, 0.4]], source: paper, citation: "p"}
    memory: {over: bytes, points: [[1MB, 0.5], [1GB, 0.9]], source: measured, citation: "m"}
    embedding: {over: bytes, points: [[1e6, 0.3]], source: measured, citation: "m"}
)";

std::string replace(std::string text, const std::string& from, const std::string& to) {
  const auto pos = text.find(from);
  EXPECT_NE(pos, std::string::npos) << from;
  return text.replace(pos, from.size(), to);
}

std::string error_of(const std::string& yaml) {
  try {
    load_profile_string(yaml, "bad.yaml");
  } catch (const config::ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Profile, MinimalLoadsWithUnitsAndSources) {
  const Profile p = load_profile_string(kMinimal, "min.yaml");
  EXPECT_EQ(p.device.name, "Test GPU");
  EXPECT_EQ(p.device.sms, 100);
  EXPECT_DOUBLE_EQ(p.compute.peak_flops_per_s.at(Precision::BF16).value, 1e15);
  EXPECT_DOUBLE_EQ(p.compute.memory_bandwidth_Bps.value, 2e12);
  EXPECT_DOUBLE_EQ(p.compute.memory_capacity_bytes.value, 80e9);
  EXPECT_DOUBLE_EQ(p.compute.launch_overhead_s.value, 2e-6);
  EXPECT_DOUBLE_EQ(p.compute.memory_efficiency.points.front().first, 1e6);
  EXPECT_DOUBLE_EQ(p.compute.gemm_efficiency.at(Precision::BF16).at(1e10), 0.4);
  EXPECT_EQ(p.compute.gemm_efficiency.at(Precision::BF16).source.kind,
            SourceKind::Measured);
  EXPECT_DOUBLE_EQ(p.compute.gemm_efficiency.at(Precision::BF16).source.fit_error, 0.05);
  EXPECT_EQ(p.source_kinds(), "measured+datasheet+paper");
  EXPECT_TRUE(p.collectives.curves.empty());
}

TEST(Profile, ShippedDatasheetProfilesLoad) {
  const Profile h200 = load_profile(kDir + "datasheet-h200.yaml");
  EXPECT_EQ(h200.name, "datasheet-h200");
  EXPECT_DOUBLE_EQ(h200.compute.peak_flops_per_s.at(Precision::BF16).value, 989.5e12);
  EXPECT_DOUBLE_EQ(h200.compute.peak_flops_per_s.at(Precision::FP8).value, 1979e12);
  EXPECT_DOUBLE_EQ(h200.compute.memory_bandwidth_Bps.value, 4.8e12);
  EXPECT_DOUBLE_EQ(h200.compute.memory_capacity_bytes.value, 141e9);
  EXPECT_EQ(h200.device.sms, 132);
  ASSERT_EQ(h200.collectives.curves.size(), 1u);
  EXPECT_NE(h200.designs.find("tilewise", "reorder_overhead_fraction"), nullptr);

  const Profile h100 = load_profile(kDir + "datasheet-h100.yaml");
  EXPECT_DOUBLE_EQ(h100.compute.memory_bandwidth_Bps.value, 3.35e12);
  EXPECT_DOUBLE_EQ(h100.compute.memory_capacity_bytes.value, 80e9);

  const Profile a100 = load_profile(kDir + "datasheet-a100.yaml");
  EXPECT_DOUBLE_EQ(a100.compute.peak_flops_per_s.at(Precision::BF16).value, 312e12);
  EXPECT_DOUBLE_EQ(a100.compute.memory_bandwidth_Bps.value, 2.039e12);
  EXPECT_EQ(a100.compute.peak_flops_per_s.count(Precision::FP8), 0u);
  EXPECT_EQ(a100.device.sms, 108);
  // NCCL's NVLink rate on A100 (NCCL's maintainer, nccl-tests issue 149) and on H100
  // (NCCL's topo.h: 18 NVLink 4 links x 20.6 GB/s).
  ASSERT_TRUE(a100.device.nccl_nvlink_bandwidth_Bps.has_value());
  EXPECT_DOUBLE_EQ(a100.device.nccl_nvlink_bandwidth_Bps->value, 230e9);
  EXPECT_EQ(a100.device.nccl_nvlink_bandwidth_Bps->source.kind, SourceKind::Paper);
  ASSERT_TRUE(h100.device.nccl_nvlink_bandwidth_Bps.has_value());
  EXPECT_DOUBLE_EQ(h100.device.nccl_nvlink_bandwidth_Bps->value, 18 * 20.6e9);
  EXPECT_EQ(h100.device.nccl_nvlink_bandwidth_Bps->source.kind, SourceKind::Paper);
  // Every number of every shipped profile names where it comes from.
  for (const auto* p : {&h200, &h100, &a100})
    for (const auto& e : p->sources()) EXPECT_FALSE(e.source.citation.empty()) << e.what;
}

TEST(Profile, UnknownKeyIsAnErrorWithPosition) {
  const std::string err =
      error_of(replace(kMinimal, "  launch_overhead_s:", "  launch_s: 1\n  launch_overhead_s:"));
  EXPECT_NE(err.find("bad.yaml:9:3: compute.launch_s: unknown key"), std::string::npos) << err;
}

TEST(Profile, WrongUnitNamesTheExpectedForm) {
  const std::string err = error_of(replace(kMinimal, "value: 2TBps", "value: 2TB"));
  EXPECT_NE(err.find("compute.memory_bandwidth_Bps.value"), std::string::npos) << err;
  EXPECT_NE(err.find("is not a bandwidth"), std::string::npos) << err;
  EXPECT_NE(err.find("400Gbps"), std::string::npos) << err;  // the expected form
}

std::string with_curve(const std::string& key, const std::string& curve) {
  return replace(kMinimal,
                 "  launch_overhead_s:", "  " + key + ": " + curve + "\n  launch_overhead_s:");
}

TEST(Profile, KernelTimeCurvesLoadInSecondsAndNameWhatIsWrong) {
  for (const char* key : {"concurrent_comm_gemm_slowdown", "concurrent_comm_memory_slowdown",
                          "concurrent_comm_attention_slowdown"}) {
    const Profile p = load_profile_string(
        with_curve(key,
                   "{over: kernel_time, points: [[10us, 1.8], [1ms, 1.1]], source: measured, "
                   "citation: \"run\"}"),
        "ok.yaml");
    const std::string k = key;
    const LogCurve& c =
        k == "concurrent_comm_gemm_slowdown"     ? p.compute.concurrent_comm_gemm_slowdown
        : k == "concurrent_comm_memory_slowdown" ? p.compute.concurrent_comm_memory_slowdown
                                                 : p.compute.concurrent_comm_attention_slowdown;
    ASSERT_EQ(c.points.size(), 2u) << key;
    EXPECT_DOUBLE_EQ(c.points[0].first, 10e-6);
    EXPECT_DOUBLE_EQ(c.at(1e-4), 1.45);  // halfway in log time
    std::string err = error_of(with_curve(
        key, "{over: bytes, points: [[10us, 1.8]], source: measured, citation: \"run\"}"));
    EXPECT_NE(err.find(std::string("compute.") + key + ".over"), std::string::npos) << err;
    err = error_of(with_curve(
        key, "{over: kernel_time, points: [[10us, 0.9]], source: measured, citation: \"run\"}"));
    EXPECT_NE(err.find("in [1, 10]"), std::string::npos) << err;
    err = error_of(with_curve(key,
                              "{over: kernel_time, points: [[1ms, 1.8], [10us, 1.1]], source: "
                              "measured, citation: \"r\"}"));
    EXPECT_NE(err.find("does not increase"), std::string::npos) << err;
  }
}

TEST(Profile, MissingSourceIsAnError) {
  const std::string err =
      error_of(replace(kMinimal, "{value: 2us, source: paper, citation: \"test paper\"}",
                       "{value: 2us, citation: x}"));
  EXPECT_NE(err.find("compute.launch_overhead_s.source: missing"), std::string::npos) << err;
}

TEST(Profile, MissingCitationIsAnError) {
  const std::string err =
      error_of(replace(kMinimal, "{value: 2us, source: paper, citation: \"test paper\"}",
                       "{value: 2us, source: paper}"));
  EXPECT_NE(err.find("compute.launch_overhead_s.citation: missing"), std::string::npos) << err;
}

TEST(Profile, BadSourceKindIsAnError) {
  const std::string err = error_of(replace(kMinimal, "source: paper, citation: \"test paper\"",
                                           "source: guess, citation: \"test paper\""));
  EXPECT_NE(err.find("'guess' is not allowed"), std::string::npos) << err;
}

TEST(Profile, EfficiencyCurveMustIncreaseAndStayInRange) {
  EXPECT_NE(error_of(replace(kMinimal, "[[1e9, 0.2], [1e11, 0.6]]", "[[1e11, 0.2], [1e9, 0.6]]"))
                .find("does not increase"),
            std::string::npos);
  EXPECT_NE(error_of(replace(kMinimal, "[[1e9, 0.2], [1e11, 0.6]]", "[[1e9, 0.2], [1e11, 1.6]]"))
                .find("out of range"),
            std::string::npos);
}

// compute.attention_table: rows per head dimension; a wrong row count names the key.
TEST(Profile, AttentionTableIsParsedAndChecked) {
  const std::string table = R"(  attention_table:
    head_dims: [64, 128]
    seq_lens: [1024, 4096]
    forward: [[0.2, 0.4], [0.4, 0.6]]
    backward: [[0.1, 0.3], [0.3, 0.5]]
    source: measured
    citation: "probe"
  efficiency:)";
  const std::string yaml = replace(kMinimal, "  efficiency:", table);
  const Profile p = load_profile_string(yaml, "t.yaml");
  ASSERT_TRUE(p.compute.attention_table.has_value());
  EXPECT_NEAR(p.compute.attention_table->efficiency(false, 96, 2048), 0.4, 1e-12);
  EXPECT_EQ(p.compute.attention_table->source.kind, SourceKind::Measured);
  const std::string err =
      error_of(replace(yaml, "backward: [[0.1, 0.3], [0.3, 0.5]]", "backward: [[0.1, 0.3]]"));
  EXPECT_NE(err.find("backward"), std::string::npos) << err;
  EXPECT_NE(err.find("expected 2 rows"), std::string::npos) << err;
  const std::string range = error_of(replace(yaml, "forward: [[0.2, 0.4]", "forward: [[0.2, 1.4]"));
  EXPECT_NE(range.find("outside (0, 1]"), std::string::npos) << range;
}

TEST(Profile, GemmCurveNeedsAPeakForItsPrecision) {
  const std::string err =
      error_of(replace(kMinimal, "      bf16: {over: flops", "      fp8: {over: flops"));
  EXPECT_NE(err.find("no peak rate for fp8"), std::string::npos) << err;
}

TEST(Profile, CollectivesInterferenceAndDesignsAreParsed) {
  const std::string extra = R"(collectives:
  - op: allreduce
    algorithm: ring
    scope: inter_node
    ranks: 16
    segments:
      - {min_bytes: 0, latency_s: 30us, bus_bandwidth_Bps: 40GBps}
      - {min_bytes: 1MiB, latency_s: 50us, bus_bandwidth_Bps: 45GBps}
    source: measured
    fit_error: 0.02
    citation: "nccl-tests sweep"
designs:
  decomposed:
    chunks: {value: 4, source: paper, citation: "papers.md 4-chunk streams"}
    per_chunk_overhead_s: {value: 5us, source: assumed, citation: "one launch"}
measurements: raw/run1.csv
)";
  const Profile p = load_profile_string(kMinimal + extra, "full.yaml");
  ASSERT_EQ(p.collectives.curves.size(), 1u);
  const auto* c = p.collectives.find(CollectiveOp::AllReduce, Algorithm::Ring,
                                     CommScope::InterNode, 16);
  ASSERT_NE(c, nullptr);
  EXPECT_DOUBLE_EQ(c->time_s(2 << 20, 16), 50e-6 + 2097152.0 * (30.0 / 16) / 45e9);
  EXPECT_DOUBLE_EQ(p.designs.find("decomposed", "chunks")->value, 4);
  EXPECT_DOUBLE_EQ(p.designs.find("decomposed", "per_chunk_overhead_s")->value, 5e-6);
  EXPECT_EQ(p.measurements, "raw/run1.csv");
  EXPECT_EQ(p.source_kinds(), "measured+datasheet+paper+assumed");
}

// A curve's in_compute_loop_factor is optional: without it collectives between compute
// kernels take the curve's time (profiles written before the key load unchanged).
TEST(Profile, InComputeLoopFactorIsOptionalCheckedAndPrinted) {
  const std::string curve = R"(collectives:
  - op: alltoall
    algorithm: auto
    scope: intra_node
    ranks: 2
    segments:
      - {min_bytes: 0, latency_s: 10us, bus_bandwidth_Bps: 100GBps}
LOOP    source: measured
    citation: "sweep"
)";
  const Profile without = load_profile_string(kMinimal + replace(curve, "LOOP", ""), "a.yaml");
  ASSERT_EQ(without.collectives.curves.size(), 1u);
  const CollectiveCurve& c0 = without.collectives.curves[0];
  EXPECT_FALSE(c0.in_compute_loop_factor.has_value());
  EXPECT_EQ(c0.in_loop_factor(), 1.0);
  EXPECT_EQ(c0.time_in_compute_loop_s(1 << 20, 2), c0.time_s(1 << 20, 2));

  const std::string factor =
      "    in_compute_loop_factor: {value: 1.12, source: measured, citation: \"loop rows\", "
      "fit_error: 0.004}\n";
  const Profile with =
      load_profile_string(kMinimal + replace(curve, "LOOP", factor), "b.yaml");
  const CollectiveCurve& c1 = with.collectives.curves[0];
  EXPECT_EQ(c1.in_loop_factor(), 1.12);
  EXPECT_DOUBLE_EQ(c1.time_in_compute_loop_s(1 << 20, 2), 1.12 * c1.time_s(1 << 20, 2));
  bool listed = false;
  for (const auto& e : with.sources())
    listed = listed || e.what == "collectives.alltoall.auto.intra_node.in_compute_loop_factor";
  EXPECT_TRUE(listed);
  EXPECT_NE(format_profile(with).find("time x 1.12"), std::string::npos) << format_profile(with);

  const std::string out_of_range =
      error_of(kMinimal + replace(curve, "LOOP", replace(factor, "value: 1.12", "value: 3")));
  EXPECT_NE(out_of_range.find("collectives[0].in_compute_loop_factor.value"), std::string::npos)
      << out_of_range;
  EXPECT_NE(out_of_range.find("expected a time factor in [0.5, 2]"), std::string::npos);
  EXPECT_NE(error_of(kMinimal + replace(curve, "LOOP", replace(factor, ", source: measured", "")))
                .find("in_compute_loop_factor.source: missing"),
            std::string::npos);
}

TEST(Profile, UnknownDesignAndBadSegmentsAreErrors) {
  EXPECT_NE(error_of(kMinimal + "designs:\n  magic: {}\n").find("designs.magic: unknown key"),
            std::string::npos);
  const std::string bad_seg = R"(collectives:
  - {op: allreduce, algorithm: ring, scope: intra_node, source: paper, citation: c,
     segments: [{min_bytes: 1KiB, latency_s: 1us, bus_bandwidth_Bps: 1GBps}]}
)";
  EXPECT_NE(error_of(kMinimal + bad_seg).find("must start at 0"), std::string::npos);
}

TEST(Profile, FormatProfilePrintsNumbersWithSources) {
  const Profile p = load_profile(kDir + "datasheet-h200.yaml");
  const std::string text = format_profile(p);
  EXPECT_NE(text.find("989.5 TFLOP/s"), std::string::npos) << text;
  EXPECT_NE(text.find("NVIDIA H200 Tensor Core GPU datasheet"), std::string::npos);
  EXPECT_NE(text.find("fit error 10.3%"), std::string::npos);
  EXPECT_NE(text.find("numbers: measured+datasheet+paper+assumed"), std::string::npos) << text;
}

// The held-out section names one CSV or several (validate --record with repeated
// --measurements); an empty list is an error naming the key.
TEST(Profile, ValidationNamesOneOrSeveralHeldOutFiles) {
  const std::string kinds =
      "  kinds:\n    compute_fp8: {rows: 3, median_abs_err: 0.04, p90_abs_err: 0.09}\n";
  const Profile one =
      load_profile_string(kMinimal + "validation:\n  measurements: a.csv\n" + kinds, "v.yaml");
  EXPECT_EQ(one.validation.measurements, std::vector<std::string>{"a.csv"});
  const Profile two = load_profile_string(
      kMinimal + "validation:\n  measurements: [a.csv, b.csv]\n" + kinds, "v.yaml");
  EXPECT_EQ(two.validation.measurements, (std::vector<std::string>{"a.csv", "b.csv"}));
  EXPECT_EQ(two.validation.citation("compute_fp8"), "a.csv + b.csv, compute_fp8: 3 rows held out");
  const std::string e = error_of(kMinimal + "validation:\n  measurements: []\n" + kinds);
  EXPECT_NE(e.find("measurements"), std::string::npos) << e;
  EXPECT_NE(e.find("empty list"), std::string::npos) << e;
}

}  // namespace
}  // namespace overlapsim::sim
