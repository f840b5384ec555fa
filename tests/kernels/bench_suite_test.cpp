// overlap-bench's suite YAML and flags (host only): valid files load, bad input names
// the file, line:column, key and expected form.
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "config/config_node.hpp"
#include "config/error.hpp"
#include "kernels/bench/bench_row.hpp"
#include "kernels/bench/flags.hpp"
#include "kernels/bench/interference_runner.hpp"
#include "kernels/bench/suite.hpp"
#include "kernels/bench/timing.hpp"

namespace overlapsim::kernels::bench {
namespace {

BenchPlan parse(const std::string& text) {
  return parse_suite(config::ConfigNode::load_string(text, "suite.yaml"));
}

std::string error_of(const std::string& text) {
  try {
    parse(text);
  } catch (const config::ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(BenchSuite, ShippedSuiteLoads) {
  const BenchPlan plan =
      load_suite(std::string(OVERLAPSIM_SOURCE_DIR) + "/benchmarks/suites/kernels_i.yaml");
  ASSERT_GE(plan.cases.size(), 6u);
  bool saw_pair = false;
  for (const BenchCase& c : plan.cases) {
    EXPECT_GE(c.iterations, 20) << c.op;  // median of >= 20 runs
    saw_pair = saw_pair || c.op == "gemm+allreduce";
  }
  EXPECT_TRUE(saw_pair);
}

// The AllReduce-only suite for short device calls must time exactly what the full
// tile-wise suite's AllReduce case times, or the two runs' rows would not be comparable.
TEST(BenchSuite, AllReduceSuiteMatchesTheFullSuitesAllReduceCase) {
  const std::string dir = std::string(OVERLAPSIM_SOURCE_DIR) + "/benchmarks/suites/";
  const BenchPlan full = load_suite(dir + "tilewise_ce.yaml");
  const BenchPlan ar = load_suite(dir + "tilewise_ce_allreduce.yaml");
  ASSERT_EQ(ar.cases.size(), 1u);
  const BenchCase& a = ar.cases[0];
  const auto it = std::find_if(full.cases.begin(), full.cases.end(),
                               [](const BenchCase& c) { return c.op == "gemm+allreduce"; });
  ASSERT_NE(it, full.cases.end());
  EXPECT_EQ(a.op, it->op);
  EXPECT_EQ(a.designs, it->designs);
  EXPECT_EQ(a.dtype, it->dtype);
  ASSERT_EQ(a.shapes.size(), it->shapes.size());
  for (std::size_t i = 0; i < a.shapes.size(); ++i) {
    EXPECT_EQ(a.shapes[i].m, it->shapes[i].m);
    EXPECT_EQ(a.shapes[i].n, it->shapes[i].n);
    EXPECT_EQ(a.shapes[i].k, it->shapes[i].k);
  }
  EXPECT_EQ(a.chunks, it->chunks);
  EXPECT_EQ(a.parts, it->parts);
  EXPECT_EQ(a.warmup, it->warmup);
  EXPECT_EQ(a.iterations, it->iterations);
  EXPECT_DOUBLE_EQ(a.min_time_s, it->min_time_s);
  EXPECT_DOUBLE_EQ(a.warmup_s, it->warmup_s);
}

TEST(BenchFlags, ShapeListForOtherToolsNamesTheToolAndTheBadItem) {
  const std::vector<PairShape> shapes = parse_shape_list("4096x4096x4096,2048x8192x8192", "tool");
  ASSERT_EQ(shapes.size(), 2u);
  EXPECT_EQ(shapes[1].m, 2048);
  EXPECT_EQ(shapes[1].n, 8192);
  EXPECT_EQ(shapes[1].k, 8192);
  EXPECT_EQ(shapes[1].table_rows, 0);
  for (const char* bad : {"8x8", "8x8x0", "8x8x8q", ""}) {
    try {
      parse_shape_list(bad, "tool");
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const std::invalid_argument& e) {
      EXPECT_EQ(std::string(e.what()).rfind("tool: --shapes: '", 0), 0u) << e.what();
    }
  }
}

TEST(BenchSuite, DefaultsApplyAndCasesOverride) {
  const BenchPlan plan = parse(
      "defaults: {iterations: 25, chunks: [2, 4]}\n"
      "cases:\n"
      "  - op: allreduce\n"
      "    bytes: [1MiB, 2GiB]\n"
      "  - op: gemm+reducescatter\n"
      "    chunks: [8]\n"
      "    shapes: [[4096, 4096, 1024]]\n");
  ASSERT_EQ(plan.cases.size(), 2u);
  EXPECT_EQ(plan.cases[0].kind, CaseKind::Collective);
  EXPECT_EQ(plan.cases[0].bytes.at(1), 2ull << 30);
  EXPECT_EQ(plan.cases[0].iterations, 25);
  EXPECT_EQ(plan.cases[0].designs.at(0), "nccl");
  EXPECT_EQ(plan.cases[1].chunks, std::vector<int>{8});
  // Every design of the pair by default: sequential and decomposed at least.
  const auto& designs = plan.cases[1].designs;
  EXPECT_EQ(designs.at(0), "sequential");
  EXPECT_NE(std::find(designs.begin(), designs.end(), "decomposed"), designs.end());
  EXPECT_EQ(plan.cases[1].shapes.at(0).k, 1024);
}

TEST(BenchSuite, ErrorsNameFileLineKeyAndExpectedForm) {
  const std::string bad_op = error_of("cases:\n  - op: gemm+broadcast\n    shapes: [[1, 2, 3]]\n");
  EXPECT_NE(bad_op.find("suite.yaml:2:"), std::string::npos) << bad_op;
  EXPECT_NE(bad_op.find("op"), std::string::npos) << bad_op;
  EXPECT_NE(bad_op.find("expected"), std::string::npos) << bad_op;
  const std::string bad_shape = error_of("cases:\n  - op: gemm\n    shapes: [[1, 2]]\n");
  EXPECT_NE(bad_shape.find("suite.yaml:3:"), std::string::npos) << bad_shape;
  EXPECT_NE(bad_shape.find("[m, n, k]"), std::string::npos) << bad_shape;
  const std::string bad_bytes = error_of("cases:\n  - op: allreduce\n    bytes: [lots]\n");
  EXPECT_NE(bad_bytes.find("bytes"), std::string::npos) << bad_bytes;
  const std::string bad_design =
      error_of("cases:\n  - op: gemm+allreduce\n    designs: [fused]\n    shapes: [[8, 8, 8]]\n");
  EXPECT_NE(bad_design.find("fused"), std::string::npos) << bad_design;
  EXPECT_NE(error_of("cases:\n  - op: embedding\n    shapes: [[8, 8, 8]]\n").find("table_rows"),
            std::string::npos);
  EXPECT_NE(error_of("cases: []\n"), "");
}

TEST(BenchFlags, BuildOneCase) {
  const BenchOptions o = parse_flags({"--op", "gemm+alltoall", "--shapes", "8192x4096x14336",
                                      "--chunks", "2,4", "--iterations", "20", "--timeout", "30s"});
  ASSERT_TRUE(o.flag_case);
  EXPECT_EQ(o.flag_case->shapes.at(0).n, 4096);
  EXPECT_EQ(o.flag_case->chunks, (std::vector<int>{2, 4}));
  EXPECT_EQ(*o.iterations, 20);
  EXPECT_DOUBLE_EQ(o.timeout_s, 30.0);
}

TEST(BenchFlags, RejectBadInput) {
  EXPECT_THROW(parse_flags({"--op", "gemm", "--shapes", "8x8"}), std::invalid_argument);
  EXPECT_THROW(parse_flags({"--op", "allreduce"}), std::invalid_argument);  // needs --bytes
  EXPECT_THROW(parse_flags({"--op", "allreduce", "--bytes", "much"}), std::invalid_argument);
  EXPECT_THROW(parse_flags({"--op", "gemm", "--shapes", "8x8x8", "--designs", "sequential"}),
               std::invalid_argument);
  EXPECT_THROW(parse_flags({"--suite", "a.yaml", "--op", "gemm"}), std::invalid_argument);
  EXPECT_THROW(parse_flags({"--frobnicate"}), std::invalid_argument);
}

// FP8 is a cuBLAS GEMM input only: every other op or design says so.
TEST(BenchFlags, Fp8OnlyForTheCublasGemm) {
  const BenchOptions o =
      parse_flags({"--op", "gemm", "--shapes", "4096x4096x4096", "--dtype", "fp8"});
  ASSERT_TRUE(o.flag_case);
  EXPECT_EQ(o.flag_case->dtype, DType::FP8_E4M3);
  EXPECT_EQ(o.flag_case->designs, (std::vector<std::string>{"cublas"}));
  const auto message = [](std::vector<std::string> args) {
    try {
      parse_flags(args);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message({"--op", "gemm", "--shapes", "64x64x64", "--dtype", "fp8", "--designs", "own"})
                .find("only the cublas and cublas_block128 designs"),
            std::string::npos);
  EXPECT_NE(message({"--op", "gemm", "--shapes", "64x64x64", "--designs", "cublas_block128"})
                .find("needs dtype fp8"),
            std::string::npos);
  const BenchOptions block = parse_flags(
      {"--op", "gemm", "--shapes", "4096x2048x7168", "--dtype", "fp8", "--designs",
       "cublas,cublas_block128"});
  EXPECT_EQ(block.flag_case->designs, (std::vector<std::string>{"cublas", "cublas_block128"}));
  EXPECT_NE(message({"--op", "allreduce", "--bytes", "1MiB", "--dtype", "fp8"})
                .find("for op gemm only"),
            std::string::npos);
  EXPECT_NE(message({"--op", "gemm", "--shapes", "8x8x8", "--dtype", "fp4"}).find("fp8"),
            std::string::npos);
}

TEST(BenchFlags, InterferenceAndSteadyState) {
  const BenchOptions o =
      parse_flags({"--op", "interference", "--shapes", "8192x8192x4096", "--bytes", "16MiB,128MiB",
                   "--collectives", "allreduce,alltoall", "--ctas", "4,8,16,32,0",
                   "--min-time-ms", "20", "--warmup-ms", "150"});
  ASSERT_TRUE(o.flag_case);
  EXPECT_EQ(o.flag_case->kind, CaseKind::Interference);
  EXPECT_EQ(o.flag_case->designs, (std::vector<std::string>{"interleaved"}));
  EXPECT_EQ(o.flag_case->collectives, (std::vector<std::string>{"allreduce", "alltoall"}));
  EXPECT_EQ(o.flag_case->ctas, (std::vector<int>{4, 8, 16, 32, 0}));
  EXPECT_EQ(o.flag_case->bytes, (std::vector<std::uint64_t>{16u << 20, 128u << 20}));
  EXPECT_DOUBLE_EQ(*o.min_time_s, 0.020);
  EXPECT_DOUBLE_EQ(*o.warmup_s, 0.150);
  // Needs sizes; rejects unknown collectives, negative CTA limits and bad durations.
  EXPECT_THROW(parse_flags({"--op", "interference", "--shapes", "8x8x8"}), std::invalid_argument);
  EXPECT_THROW(parse_flags({"--op", "interference", "--shapes", "8x8x8", "--bytes", "1MiB",
                            "--collectives", "broadcast"}),
               std::invalid_argument);
  EXPECT_THROW(parse_flags({"--op", "interference", "--shapes", "8x8x8", "--bytes", "1MiB",
                            "--ctas", "-1"}),
               std::invalid_argument);
  EXPECT_THROW(parse_flags({"--op", "gemm", "--shapes", "8x8x8", "--min-time-ms", "-3"}),
               std::invalid_argument);
  EXPECT_THROW(parse_flags({"--op", "gemm", "--shapes", "8x8x8", "--warmup-ms", "1s"}),
               std::invalid_argument);
}

TEST(BenchSuite, InterferenceCaseAndSteadyStateKeys) {
  const BenchPlan plan = parse(
      "defaults: {min_time: 20ms, warmup_time: 0.1s}\n"
      "cases:\n"
      "  - op: interference\n"
      "    shapes: [[4096, 4096, 4096]]\n"
      "    bytes: [1MiB]\n"
      "    collectives: [alltoall]\n"
      "    ctas: [8, 0]\n");
  ASSERT_EQ(plan.cases.size(), 1u);
  const BenchCase& c = plan.cases[0];
  EXPECT_EQ(c.kind, CaseKind::Interference);
  EXPECT_EQ(c.collectives, (std::vector<std::string>{"alltoall"}));
  EXPECT_EQ(c.ctas, (std::vector<int>{8, 0}));
  EXPECT_DOUBLE_EQ(c.min_time_s, 0.020);
  EXPECT_DOUBLE_EQ(c.warmup_s, 0.1);
  EXPECT_NE(error_of("cases:\n  - op: interference\n    shapes: [[8, 8, 8]]\n"
                     "    bytes: [1MiB]\n    collectives: [gather]\n")
                .find("suite.yaml:2:"),
            std::string::npos);
  EXPECT_NE(error_of("cases:\n  - op: interference\n    shapes: [[8, 8, 8]]\n")
                .find("bytes"),
            std::string::npos);
  EXPECT_NE(error_of("cases:\n  - op: interference\n    shapes: [[8, 8, 8]]\n"
                     "    bytes: [1MiB]\n    ctas: [-4]\n")
                .find("suite.yaml:5:"),
            std::string::npos);
}

TEST(InterferenceRows, DesignNamesVictimOtherAndHalf) {
  EXPECT_EQ(interference_design("gemm", "allreduce", true), "gemm|allreduce:beside");
  EXPECT_EQ(interference_design("alltoall", "gemm", false), "alltoall|gemm:alone");
}

// Steady-state timing decisions (host only): how many more iterations reach min_time.
TEST(TimingPolicy, MoreIterationsUntilMinTime) {
  EXPECT_EQ(more_iterations_for(0.0, 0.001, 10), 0);      // no minimum
  EXPECT_EQ(more_iterations_for(0.020, 0.020, 10), 0);    // reached
  EXPECT_EQ(more_iterations_for(0.020, 0.005, 10), 30);   // 0.5 ms each, 15 ms missing
  EXPECT_EQ(more_iterations_for(0.020, 0.0199, 10), 1);   // at least one
  EXPECT_EQ(more_iterations_for(10.0, 1e-6, kMaxTimedIterations - 5), 5);  // capped
  EXPECT_EQ(more_iterations_for(10.0, 1e-6, kMaxTimedIterations), 0);
  EXPECT_EQ(iterations_for(0.1, 0.003), 34);
  EXPECT_EQ(iterations_for(0.0, 0.003), 0);
  EXPECT_EQ(iterations_for(100.0, 1e-9), kMaxTimedIterations);
}

TEST(TimingPolicy, ScopedPolicyRestoresThePrevious) {
  EXPECT_DOUBLE_EQ(timing_policy().min_time_s, 0.0);
  {
    const ScopedTimingPolicy outer({0.02, 0.1});
    EXPECT_DOUBLE_EQ(timing_policy().min_time_s, 0.02);
    {
      const ScopedTimingPolicy inner({0.5, 0.0});
      EXPECT_DOUBLE_EQ(timing_policy().min_time_s, 0.5);
    }
    EXPECT_DOUBLE_EQ(timing_policy().warmup_s, 0.1);
  }
  EXPECT_DOUBLE_EQ(timing_policy().min_time_s, 0.0);
  const Timing t = summarize({3.0, 1.0, 2.0, 10.0});
  EXPECT_DOUBLE_EQ(t.median_s, 2.5);
  EXPECT_DOUBLE_EQ(t.min_s, 1.0);
  EXPECT_DOUBLE_EQ(t.max_s, 10.0);
  EXPECT_EQ(t.iterations, 4);
}

TEST(BenchRowCsv, HeaderAndRowMatchTheFixedColumns) {
  EXPECT_EQ(csv_header(),
            "gpu,driver,cuda,nccl,world,op,design,dtype,m,n,k,bytes,chunks,time_us,time_min_us,"
            "time_max_us,tflops,algbw_GBps,busbw_GBps,wrong");
  BenchRow row;
  row.op = "gemm+allreduce";
  row.design = "decomposed";
  row.dtype = "bf16";
  row.m = row.n = row.k = 8192;
  row.bytes = 8192ull * 8192 * 2;
  row.chunks = 4;
  row.time_s = 2e-3;
  row.time_min_s = 1.9e-3;
  row.time_max_s = 2.5e-3;
  row.flops = 2.0 * 8192 * 8192 * 8192;
  row.busbw_factor = 1.0;
  const DeviceTags tags{"NVIDIA H200", "580.159.04", "13.0", "2.28.3", 2};
  // 1.1e12 flop / 2 ms = 549.76 TFLOP/s; 134217728 B / 2 ms = 67.11 GB/s.
  EXPECT_EQ(csv_line(tags, row),
            "NVIDIA H200,580.159.04,13.0,2.28.3,2,gemm+allreduce,decomposed,bf16,8192,8192,8192,"
            "134217728,4,2000.00,1900.00,2500.00,549.76,67.11,67.11,0");
}

TEST(BenchRowCsv, BuilderFillsTheSameColumns) {
  const BenchRow row = RowBuilder("gemm+allreduce", "decomposed", "bf16")
                           .shape(PairShape{8192, 8192, 8192, 0})
                           .bytes(8192ull * 8192 * 2)
                           .chunks(4)
                           .times(2e-3, 1.9e-3, 2.5e-3)
                           .flops(2.0 * 8192 * 8192 * 8192)
                           .busbw_factor(1.0)
                           .wrong(3)
                           .row();
  const DeviceTags tags{"NVIDIA H200", "580.159.04", "13.0", "2.28.3", 2};
  EXPECT_EQ(csv_line(tags, row),
            "NVIDIA H200,580.159.04,13.0,2.28.3,2,gemm+allreduce,decomposed,bf16,8192,8192,8192,"
            "134217728,4,2000.00,1900.00,2500.00,549.76,67.11,67.11,3");
  // Unset columns keep BenchRow's defaults (chunks 1, zeros).
  const BenchRow bare = RowBuilder("allreduce", "nccl", "bf16").row();
  EXPECT_EQ(bare.chunks, 1);
  EXPECT_EQ(bare.m, 0);
  EXPECT_EQ(bare.wrong, 0u);
}

// No environment: the tile-wise settings are the defaults unless a flag says otherwise.
std::optional<std::string> no_env(const char*) { return std::nullopt; }

TEST(BenchFlags, TilewiseDefaultsAndFlags) {
  const std::vector<std::string> base{"--op", "gemm+allreduce", "--shapes", "4096x4096x4096"};
  const BenchOptions d = parse_flags(base, no_env);
  EXPECT_TRUE(d.tilewise.nccl);
  EXPECT_TRUE(d.tilewise.copy_engine);
  EXPECT_EQ(d.tilewise.comm_sms, (std::vector<int>{16}));
  EXPECT_EQ(d.tilewise.ce_groups, (std::vector<int>{2, 4, 8, 16}));
  EXPECT_EQ(d.tilewise.phase2_modes.size(), 3u);
  EXPECT_EQ(d.tilewise.keep, 6);
  EXPECT_EQ(d.tilewise.exhaustive_limit, 16);
  EXPECT_FALSE(d.trace);

  std::vector<std::string> args = base;
  for (const char* a :
       {"--tilewise-transport", "copy_engine", "--tilewise-phase2", "epilogue,epilogue",
        "--tilewise-groups", "1,8", "--tilewise-comm-sms", "0,8", "--tilewise-wait", "kernel",
        "--tilewise-keep", "3", "--tilewise-exhaustive", "4", "--tilewise-cache", "t.yaml",
        "--tilewise-detail", "d.csv", "--tilewise-timeline", "tl.csv", "--trace"})
    args.push_back(a);
  const BenchOptions o = parse_flags(args, no_env);
  EXPECT_FALSE(o.tilewise.nccl);
  EXPECT_TRUE(o.tilewise.copy_engine);
  EXPECT_EQ(o.tilewise.phase2_modes,
            (std::vector<tilewise::CopyEnginePhase2>{tilewise::CopyEnginePhase2::Epilogue}));
  EXPECT_EQ(o.tilewise.ce_groups, (std::vector<int>{1, 8}));
  EXPECT_EQ(o.tilewise.comm_sms, (std::vector<int>{0, 8}));
  EXPECT_EQ(o.tilewise.waits, (std::vector<tilewise::WaitMode>{tilewise::WaitMode::Kernel}));
  EXPECT_EQ(o.tilewise.keep, 3);
  EXPECT_EQ(o.tilewise.exhaustive_limit, 4);
  EXPECT_EQ(o.tilewise.cache_path, "t.yaml");
  EXPECT_EQ(o.tilewise.detail_path, "d.csv");
  EXPECT_EQ(o.tilewise.timeline_path, "tl.csv");
  EXPECT_TRUE(o.trace);
}

// AllGather+GEMM's tile-wise consumer: its two search flags, and its suites, whose pair
// case asks for the design (allgather+gemm allows tilewise; kernels_i.yaml keeps its two).
TEST(BenchFlags, AllGatherTilewiseFlagsAndSuites) {
  const std::vector<std::string> base{"--op", "allgather+gemm", "--shapes", "2048x1024x512",
                                      "--designs", "sequential,tilewise"};
  const BenchOptions d = parse_flags(base, no_env);
  EXPECT_EQ(d.tilewise.ag_chunks, (std::vector<int>{1, 2, 4}));
  EXPECT_EQ(d.tilewise.ag_push.size(), 2u);
  std::vector<std::string> args = base;
  for (const char* a : {"--tilewise-ag-chunks", "2", "--tilewise-ag-push", "rotated"})
    args.push_back(a);
  const BenchOptions o = parse_flags(args, no_env);
  EXPECT_EQ(o.tilewise.ag_chunks, (std::vector<int>{2}));
  EXPECT_EQ(o.tilewise.ag_push,
            (std::vector<tilewise::AllGatherPush>{tilewise::AllGatherPush::Rotated}));
  std::vector<std::string> bad = base;
  bad.push_back("--tilewise-ag-push");
  bad.push_back("ring");
  EXPECT_THROW(parse_flags(bad, no_env), std::invalid_argument);
  const std::string dir = std::string(OVERLAPSIM_SOURCE_DIR) + "/benchmarks/suites/";
  for (const char* suite : {"tilewise_ag4.yaml", "tilewise_ag4_smoke.yaml"}) {
    const BenchPlan plan = load_suite(dir + suite);
    ASSERT_EQ(plan.cases.size(), 1u) << suite;
    EXPECT_EQ(plan.cases[0].op, "allgather+gemm") << suite;
    EXPECT_EQ(plan.cases[0].designs,
              (std::vector<std::string>{"sequential", "decomposed", "tilewise"}))
        << suite;
    for (const PairShape& s : plan.cases[0].shapes)
      EXPECT_EQ(s.m % (128 * 4), 0) << suite << ": every shape splits into 4 rank blocks of tiles";
  }
  for (const BenchCase& c : load_suite(dir + "kernels_i.yaml").cases) {
    if (c.op == "allgather+gemm") {
      EXPECT_EQ(c.designs, (std::vector<std::string>{"sequential", "decomposed"}));
    }
  }
}

// The per-chunk vendor family: its chunk counts (0 alone: none), the reduce-scatter clock
// states, and the suites its device script runs (the bar shapes of both pairs).
TEST(BenchFlags, VendorChunksClockStatesAndSuites) {
  const std::vector<std::string> base{"--op",          "gemm+reducescatter", "--shapes",
                                      "2048x1024x512", "--designs",          "sequential,tilewise"};
  const BenchOptions d = parse_flags(base, no_env);
  EXPECT_EQ(d.tilewise.vendor_chunks, (std::vector<int>{1}));
  EXPECT_FALSE(d.tilewise.clock_states);
  std::vector<std::string> args = base;
  for (const char* a : {"--tilewise-vendor-chunks", "1,2", "--tilewise-clock-states", "1"})
    args.push_back(a);
  const BenchOptions o = parse_flags(args, no_env);
  EXPECT_EQ(o.tilewise.vendor_chunks, (std::vector<int>{1, 2}));
  EXPECT_TRUE(o.tilewise.clock_states);
  std::vector<std::string> none = base;
  for (const char* a : {"--tilewise-vendor-chunks", "0"}) none.push_back(a);
  EXPECT_TRUE(parse_flags(none, no_env).tilewise.vendor_chunks.empty());
  std::vector<std::string> bad = base;
  for (const char* a : {"--tilewise-clock-states", "2"}) bad.push_back(a);
  EXPECT_THROW(parse_flags(bad, no_env), std::invalid_argument);
  const std::string dir = std::string(OVERLAPSIM_SOURCE_DIR) + "/benchmarks/suites/";
  for (const auto& [suite, op, shapes] : {std::tuple<const char*, const char*, std::size_t>{
                                              "chunk_vendor_ag4.yaml", "allgather+gemm", 8},
                                          {"chunk_vendor_ag4_rest.yaml", "allgather+gemm", 5},
                                          {"chunk_vendor_rs4.yaml", "gemm+reducescatter", 7}}) {
    const BenchPlan plan = load_suite(dir + suite);
    ASSERT_EQ(plan.cases.size(), 1u) << suite;
    EXPECT_EQ(plan.cases[0].op, op) << suite;
    EXPECT_EQ(plan.cases[0].shapes.size(), shapes) << suite;
  }
}

TEST(BenchFlags, TilewiseEnvironmentGivesDefaultsAndFlagsWin) {
  const auto env = [](const char* name) -> std::optional<std::string> {
    const std::string n = name;
    if (n == "OVERLAPSIM_TILEWISE_TRANSPORT") return "nccl";
    if (n == "OVERLAPSIM_TILEWISE_COMM_SMS") return "4,8,16";
    if (n == "OVERLAPSIM_TILEWISE_DETAIL") return "env.csv";
    if (n == "OVERLAPSIM_TRACE") return "1";
    return std::nullopt;
  };
  const BenchOptions o = parse_flags(
      {"--op", "gemm+allreduce", "--shapes", "8x8x8", "--tilewise-detail", "flag.csv"}, env);
  EXPECT_TRUE(o.tilewise.nccl);
  EXPECT_FALSE(o.tilewise.copy_engine);
  EXPECT_EQ(o.tilewise.comm_sms, (std::vector<int>{4, 8, 16}));
  EXPECT_EQ(o.tilewise.detail_path, "flag.csv");
  EXPECT_TRUE(o.trace);
}

// --shaped-algos names the file design shaped appends its cuBLASLt algorithms to; unset
// by default (no file written).
TEST(BenchFlags, ShapedAlgosTakesAFile) {
  const auto none = [](const char*) -> std::optional<std::string> { return std::nullopt; };
  EXPECT_EQ(parse_flags({"--op", "gemm+allreduce", "--shapes", "8x8x8"}, none).shaped_algos, "");
  const BenchOptions o = parse_flags(
      {"--op", "gemm+allreduce", "--shapes", "8x8x8", "--shaped-algos", "algos.csv"}, none);
  EXPECT_EQ(o.shaped_algos, "algos.csv");
  EXPECT_THROW(parse_flags({"--op", "gemm+allreduce", "--shapes", "8x8x8", "--shaped-algos"}, none),
               std::invalid_argument);
}

TEST(BenchFlags, TilewiseBadValuesNameTheFlagOrVariable) {
  const auto message = [](std::vector<std::string> args, const EnvLookup& env) {
    try {
      parse_flags(args, env);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::vector<std::string> base{"--op", "gemm+allreduce", "--shapes", "8x8x8"};
  auto with = [&](const char* flag, const char* value) {
    std::vector<std::string> a = base;
    a.push_back(flag);
    a.push_back(value);
    return a;
  };
  EXPECT_EQ(message(with("--tilewise-transport", "ib"), no_env),
            "overlap-bench: --tilewise-transport: 'ib' is not a transport (expected nccl and/or "
            "copy_engine)");
  EXPECT_EQ(message(with("--tilewise-comm-sms", "65"), no_env),
            "overlap-bench: --tilewise-comm-sms: '65' is not an integer in 0..64");
  EXPECT_NE(message(with("--tilewise-phase2", "dma"), no_env).find("a phase-2 mode"),
            std::string::npos);
  EXPECT_NE(message(with("--tilewise-wait", ","), no_env).find("a list of wait modes"),
            std::string::npos);
  EXPECT_NE(message(with("--tilewise-groups", "0"), no_env).find("1..1024"), std::string::npos);
  EXPECT_NE(message(with("--tilewise-keep", "x"), no_env).find("an integer"), std::string::npos);
  const auto bad_env = [](const char* name) -> std::optional<std::string> {
    if (std::string(name) == "OVERLAPSIM_TILEWISE_WAIT") return "spin";
    return std::nullopt;
  };
  EXPECT_EQ(message(base, bad_env),
            "overlap-bench: OVERLAPSIM_TILEWISE_WAIT: 'spin' is not a wait mode (expected kernel "
            "and/or stream_memop)");
}

}  // namespace
}  // namespace overlapsim::kernels::bench
