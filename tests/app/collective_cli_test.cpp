// `overlapsim collective` end to end: the built binary on a shipped cluster file. JSON
// fields and values, byte-identical output across runs, and every bad input exiting 2
// with a one-line message naming the problem and writing nothing.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "tests/cli_test_util.hpp"

namespace overlapsim {
namespace {

namespace fs = std::filesystem;

using testing::CliRun;
using testing::kRoot;
using testing::slurp;
const std::string kSwitch = kRoot + "/workloads/clusters/switch-1024-50GBps.yaml";
const std::string kFatTree = kRoot + "/workloads/clusters/h200-128node-ndr.yaml";

class CollectiveCli : public testing::CliTest {
 protected:
  CliRun run(const std::string& args) { return run_cli("collective " + args); }

  // A bad input: exit 2, one line on stderr containing `needle`, no output file.
  void expect_bad_input(const std::string& args, const std::string& needle) {
    const fs::path target = dir_ / "result.json";
    const std::string format = args.find("--format") == std::string::npos ? " --format json" : "";
    const CliRun r = run(args + format + " --output " + target.string());
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.err;
    EXPECT_NE(r.err.find(needle), std::string::npos) << args << "\nstderr: " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
    EXPECT_FALSE(fs::exists(target)) << args;
  }
};

TEST_F(CollectiveCli, JsonHasTheContractFieldsInOrder) {
  const CliRun r = run("--op allreduce --bytes 64MiB --cluster " + kSwitch +
                       " --ranks 16 --algo ring --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::ordered_json::parse(r.out);
  std::vector<std::string> keys;
  for (const auto& [k, v] : j.items()) keys.push_back(k);
  EXPECT_EQ(keys,
            (std::vector<std::string>{"op", "algo", "ranks", "bytes", "time_s", "algbw_Bps",
                                      "busbw_Bps", "events", "sim_wall_s", "peak_rss_bytes"}));
  EXPECT_EQ(j["op"], "allreduce");
  EXPECT_EQ(j["algo"], "ring");
  EXPECT_EQ(j["ranks"], 16);
  EXPECT_EQ(j["bytes"], 64u << 20);
  const double time_s = j["time_s"];
  EXPECT_GT(time_s, 0);
  EXPECT_NEAR(j["algbw_Bps"].get<double>(), (64u << 20) / time_s, 1e-6 * (64u << 20) / time_s);
  EXPECT_NEAR(j["busbw_Bps"].get<double>(), j["algbw_Bps"].get<double>() * 2 * 15 / 16, 1.0);
  // 50 GB/s per NPU: busbw of a ring is close to the link rate for 64 MiB.
  EXPECT_GT(j["busbw_Bps"].get<double>(), 0.9 * 50e9);
  EXPECT_LE(j["busbw_Bps"].get<double>(), 50e9);
  EXPECT_GT(j["events"].get<std::uint64_t>(), 0u);
  EXPECT_GT(j["peak_rss_bytes"].get<std::uint64_t>(), 0u);
}

TEST_F(CollectiveCli, AutoReportsTheResolvedAlgorithm) {
  const CliRun r =
      run("--op allreduce --bytes 1KiB --cluster " + kSwitch + " --ranks 256 --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["algo"], "tree");
  const CliRun a2a =
      run("--op alltoall --bytes 1MiB --cluster " + kFatTree + " --ranks 16 --format json");
  ASSERT_EQ(a2a.exit_code, 0) << a2a.err;
  EXPECT_EQ(nlohmann::json::parse(a2a.out)["algo"], "direct");
}

TEST_F(CollectiveCli, SameInputGivesByteIdenticalJson) {
  const std::string args =
      "--op alltoall --bytes 96MiB --cluster " + kFatTree + " --ranks 32 --format json --no-timing";
  const CliRun a = run(args);
  const CliRun b = run(args);
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_EQ(a.out, b.out);
  const auto j = nlohmann::json::parse(a.out);
  EXPECT_EQ(j["sim_wall_s"], 0.0);
  EXPECT_EQ(j["peak_rss_bytes"], 0);
  // --output writes the same bytes.
  const fs::path file = dir_ / "r.json";
  ASSERT_EQ(run(args + " --output " + file.string()).exit_code, 0);
  EXPECT_EQ(slurp(file), a.out);
}

TEST_F(CollectiveCli, NodesOverridesTheClusterSize) {
  const CliRun r = run("--op allreduce --bytes 1MiB --cluster " + kFatTree +
                       " --nodes 2 --format json --no-timing");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["ranks"], 16);
  expect_bad_input("--op allreduce --bytes 1MiB --cluster " + kFatTree + " --nodes 2 --ranks 17",
                   "--ranks: 17 is outside the cluster");
}

TEST_F(CollectiveCli, TableIsReadable) {
  const CliRun r = run("--op allgather --bytes 1GiB --cluster " + kSwitch + " --ranks 8");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("allgather"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("busbw"), std::string::npos) << r.out;
}

TEST_F(CollectiveCli, BadInputsExitTwoAndWriteNothing) {
  const std::string ok = " --bytes 1MiB --cluster " + kSwitch;
  expect_bad_input("--op allreduced" + ok, "--op: unknown collective 'allreduced'");
  expect_bad_input("--op allreduce --bytes 1GiBs --cluster " + kSwitch,
                   "--bytes: '1GiBs' is not a size");
  expect_bad_input("--op allreduce --bytes 1Gbps --cluster " + kSwitch, "--bytes");
  expect_bad_input("--op allreduce" + ok + " --ranks 1025", "--ranks: 1025 is outside the cluster");
  expect_bad_input("--op allreduce" + ok + " --ranks -3", "--ranks: -3");
  expect_bad_input("--op allreduce" + ok + " --ranks 0", "--ranks: 0 is outside the cluster");
  expect_bad_input("--op allreduce" + ok + " --nodes 0", "--nodes: 0");
  expect_bad_input("--op allreduce" + ok + " --launch-latency 5parsec", "--launch-latency");
  expect_bad_input("--op allreduce" + ok + " --algo spiral", "--algo: unknown algorithm 'spiral'");
  expect_bad_input("--op alltoall" + ok + " --algo ring", "alltoall: algorithm 'ring'");
  expect_bad_input("--op broadcast" + ok + " --ranks 4 --root 4", "root = 4");
  expect_bad_input("--op allreduce" + ok + " --format yaml", "--format");
  expect_bad_input("--op allreduce --bytes 1MiB --cluster " + (dir_ / "missing.yaml").string(),
                   "missing.yaml");
}

TEST_F(CollectiveCli, BadClusterFileNamesFileAndKey) {
  const fs::path bad = dir_ / "bad-cluster.yaml";
  std::ofstream(bad) << slurp(kSwitch) << "\nwarp_drive: 9000\n";
  expect_bad_input("--op allreduce --bytes 1MiB --cluster " + bad.string(), "warp_drive");
  expect_bad_input("--op allreduce --bytes 1MiB --cluster " + bad.string(), bad.string());
}

}  // namespace
}  // namespace overlapsim
