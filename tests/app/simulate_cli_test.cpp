// `overlapsim simulate` end to end: the built binary on a tiny model and a 2-node cluster.
// Folding on and off give the same step, output is byte-identical across runs, the trace
// parses with the expected tracks, and bad input exits 2 with one line, writing nothing.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/cli_test_util.hpp"

namespace overlapsim {
namespace {

namespace fs = std::filesystem;

using testing::CliRun;
using testing::kRoot;
using testing::slurp;
const std::string kTiny =
    "-w " + kRoot + "/tests/app/data/tiny-gpt.yaml -c " + kRoot + "/tests/app/data/tiny-2node.yaml";

class SimulateCli : public testing::CliTest {
 protected:
  CliRun run(const std::string& args) { return run_cli("simulate " + args); }
};

TEST_F(SimulateCli, JsonHasTheContractFields) {
  const CliRun r = run(kTiny + " --format json --no-timing");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  for (const char* key : {"workload", "cluster", "profile", "profile_sources", "flops_per_step",
                          "mfu", "tokens_per_s", "designs"})
    EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_EQ(j["workload"], "tiny-gpt");
  EXPECT_EQ(j["gpus"], 8);
  EXPECT_EQ(j["profile"], "datasheet-h200");
  ASSERT_EQ(j["designs"].size(), 1u);
  const auto& d = j["designs"][0];
  EXPECT_EQ(d["design"], "sequential");
  for (const char* key :
       {"step_time_s", "compute_s", "exposed_comm_s", "overlapped_comm_s", "events", "sim_wall_s"})
    EXPECT_TRUE(d.contains(key)) << key;
  EXPECT_GT(d["step_time_s"].get<double>(), 0);
  EXPECT_NEAR(d["compute_s"].get<double>() + d["exposed_comm_s"].get<double>() +
                  d["bubble_s"].get<double>(),
              d["step_time_s"].get<double>(), 1e-12);
  EXPECT_GT(j["mfu"].get<double>(), 0);
  EXPECT_LT(j["mfu"].get<double>(), 1);
}

// The design table feeds the help: every design with its description.
TEST_F(SimulateCli, HelpListsEveryDesignOfTheTable) {
  const CliRun r = run("--help");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* design :
       {"sequential", "decomposed", "tilewise", "fused", "shaped", "best", "all"})
    EXPECT_NE(r.out.find(std::string(" ") + design + "  "), std::string::npos) << design;
  EXPECT_NE(r.out.find("copy engines"), std::string::npos) << r.out;
}

// Context parallelism: its K/V exchange runs on the context-parallel stream, which every
// design completes (cp 2 and 4 once ended in "the step did not complete" or a crash).
TEST_F(SimulateCli, ContextParallelStepsComplete) {
  for (const char* cp : {"2", "4"}) {
    const fs::path trace = dir_ / (std::string("cp") + cp + ".json");
    const CliRun r = run(kTiny + " --cp " + cp + " --tp 2 --pp 1 --design all --format json " +
                         "--no-timing --trace " + trace.string());
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["parallelism"]["cp"], std::stoi(cp));
    for (const auto& d : j["designs"]) EXPECT_GT(d["step_time_s"].get<double>(), 0);
    const std::string seq_trace = slurp(fs::path(trace).replace_extension().string() +
                                        ".sequential.json");
    EXPECT_NE(seq_trace.find("cp-comm"), std::string::npos) << cp;
  }
}

// With a measured profile: a TP all-reduce inside a host at a measured rank count (2 and 4
// in h200-nvswitch-4gpu.yaml, the 2-rank curves carried from h200-nvlink.yaml) is timed by
// its curve, one at a rank count the profile lacks (4 in a 2-GPU-only profile) by the flow
// network at the nearest curve's efficiency, DP across hosts by the links.
TEST_F(SimulateCli, SaysWhichPathTimedEachCollectiveClass) {
  // A 2-GPU-only profile: the fit of the session-1 data, which measured 2 ranks alone.
  const std::string two_only = (dir_ / "two.yaml").string();
  ASSERT_EQ(run_cli("fit calibration/data/h200x2-session1 --out " + two_only).exit_code, 0);
  struct Case {
    std::string profile;
    int tp;
    bool curve;
  };
  for (const Case& c :
       {Case{"calibration/profiles/h200-nvswitch-4gpu.yaml", 2, true},
        Case{"calibration/profiles/h200-nvswitch-4gpu.yaml", 4, true}, Case{two_only, 4, false}}) {
    const int tp = c.tp;
    const std::string measured = " --profile " + c.profile + " --pp 1";
    const CliRun r =
        run(kTiny + measured + " --tp " + std::to_string(tp) + " --format json --no-timing");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    std::map<std::string, std::string> path;
    for (const auto& c : j["collective_timing"])
      path[c["class"].get<std::string>()] = c["path"].get<std::string>();
    const std::string tp_class = "allreduce n=" + std::to_string(tp) + " intra-host";
    EXPECT_EQ(path[tp_class], c.curve ? "profile_curve" : "flow_efficiency") << r.out;
    EXPECT_EQ(path["allreduce n=" + std::to_string(8 / tp) + " inter-host"], "flow_cluster");
    const auto& by_path = j["designs"][0]["collective_launches_by_path"];
    EXPECT_GT(by_path[c.curve ? "profile_curve" : "flow_efficiency"].get<long>(), 0);
    EXPECT_GT(by_path["flow_cluster"].get<long>(), 0);
  }
}

// The tile-wise design's copy-engine transport overlaps the TP pairs inside a host with its
// own model (no NCCL carve-out), so its step differs from the NCCL transport's.
TEST_F(SimulateCli, TilewiseTransportSelectsTheCopyEngineModel) {
  const std::string args =
      kTiny +
      " --profile calibration/profiles/h200-nvlink.yaml --design tilewise --format json "
      "--no-timing";
  const CliRun nccl = run(args);
  const CliRun ce = run(args + " --tilewise-transport copy_engine");
  ASSERT_EQ(nccl.exit_code, 0) << nccl.err;
  ASSERT_EQ(ce.exit_code, 0) << ce.err;
  const auto a = nlohmann::json::parse(nccl.out)["designs"][0];
  const auto b = nlohmann::json::parse(ce.out)["designs"][0];
  EXPECT_GT(b["pairs_overlapped"].get<int>(), 0);
  EXPECT_NE(a["step_time_s"].get<double>(), b["step_time_s"].get<double>());
  bool has_copy_param = false, cites_own_tables = false;
  for (const auto& p : b["parameters"]) {
    has_copy_param = has_copy_param || p["key"] == "tilewise.copy_engine_bandwidth_Bps";
    // The own GEMM is timed by the profile's own tables, and the output cites them.
    cites_own_tables = cites_own_tables || (p["key"] == "compute.own_gemm_tables.bf16" &&
                                            p["source"] == "measured");
  }
  EXPECT_TRUE(has_copy_param);
  EXPECT_TRUE(cites_own_tables);
}

TEST_F(SimulateCli, GemmClockDutyCycleRerunsAtTheBoostedRate) {
  const std::string args = kTiny +
                           " --profile calibration/profiles/h200-nvlink.yaml --design all "
                           "--format json --no-timing";
  const CliRun steady = run(args);
  const CliRun duty = run(args + " --gemm-clock duty-cycle");
  ASSERT_EQ(steady.exit_code, 0) << steady.err;
  ASSERT_EQ(duty.exit_code, 0) << duty.err;
  const auto a = nlohmann::json::parse(steady.out)["designs"];
  const auto b = nlohmann::json::parse(duty.out)["designs"];
  ASSERT_EQ(a.size(), b.size());
  double boost = -1;
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_FALSE(a[i].contains("gemm_clock_speedup"));
    ASSERT_TRUE(b[i].contains("gemm_clock_speedup")) << b[i]["design"];
    const double f = b[i]["idle_fraction"].get<double>();
    const double speedup = b[i]["gemm_clock_speedup"].get<double>();
    ASSERT_GT(f, 0);
    ASSERT_LT(f, 1);
    // One boost per idle fraction for every design: the profile's idle_clock_boost.
    if (boost < 0) boost = (speedup - 1) / f;
    EXPECT_NEAR(speedup, 1 + boost * f, 1e-12) << b[i]["design"];
    // Faster GEMMs, a shorter step.
    EXPECT_LT(b[i]["compute_s"].get<double>(), a[i]["compute_s"].get<double>());
    EXPECT_LE(b[i]["step_time_s"].get<double>(), a[i]["step_time_s"].get<double>());
  }
  EXPECT_GT(boost, 0);
}

TEST_F(SimulateCli, FoldingOnAndOffGiveTheSameStep) {
  const CliRun folded = run(kTiny + " --format json --no-timing");
  const CliRun full = run(kTiny + " --format json --no-timing --no-fold");
  ASSERT_EQ(folded.exit_code, 0) << folded.err;
  ASSERT_EQ(full.exit_code, 0) << full.err;
  const auto a = nlohmann::json::parse(folded.out);
  const auto b = nlohmann::json::parse(full.out);
  EXPECT_LT(a["simulated_ranks"].get<int>(), b["simulated_ranks"].get<int>());
  for (const char* key : {"step_time_s", "compute_s", "exposed_comm_s", "bubble_s"})
    EXPECT_NEAR(a["designs"][0][key].get<double>(), b["designs"][0][key].get<double>(),
                1e-9 * b["designs"][0]["step_time_s"].get<double>())
        << key;
}

TEST_F(SimulateCli, OutputIsByteIdenticalAcrossRuns) {
  const CliRun a = run(kTiny + " --format json --no-timing");
  const CliRun b = run(kTiny + " --format json --no-timing");
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_EQ(a.out, b.out);
}

// One run, two readers: --json-output holds exactly what --format json prints.
TEST_F(SimulateCli, JsonOutputEqualsFormatJson) {
  const fs::path table = dir_ / "step.txt";
  const fs::path json = dir_ / "step.json";
  const CliRun both = run(kTiny + " --design all --no-timing -o " + table.string() +
                          " --json-output " + json.string());
  ASSERT_EQ(both.exit_code, 0) << both.err;
  const CliRun as_json = run(kTiny + " --design all --no-timing --format json");
  const CliRun as_table = run(kTiny + " --design all --no-timing");
  ASSERT_EQ(as_json.exit_code, 0) << as_json.err;
  EXPECT_EQ(slurp(json), as_json.out);
  EXPECT_EQ(slurp(table), as_table.out);
}

TEST_F(SimulateCli, TraceParsesWithStreamTracks) {
  const fs::path trace = dir_ / "trace.json";
  const CliRun r = run(kTiny + " --trace " + trace.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("ui.perfetto.dev"), std::string::npos);
  const auto j = nlohmann::json::parse(slurp(trace));
  std::set<std::string> threads, counters;
  std::size_t slices = 0;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "thread_name") threads.insert(e["args"]["name"]);
    if (e["ph"] == "C") counters.insert(e["name"]);
    slices += e["ph"] == "X";
  }
  for (const char* t : {"compute", "tp-comm", "dp-comm", "pp-comm"})
    EXPECT_TRUE(threads.count(t)) << t;
  for (const char* c : {"nvlink", "pcie", "network", "nvlink utilisation", "network utilisation"})
    EXPECT_TRUE(counters.count(c)) << c;
  EXPECT_GT(slices, 100u);
}

TEST_F(SimulateCli, DesignAllWritesOneTracePerDesign) {
  const CliRun r = run(kTiny + " --design all --format json --trace " + (dir_ / "t.json").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  for (const auto& d : j["designs"]) {
    const std::string design = d["design"];
    EXPECT_TRUE(fs::exists(dir_ / ("t." + design + ".json"))) << design;
    EXPECT_EQ(d["trace"], (dir_ / ("t." + design + ".json")).string());
    // Every design is modelled: its pairs and parameters are reported.
    EXPECT_TRUE(d.contains("pairs_overlapped")) << design;
    EXPECT_TRUE(d.contains("speedup_vs_sequential")) << design;
    if (design != "best") {
      EXPECT_EQ(d["parameters"].empty(), design == "sequential") << design;
    }
  }
  EXPECT_EQ(j["designs"].size(), 6u);  // the five designs, then best
  EXPECT_FALSE(fs::exists(dir_ / "t.json"));
}

// best: a winner per class of pair, never slower than sequential, and named in the table.
TEST_F(SimulateCli, BestNamesAWinnerPerPairClass) {
  const CliRun r = run(kTiny + " --design all --format json --no-timing");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  const auto& designs = j["designs"];
  ASSERT_EQ(designs.back()["design"], "best");
  const auto& best = designs.back();
  EXPECT_LE(best["step_time_s"].get<double>(), designs[0]["step_time_s"].get<double>());
  ASSERT_TRUE(best.contains("pair_classes"));
  ASSERT_FALSE(best["pair_classes"].empty());
  for (const auto& c : best["pair_classes"]) {
    EXPECT_LE(c["winner_pair_s"].get<double>(), c["sequential_pair_s"].get<double>());
    EXPECT_TRUE(c["pair_s"].contains(c["winner"].get<std::string>())) << c["class"];
  }
  const CliRun table = run(kTiny + " --design best --no-timing");
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("pair class"), std::string::npos);
  EXPECT_NE(table.out.find(best["pair_classes"][0]["class"].get<std::string>()), std::string::npos);
}

TEST_F(SimulateCli, BadInputExitsTwoWithOneLineAndWritesNothing) {
  const fs::path out = dir_ / "result.json";
  const std::string write = " -o " + out.string();
  for (const std::string& args : std::vector<std::string>{
           kTiny + " --design magic", kTiny + " --format xml", kTiny + " --images some",
           kTiny + " --profile /nonexistent/profile.yaml", kTiny + " --tp 3",
           kTiny + " --tilewise-transport carrier-pigeon", kTiny + " --gemm-clock turbo",
           kTiny + " --gemm-clock duty-cycle",  // the datasheet profile has no idle_clock_boost
           kTiny + " --configuration 'n1 tp2'",
           kTiny + " --configuration 'n1 tp1 pp1 v1 cp1 ep1 dp1 mb1 sp0 none' --tp 2",
           kTiny + " --configuration 'n1 tp1 pp1 v1 cp1 ep1 dp3 mb1 sp0 none'",
           std::string("-w /nonexistent/model.yaml")}) {
    const CliRun r = run(args + write);
    EXPECT_EQ(r.exit_code, 2) << args << ": " << r.err;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << args << ": " << r.err;  // one line
    EXPECT_EQ(r.err.rfind("error: ", 0), 0u) << r.err;
    EXPECT_FALSE(fs::exists(out)) << args;
  }
}

// A configuration the memory model says cannot run is refused with its breakdown, unless
// --ignore-memory asks for it anyway; either way the JSON carries the estimate.
TEST_F(SimulateCli, RefusesAConfigurationThatDoesNotFitInMemory) {
  std::string cluster = slurp(kRoot + "/tests/app/data/tiny-2node.yaml");
  const std::string gpu_name = "  name: NVIDIA H200 SXM 141GB\n";
  ASSERT_NE(cluster.find(gpu_name), std::string::npos);
  cluster.replace(cluster.find(gpu_name), gpu_name.size(),
                  gpu_name + "  memory_bytes: {value: 1GiB, source: \"test: too small\"}\n");
  const fs::path small = dir_ / "small-gpu.yaml";
  std::ofstream(small) << cluster;
  const std::string args = "-w " + kRoot + "/tests/app/data/tiny-gpt.yaml -c " + small.string();
  const fs::path out = dir_ / "result.json";
  const CliRun refused = run(args + " --no-timing -o " + out.string());
  EXPECT_EQ(refused.exit_code, 2) << refused.err;
  EXPECT_EQ(refused.err.find('\n'), refused.err.size() - 1) << refused.err;
  EXPECT_NE(refused.err.find("does not fit in GPU memory: stage "), std::string::npos)
      << refused.err;
  EXPECT_NE(refused.err.find("the GPU has 1.0 GiB"), std::string::npos) << refused.err;
  EXPECT_FALSE(fs::exists(out));

  const CliRun forced = run(args + " --no-timing --ignore-memory --format json");
  ASSERT_EQ(forced.exit_code, 0) << forced.err;
  const auto j = nlohmann::json::parse(forced.out);
  const auto& m = j["memory_per_gpu"];
  EXPECT_FALSE(m["fits"].get<bool>());
  EXPECT_EQ(m["capacity_bytes"].get<double>(), 1024.0 * 1024 * 1024);
  ASSERT_EQ(m["stages"].size(), 2u);  // pp 2
  double peak = 0;
  for (const auto& s : m["stages"]) {
    double sum = 0;
    for (const auto& t : s["terms"]) sum += t["bytes"].get<double>();
    EXPECT_NEAR(sum, s["total_bytes"].get<double>(), 1e-6 * sum);
    peak = std::max(peak, sum);
  }
  EXPECT_NEAR(m["peak_bytes"].get<double>(), peak, 1e-6 * peak);
  EXPECT_GT(peak, m["capacity_bytes"].get<double>());
}

TEST_F(SimulateCli, BadProfileNamesFileLineAndKey) {
  const fs::path profile = dir_ / "bad-profile.yaml";
  std::string text = slurp(kRoot + "/calibration/profiles/datasheet-h200.yaml");
  const std::string from = "  launch_overhead_s:";
  text.replace(text.find(from), from.size(), "  launch_s: 1us\n  launch_overhead_s:");
  std::ofstream(profile) << text;
  const CliRun r = run(kTiny + " --profile " + profile.string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(profile.string() + ":"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("compute.launch_s: unknown key"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace overlapsim
