// `overlapsim redistribute` end to end: the built binary on a shipped cluster file. The JSON
// figures against hand-worked values, the table's sections, byte-identical output across
// runs, and every bad layout exiting 2 with one line naming the problem and writing nothing.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/cli_test_util.hpp"

namespace overlapsim {
namespace {

namespace fs = std::filesystem;

using testing::CliRun;
using testing::kRoot;
using testing::slurp;
const std::string kNode = kRoot + "/workloads/clusters/h200-8gpu.yaml";

class RedistributeCli : public testing::CliTest {
 protected:
  CliRun run(const std::string& args) { return run_cli("redistribute " + args); }

  void expect_bad_input(const std::string& args, const std::string& needle) {
    const fs::path target = dir_ / "result.json";
    const CliRun r = run(args + " --format json --output " + target.string());
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.err;
    EXPECT_NE(r.err.find(needle), std::string::npos) << args << "\nstderr: " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
    EXPECT_FALSE(fs::exists(target)) << args;
  }
};

TEST_F(RedistributeCli, RowsToColumnsOnOneNodeIsOneAllToAll) {
  const CliRun r = run("--mesh x=8 --shape 4096x8192 --dtype bf16 --from \"P('x', None)\" "
                       "--to \"[Shard(1)]\" --cluster " + kNode + " --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["to"], "P(None, 'x')");
  const std::uint64_t shard = 4096ull * 8192 * 2 / 8;  // 8 MiB per device
  EXPECT_EQ(j["from_bytes_per_device"], shard);
  const auto& s = j["plans"][0];
  EXPECT_EQ(s["name"], "synthesised");
  ASSERT_EQ(s["steps"].size(), 1u);
  EXPECT_EQ(s["steps"][0]["kind"], "all-to-all");
  EXPECT_EQ(s["steps"][0]["axes"], nlohmann::json::array({"x"}));
  // Each device keeps 1/8 of its shard and receives the other 7/8.
  EXPECT_EQ(s["max_bytes_received_per_device"], shard / 8 * 7);
  EXPECT_EQ(s["bytes_moved"], shard / 8 * 7 * 8);
  EXPECT_EQ(s["peak_bytes_per_device"], 2 * shard);
  const auto& n = j["plans"][1];
  EXPECT_EQ(n["name"], "naive");
  EXPECT_EQ(n["steps"][0]["kind"], "all-gather");
  EXPECT_EQ(n["peak_bytes_per_device"], shard + 8 * shard);
  EXPECT_GT(s["time_s"].get<double>(), 0);
  EXPECT_GT(j["speedup"].get<double>(), 1.0);
  EXPECT_NEAR(j["speedup"].get<double>(),
              n["time_s"].get<double>() / s["time_s"].get<double>(), 1e-9);
}

TEST_F(RedistributeCli, TableShowsBothPlansSideBySide) {
  const CliRun r = run("--mesh \"x=2,y=4\" --shape 4096x8192 --dtype bf16 --from \"P('x', None)\" "
                       "--to \"P(None, ('x','y'))\" --cluster " + kNode);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* want : {"synthesised plan", "naive plan", "all-to-all", "all-gather",
                           "peak memory per device", "simulated time", "speed-up over naive"})
    EXPECT_NE(r.out.find(want), std::string::npos) << want << "\n" << r.out;
}

TEST_F(RedistributeCli, WithoutAClusterThereAreNoTimes) {
  const CliRun r = run("--mesh x=4 --shape 16 --from \"[Partial()]\" --to \"P('x')\" --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_TRUE(j["cluster"].is_null());
  EXPECT_TRUE(j["plans"][0]["time_s"].is_null());
  EXPECT_EQ(j["plans"][0]["steps"][0]["kind"], "reduce-scatter");
}

TEST_F(RedistributeCli, SameInputGivesByteIdenticalJson) {
  const std::string args = "--mesh x=8 --shape 1024x1024 --from \"P('x')\" --to \"P(None, 'x')\" "
                           "--cluster " + kNode + " --format json";
  const CliRun a = run(args);
  const CliRun b = run(args);
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_EQ(a.out, b.out);
  const fs::path file = dir_ / "r.json";
  ASSERT_EQ(run(args + " --output " + file.string()).exit_code, 0);
  EXPECT_EQ(slurp(file), a.out);
}

TEST_F(RedistributeCli, MemoryCapPicksThePlanThatFits) {
  const std::string args = "--mesh x=8 --shape 4096x8192 --from \"P('x')\" --to \"P(None, 'x')\" "
                           "--cluster " + kNode + " --format json --memory-cap ";
  const CliRun r = run(args + "20MiB");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["chosen"], "synthesised");
  expect_bad_input("--mesh x=8 --shape 4096x8192 --from \"P('x')\" --to \"P(None, 'x')\" "
                   "--memory-cap 8MiB",
                   "--memory-cap: no plan fits 8.00 MiB");
}

TEST_F(RedistributeCli, BadLayoutsExitTwoAndWriteNothing) {
  const std::string base = "--mesh \"x=2,y=4\" --shape 4096x8192 ";
  expect_bad_input(base + "--from \"P('x', 'x')\" --to \"P(None)\"",
                   "--from: axis 'x' is used twice");
  expect_bad_input(base + "--from \"P('x')\" --to \"P('z')\"", "--to: axis 'z' is not in the mesh");
  expect_bad_input("--mesh \"x=2,y=4\" --shape 4100x8192 --from \"P(('x','y'))\" --to \"P(None)\"",
                   "dimension 0 of extent 4100 is not divisible by its split x*y = 8");
  expect_bad_input(base + "--from \"P('x')\" --to \"P('y')\" --cluster " + kRoot +
                       "/workloads/clusters/h200x2-nvlink.yaml",
                   "--mesh: x=2,y=4 has 8 devices but the cluster");
  expect_bad_input(base + "--from \"P('x')\" --to \"[Shard(0)]\"", "placements for the mesh");
  expect_bad_input(base + "--from \"P('x')\" --to \"[Partial(), Replicate()]\"",
                   "a pending sum over axis 'x' that the source does not hold");
  expect_bad_input(base + "--dtype bf17 --from \"P('x')\" --to \"P('y')\"", "unknown dtype 'bf17'");
  expect_bad_input("--mesh \"x=2,x=4\" --shape 8 --from \"P('x')\" --to \"P(None)\"",
                   "axis 'x' is named twice");
}

}  // namespace
}  // namespace overlapsim
