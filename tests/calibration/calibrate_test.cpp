#include "calibration/calibrate.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "calibration/csv.hpp"
#include "calibration/manifest.hpp"
#include "calibration/measurement.hpp"
#include "calibration/suite.hpp"
#include "config/error.hpp"

namespace overlapsim::calibration {
namespace {

namespace fs = std::filesystem;

const char* kSuite = R"(format: 1
name: tiny
gpus: 2
defaults: {dtype: bf16, warmup: 1, iterations: 2}
sections:
  - name: coll
    ops: [allreduce]
    bytes: {from: 1KiB, to: 16KiB, factor: 4}
    ctas: [0, 4]
  - name: gemm
    op: gemm
    designs: [cublas, own]
    grid: {m: [128], n: [256], k: [64, 512]}
  - name: pairs
    ops: [gemm+allreduce]
    designs: [sequential]
    shapes: [[128, 256, 64]]
)";

// Steady-state defaults and an interference section after a plain one.
const char* kInterferenceSuite = R"(format: 1
name: tiny-interference
gpus: 2
defaults: {dtype: bf16, warmup: 1, iterations: 4, min_time: 20ms, warmup_time: 0.05s}
sections:
  - name: coll
    ops: [allreduce]
    bytes: [1KiB]
  - name: inter
    op: interference
    shapes: [[1024, 1024, 1024], [2048, 2048, 2048]]
    collectives: [allreduce, alltoall]
    bytes: [1MiB, 4MiB]
    ctas: [4, 0]
)";

struct Sandbox {
  fs::path dir, out, suite, calls;
  explicit Sandbox(const std::string& name, const char* suite_text = kSuite) {
    dir = fs::temp_directory_path() / ("overlapsim_calibrate_test_" + name);
    fs::remove_all(dir);
    fs::create_directories(dir);
    out = dir / "out";
    suite = dir / "suite.yaml";
    calls = dir / "calls.txt";
    std::ofstream(suite) << suite_text;
    setenv("FAKE_BENCH_CALLS", calls.c_str(), 1);
    unsetenv("FAKE_BENCH_FAIL_AFTER");
    unsetenv("FAKE_BENCH_NO_GPU");
    unsetenv("FAKE_BENCH_FAIL_OP");
  }
  ~Sandbox() {
    unsetenv("FAKE_BENCH_CALLS");
    unsetenv("FAKE_BENCH_FAIL_AFTER");
    unsetenv("FAKE_BENCH_NO_GPU");
    unsetenv("FAKE_BENCH_FAIL_OP");
  }
  CalibrateOptions options() const {
    CalibrateOptions o;
    o.out_dir = out.string();
    o.suite_path = suite.string();
    o.bench = std::string(OVERLAPSIM_SOURCE_DIR) + "/tests/calibration/fake_overlap_bench.sh";
    o.timeout_s = 30;
    return o;
  }
  int lines(const fs::path& p) const {
    std::ifstream in(p);
    int n = 0;
    for (std::string l; std::getline(in, l);) ++n;
    return n;
  }
};

TEST(Suite, ExpandsSectionsIntoCasesWithStableKeys) {
  const Suite s = parse_suite(kSuite, "tiny.yaml");
  // coll: 2 CTA settings; gemm: one call per design; pairs: one.
  ASSERT_EQ(s.cases.size(), 5u);
  EXPECT_EQ(s.cases[0].key, "coll/allreduce/ctas0/1024..16384");
  EXPECT_EQ(s.cases[1].ctas, 4);
  EXPECT_EQ(s.cases[2].key, "gemm/gemm/cublas/128x256x64..128x256x512");
  EXPECT_EQ(s.cases[4].bench_args(),
            (std::vector<std::string>{"--op", "gemm+allreduce", "--designs", "sequential",
                                      "--shapes", "128x256x64", "--dtype", "bf16", "--warmup", "1",
                                      "--iterations", "2"}));
  EXPECT_GT(s.cases[0].estimate_s(), 0);
  EXPECT_EQ(s.hash, fnv1a64_hex(kSuite));
}

TEST(Suite, TilewiseCasesMayFailPlainPairsMayNot) {
  const Suite s = parse_suite(R"(format: 1
name: tw
gpus: 2
defaults: {dtype: bf16, warmup: 1, iterations: 2}
sections:
  - name: pairs
    ops: [gemm+alltoall]
    designs: [sequential, decomposed]
    shapes: [[128, 256, 64]]
  - name: tw
    ops: [gemm+alltoall]
    designs: [sequential, tilewise]
    shapes: [[128, 256, 64]]
)",
                              "tw.yaml");
  ASSERT_EQ(s.cases.size(), 2u);
  EXPECT_FALSE(s.cases[0].may_fail());
  EXPECT_TRUE(s.cases[1].may_fail());  // a hang in our own overlap kernel skips, not stops
}

TEST(Suite, InterferenceSectionIsOneCasePerCollectiveWithItsFlags) {
  const Suite s = parse_suite(kInterferenceSuite, "inter.yaml");
  ASSERT_EQ(s.cases.size(), 3u);
  const SuiteCase& c = s.cases[1];
  EXPECT_EQ(c.key, "inter/interference/allreduce/ctas4.0/1024x1024x1024..2048x2048x2048");
  EXPECT_EQ(s.cases[2].collectives, (std::vector<std::string>{"alltoall"}));
  EXPECT_EQ(c.ctas, 0);  // no NCCL_MAX_CTAS: the splits are made inside the call
  EXPECT_TRUE(c.may_fail());
  EXPECT_FALSE(s.cases[0].may_fail());
  EXPECT_EQ(c.bench_args(),
            (std::vector<std::string>{"--op", "interference", "--shapes",
                                      "1024x1024x1024,2048x2048x2048", "--bytes",
                                      "1048576,4194304", "--collectives", "allreduce", "--ctas",
                                      "4,0", "--min-time-ms", "20", "--warmup-ms", "50", "--dtype",
                                      "bf16", "--warmup", "1", "--iterations", "4"}));
  // The steady-state settings count: 4 measurements per point at >= 20 ms each at least,
  // 2 shapes x 2 sizes x 2 CTA limits, plus the split, the process start and the warm-ups.
  EXPECT_GT(c.estimate_s(), 4.0 + 0.5 + 8 * (4 * 0.020 + 0.05));
  EXPECT_LT(c.estimate_s(), 30.0);
  // The steady-state defaults reach plain cases too, and raise their estimate.
  EXPECT_DOUBLE_EQ(s.cases[0].min_time_s, 0.020);
  SuiteCase plain = s.cases[0];
  const double with = plain.estimate_s();
  plain.min_time_s = plain.warmup_s = 0;
  // min_time replaces the 4 timed iterations (~20 us each), warmup_time adds 50 ms.
  EXPECT_NEAR(with - plain.estimate_s(), 0.020 + 0.05, 1e-3);
  EXPECT_GT(with - plain.estimate_s(), 0.060);
}

TEST(Suite, BadInterferenceSectionsNameTheKey) {
  const auto error_of = [](const std::string& section) -> std::string {
    try {
      parse_suite("format: 1\nname: x\nsections:\n" + section, "bad.yaml");
    } catch (const config::ConfigError& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_NE(error_of("  - name: i\n    op: interference\n    shapes: [[1,2,3]]\n")
                .find("bytes"),
            std::string::npos);
  EXPECT_NE(error_of("  - name: i\n    op: interference\n    shapes: [[1,2,3]]\n"
                     "    bytes: [1MiB]\n    collectives: [gather]\n")
                .find("bad.yaml:8:"),
            std::string::npos);
  EXPECT_NE(error_of("  - name: c\n    op: allreduce\n    bytes: [1MiB]\n"
                     "    collectives: [allreduce]\n")
                .find("only for op: interference"),
            std::string::npos);
  EXPECT_NE(error_of("  - name: c\n    op: allreduce\n    bytes: [1MiB]\n    min_time: 700\n")
                .find("bad.yaml:7:"),
            std::string::npos);
}

TEST(Suite, BadSuiteNamesTheKey) {
  try {
    parse_suite("format: 1\nname: x\nsections:\n  - name: a\n    op: gemm\n    shape: [[1,2,3]]\n",
                "bad.yaml");
    FAIL();
  } catch (const config::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("bad.yaml:6:"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("shape"), std::string::npos) << e.what();
  }
}

// overlap-bench's GEMV multiplies one token: a suite asking for more is refused when it is
// read, not when the case comes up on the GPU.
TEST(Suite, GemvShapesNeedOneToken) {
  try {
    parse_suite(
        "format: 1\nname: x\nsections:\n  - name: v\n    op: gemv\n"
        "    shapes: [[1, 1024, 1024], [8, 8192, 28672]]\n",
        "gemv.yaml");
    FAIL();
  } catch (const config::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("gemv.yaml:4:"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("8x8192x28672"), std::string::npos) << e.what();
  }
}

// FP8 is cuBLASLt's GEMM input only: a gemm/cublas section passes --dtype fp8, any other
// op or design is refused at the key.
TEST(Suite, Fp8SectionsAreCublasGemmsOnly) {
  const Suite s = parse_suite(R"(format: 1
name: f
gpus: 1
sections:
  - name: g8
    op: gemm
    designs: [cublas]
    dtype: fp8
    grid: {m: [1024], n: [2048], k: [4096]}
)",
                              "f.yaml");
  ASSERT_EQ(s.cases.size(), 1u);
  EXPECT_EQ(s.cases[0].dtype, "fp8");
  const auto args = s.cases[0].bench_args();
  const auto at = std::find(args.begin(), args.end(), "--dtype");
  ASSERT_NE(at, args.end());
  EXPECT_EQ(*(at + 1), "fp8");
  for (const char* section :
       {"  - name: a\n    op: gemm\n    designs: [cublas, own]\n    dtype: fp8\n    shapes: "
        "[[64, 64, 64]]\n",
        "  - name: a\n    ops: [allreduce]\n    dtype: fp8\n    bytes: [1MiB]\n"}) {
    try {
      parse_suite(std::string("format: 1\nname: x\nsections:\n") + section, "bad.yaml");
      FAIL() << section;
    } catch (const config::ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("bad.yaml:"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("fp8 is for op: gemm with designs: [cublas]"),
                std::string::npos)
          << e.what();
    }
  }
}

TEST(Calibrate, WritesRowsWithCaseKeysAndManifest) {
  Sandbox box("full");
  const CalibrateResult r = run_calibration(box.options());
  EXPECT_EQ(r.cases_total, 5);
  EXPECT_EQ(r.cases_run, 5);
  EXPECT_EQ(r.cases_skipped, 0);
  // 3 sizes x 2 CTA settings + 2 shapes x 2 designs + 1 pair row.
  EXPECT_EQ(r.rows_written, 11);
  const auto rows = read_measurements((box.out / "calibration.csv").string());
  ASSERT_EQ(rows.size(), 11u);
  EXPECT_EQ(rows[3].ctas, 4);
  EXPECT_EQ(rows[3].case_key, "coll/allreduce/ctas4/1024..16384");
  const Manifest m = load_manifest(box.out.string());
  EXPECT_EQ(m.gpu, "NVIDIA H200");
  EXPECT_EQ(m.gpus, 2);
  EXPECT_EQ(m.nccl, "2.28.3");
  EXPECT_EQ(m.suite_hash, fnv1a64_hex(kSuite));
  // The probe plus one call per case; NCCL_MAX_CTAS reached the CTA-limited call only.
  EXPECT_EQ(box.lines(box.calls), 6);
  std::ifstream calls(box.calls);
  std::stringstream text;
  text << calls.rdbuf();
  EXPECT_NE(text.str().find("allreduce 1024,4096,16384   ctas=4"), std::string::npos) << text.str();
}

TEST(Calibrate, ResumesAfterAFailedCallSkippingFinishedCases) {
  Sandbox box("resume");
  setenv("FAKE_BENCH_FAIL_AFTER", "3", 1);  // the probe and two cases succeed
  EXPECT_THROW(run_calibration(box.options()), std::runtime_error);
  const auto partial = read_measurements((box.out / "calibration.csv").string());
  EXPECT_EQ(partial.size(), 6u);  // both collective cases, nothing of the failed one
  unsetenv("FAKE_BENCH_FAIL_AFTER");
  fs::remove(box.calls);
  const CalibrateResult r = run_calibration(box.options());
  EXPECT_EQ(r.cases_skipped, 2);
  EXPECT_EQ(r.cases_run, 3);
  EXPECT_EQ(read_measurements((box.out / "calibration.csv").string()).size(), 11u);
  EXPECT_EQ(box.lines(box.calls), 4);  // probe + the 3 cases left
  // A third run has nothing left to do.
  EXPECT_EQ(run_calibration(box.options()).cases_run, 0);
}

TEST(Calibrate, InterferenceRowsLandWithTheirCaseKeys) {
  Sandbox box("interference", kInterferenceSuite);
  const CalibrateResult r = run_calibration(box.options());
  EXPECT_EQ(r.cases_run, 3);
  EXPECT_TRUE(r.failed_cases.empty());
  // 1 collective row + 2 collectives x (2 shapes x 2 sizes x 2 CTA limits x 4 rows).
  EXPECT_EQ(r.rows_written, 1 + 2 * 32);
  const auto rows = read_measurements((box.out / "calibration.csv").string());
  ASSERT_EQ(rows.size(), 65u);
  EXPECT_EQ(rows[1].op, "interference");
  EXPECT_EQ(rows[1].design, "gemm|allreduce:alone");
  EXPECT_EQ(rows[1].chunks, 4);
  EXPECT_EQ(rows[1].case_key, "inter/interference/allreduce/ctas4.0/1024x1024x1024..2048x2048x2048");
  std::ifstream calls(box.calls);
  std::stringstream text;
  text << calls.rdbuf();
  EXPECT_NE(text.str().find("--min-time-ms=20 --warmup-ms=50"), std::string::npos) << text.str();
  // overlap-bench's own deadline is a third of the case's, so its stall report comes first.
  EXPECT_NE(text.str().find("--timeout=10s"), std::string::npos) << text.str();  // 30 s / 3
}

TEST(Calibrate, AFailingInterferenceCaseIsSkippedNotFatal) {
  Sandbox box("interference_fails", kInterferenceSuite);
  setenv("FAKE_BENCH_FAIL_OP", "interference", 1);
  std::vector<std::string> lines;
  const CalibrateResult r =
      run_calibration(box.options(), [&](const std::string& l) { lines.push_back(l); });
  EXPECT_EQ(r.cases_run, 1);
  ASSERT_EQ(r.failed_cases.size(), 2u);
  EXPECT_NE(r.failed_cases[0].find("timed out"), std::string::npos) << r.failed_cases[0];
  EXPECT_EQ(read_measurements((box.out / "calibration.csv").string()).size(), 1u);
  bool said = false;
  for (const auto& l : lines) said = said || l.find("failed, skipped") != std::string::npos;
  EXPECT_TRUE(said);
  // A rerun retries exactly the failed cases.
  unsetenv("FAKE_BENCH_FAIL_OP");
  const CalibrateResult again = run_calibration(box.options());
  EXPECT_EQ(again.cases_skipped, 1);
  EXPECT_EQ(again.cases_run, 2);
  EXPECT_EQ(read_measurements((box.out / "calibration.csv").string()).size(), 65u);
}

TEST(Calibrate, ResumeWithAnotherSuiteIsRefused) {
  Sandbox box("other_suite");
  run_calibration(box.options());
  std::ofstream(box.suite, std::ios::app) << "# edited\n";
  EXPECT_THROW(run_calibration(box.options()), CalibrateUnavailable);
}

TEST(Calibrate, NoGpuOrNoBenchIsUnavailableAndWritesNothing) {
  Sandbox box("no_gpu");
  setenv("FAKE_BENCH_NO_GPU", "1", 1);
  try {
    run_calibration(box.options());
    FAIL();
  } catch (const CalibrateUnavailable& e) {
    EXPECT_NE(std::string(e.what()).find("no usable GPU"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(box.out / "calibration.csv"));
  EXPECT_FALSE(fs::exists(box.out / "manifest.yaml"));
  CalibrateOptions o = box.options();
  o.bench = (box.dir / "missing-overlap-bench").string();
  EXPECT_THROW(run_calibration(o), CalibrateUnavailable);
}

TEST(Calibrate, DryRunEstimatesWithoutRunning) {
  Sandbox box("dry");
  CalibrateOptions o = box.options();
  o.dry_run = true;
  const CalibrateResult r = run_calibration(o);
  EXPECT_EQ(r.cases_run, 0);
  EXPECT_GT(r.estimate_s, 5 * 4.0);  // at least the process start of each case
  EXPECT_FALSE(fs::exists(box.calls));
}

TEST(Calibrate, ShippedSuitesParse) {
  for (const char* s : {"default", "nvswitch-4gpu", "nvswitch-8gpu", "gemm-dtypes-1gpu", "gemm-fp8-block-1gpu"}) {
    const Suite suite = load_suite(std::string("calibration/suites/") + s + ".yaml");
    EXPECT_GT(suite.cases.size(), 5u) << s;
    double total = 0;
    for (const auto& c : suite.cases) total += c.estimate_s();
    EXPECT_LT(total, 600) << s << ": the suite must fit one 10-minute device call";
  }
}

}  // namespace
}  // namespace overlapsim::calibration
