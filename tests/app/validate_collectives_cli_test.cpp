// `overlapsim validate-collectives` end to end on the committed tables: the report, its
// medians against the published multi-node nccl-tests results, byte-identical reruns, the
// atomic --output, and a bad table exiting 2 with one line naming the file and the key.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/cli_test_util.hpp"

namespace overlapsim {
namespace {

namespace fs = std::filesystem;

using testing::CliRun;
using testing::kRoot;
using testing::slurp;

const std::string kTables = "workloads/reference/collectives/";

// The overall median |error| the model reaches on the committed tables (docs/validation.md,
// "Inter-host collectives against published nccl-tests results"). The target is 10%; this
// bound is what the model reaches, so a change that moves it away fails here.
constexpr double kReachedMedian = 0.095;

class ValidateCollectivesCli : public testing::CliTest {
 protected:
  CliRun run(const std::string& args) { return run_cli("validate-collectives " + args); }
};

TEST_F(ValidateCollectivesCli, PublishedTablesWithinTheReachedMedian) {
  const CliRun r = run(kTables + " --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["min_bytes"], 64u << 10);
  EXPECT_EQ(j["max_bytes"], 4ull << 30);
  ASSERT_GE(j["tables"].size(), 5u);
  int points = 0;
  for (const auto& t : j["tables"]) {
    EXPECT_FALSE(t["source"]["url"].get<std::string>().empty());
    EXPECT_GT(t["points_in_range"].get<int>(), 0) << t["name"];
    points += t["points_in_range"].get<int>();
    for (const auto& p : t["points"]) {
      EXPECT_GT(p["predicted_s"].get<double>(), 0);
      EXPECT_NEAR(p["rel_err"].get<double>(),
                  (p["predicted_s"].get<double>() - p["published_s"].get<double>()) /
                      p["published_s"].get<double>(),
                  1e-9);
    }
  }
  EXPECT_EQ(j["points"].get<int>(), points);
  EXPECT_LE(j["median_abs_err"].get<double>(), kReachedMedian);
  // The bare flows (the path before NCCL's costs) are about 2x too fast.
  const CliRun bare = run(kTables + " --format json --bare-flows");
  ASSERT_EQ(bare.exit_code, 0) << bare.err;
  const auto jb = nlohmann::json::parse(bare.out);
  EXPECT_GT(jb["median_abs_err"].get<double>(), 2 * j["median_abs_err"].get<double>());
  EXPECT_EQ(jb["tables"][0]["points"][0]["model"], "bare flows");
}

TEST_F(ValidateCollectivesCli, TableReportIsDeterministicAndWrittenAtomically) {
  const CliRun a = run(kTables);
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_NE(a.out.find("median|error|"), std::string::npos) << a.out;
  EXPECT_NE(a.out.find("overall"), std::string::npos);
  EXPECT_NE(a.out.find("https://github.com/NVIDIA/nccl-tests/issues/309"), std::string::npos);
  const fs::path target = dir_ / "report.txt";
  const CliRun b = run(kTables + " -o " + target.string());
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_TRUE(b.out.empty());
  EXPECT_EQ(slurp(target), a.out);
}

TEST_F(ValidateCollectivesCli, BadTableExitsTwoNamingFileAndKey) {
  const fs::path dir = dir_ / "tables";
  fs::create_directories(dir / "clusters");
  fs::copy_file(kRoot + "/" + kTables + "clusters/h100-ndr-8nic.yaml",
                dir / "clusters/h100-ndr-8nic.yaml");
  std::string text = slurp(kRoot + "/" + kTables + "h100-ndr-2node-allreduce.yaml");
  const auto cases = std::vector<std::pair<std::string, std::string>>{
      {"op: allreduce\n", ""},                     // missing key
      {"op: allreduce", "op: allsum"},             // unknown op
      {"time: 33.84us", "time: 33.84 fortnights"}  // bad unit
  };
  const auto needles = std::vector<std::string>{"op: missing", "op: 'allsum'", "time"};
  for (std::size_t i = 0; i < cases.size(); ++i) {
    std::string bad = text;
    const auto at = bad.find(cases[i].first);
    ASSERT_NE(at, std::string::npos) << cases[i].first;
    bad.replace(at, cases[i].first.size(), cases[i].second);
    std::ofstream(dir / "bad.yaml") << bad;
    const fs::path target = dir_ / "out.json";
    const CliRun r = run(dir.string() + " --format json -o " + target.string());
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("bad.yaml"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(needles[i]), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_FALSE(fs::exists(target));
  }
  const CliRun fmt = run(kTables + " --format xml");
  EXPECT_EQ(fmt.exit_code, 2);
  const CliRun none = run((dir_ / "nothing").string());
  EXPECT_EQ(none.exit_code, 2);
}

}  // namespace
}  // namespace overlapsim
