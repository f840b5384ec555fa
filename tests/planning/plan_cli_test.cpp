// `overlapsim plan` end to end: the built binary on the hand-workable fixture
// (plan_fixture.hpp). The four report files, a hostile model name escaped, bad input exits
// 2 with one line and writes no report, and a resumed run writes the same bytes as an
// uninterrupted one.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/cli_test_util.hpp"
#include "tests/planning/plan_fixture.hpp"

namespace overlapsim {
namespace {

namespace fs = std::filesystem;
using testing::CliRun;
using testing::slurp;

const std::string kHostile = "<script>alert(1)</script>";

class PlanCli : public testing::CliTest {
 protected:
  void SetUp() override {
    CliTest::SetUp();
    model_ = testing::write_text(dir_ / "model.yaml", testing::plan_model_yaml());
    cluster_ = testing::write_text(dir_ / "cluster.yaml", testing::plan_cluster_yaml());
  }
  CliRun plan(const std::string& args) { return run_cli("plan " + args); }
  std::string inputs() const { return "-w " + model_ + " -c " + cluster_ + " --nodes 1"; }
  std::string model_, cluster_;
};

TEST_F(PlanCli, WritesTheReportsAndEscapesTheModelName) {
  const std::string model =
      testing::write_text(dir_ / "hostile.yaml", testing::plan_model_yaml(kHostile));
  const fs::path out = dir_ / "out";
  const CliRun r = plan("-w " + model + " -c " + cluster_ + " --nodes 1 --designs all " +
                        "--target-step-time 1 --out " + out.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* f : {"report.md", "results.csv", "results.json", "index.html"})
    EXPECT_TRUE(fs::exists(out / f)) << f;
  const std::string md = slurp(out / "report.md");
  EXPECT_EQ(md.find("<script>"), std::string::npos);
  EXPECT_NE(md.find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  const auto j = nlohmann::json::parse(slurp(out / "results.json"));
  EXPECT_EQ(j["model"], kHostile);  // the JSON holds the name, escaped as JSON
  const std::string html = slurp(out / "index.html");
  EXPECT_EQ(html.find(kHostile), std::string::npos);
  EXPECT_NE(j["cheapest"]["configuration"].get<std::string>().find("tp2 pp1"), std::string::npos);
  // Rejected configurations are in every file, with their memory breakdown.
  EXPECT_NE(md.find("## Rejected"), std::string::npos);
  EXPECT_NE(slurp(out / "results.csv").find(",rejected,0,\"stage 0 needs"), std::string::npos);
}

TEST_F(PlanCli, BadInputExitsTwoWithOneLineAndWritesNoReport) {
  const std::string unpriced = testing::write_text(
      dir_ / "unpriced.yaml", testing::plan_cluster_yaml("10GB", /*price=*/false));
  const std::string small =
      testing::write_text(dir_ / "small.yaml", testing::plan_cluster_yaml("2GB"));
  const std::string out = (dir_ / "out").string();
  const std::vector<std::pair<std::string, std::string>> cases = {
      {inputs() + " --target-step-time 1e-6", "is met by no simulated configuration"},
      {"-w " + model_ + " -c " + small + " --nodes 1", "empty search space"},
      {"-w " + model_ + " -c " + unpriced + " --nodes 1 --target-tokens-per-day 1e6",
       "price_per_gpu_hour_usd: missing"},
      {"-w " + model_ + " -c " + cluster_ + " --nodes 3:3", "no power of two"},
      {inputs() + " --designs sequential,bogus", "'bogus' is not a design"},
      {inputs() + " --target-step-time 1 --target-tokens 1e9", "more than one target"},
      {inputs() + " --include 'c3 n1 tp2 pp1 v1 cp1 ep1 dp1 mb1 sp0 none'", "names cluster c3"},
      {inputs() + " --include 'n2 tp2 pp1 v1 cp1 ep1 dp2 mb1 sp0 none'", "runs on 2 nodes"},
      {inputs() + " --include 'n1 tp2 pp1 v1 cp1 ep1 dp2 mb1 sp0 none'", "dp2 does not fit"},
      {inputs() + " --include 'n1 tp2'", "has 2 fields"},
      {"-w " + (dir_ / "missing.yaml").string() + " -c " + cluster_, "missing.yaml"},
  };
  for (const auto& [args, expect] : cases) {
    const CliRun r = plan(args + " --out " + out);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.err;
    EXPECT_NE(r.err.find(expect), std::string::npos) << args << "\n" << r.err;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "one line: " << r.err;
    EXPECT_FALSE(fs::exists(fs::path(out) / "report.md")) << args;
  }
}

// A run killed after a few points (its state file cut, the last line torn) resumes to the
// bytes of an uninterrupted run.
TEST_F(PlanCli, ResumeWritesTheSameBytesAsAnUninterruptedRun) {
  const fs::path full = dir_ / "full", part = dir_ / "part";
  const std::string args = inputs() + " --designs sequential,shaped --simulate-top 6";
  ASSERT_EQ(plan(args + " --threads 2 --out " + full.string()).exit_code, 0);
  std::vector<std::string> lines;
  {
    std::ifstream in(full / ".plan-state.jsonl");
    for (std::string line; std::getline(in, line);) lines.push_back(line);
  }
  ASSERT_GE(lines.size(), 4u);
  fs::create_directories(part);
  {
    std::ofstream cut(part / ".plan-state.jsonl");
    cut << lines[0] << '\n' << lines[1] << '\n' << lines[2].substr(0, 10);
  }
  const CliRun r = plan(args + " --threads 1 --resume --progress --out " + part.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("configurations simulated"), std::string::npos) << r.err;
  for (const char* f : {"report.md", "results.csv", "results.json", "index.html"})
    EXPECT_EQ(slurp(part / f), slurp(full / f)) << f;
}

// Every simulated configuration of a plan, given back to `simulate --configuration` with the
// same files, steps exactly as the plan timed it (the plan simulating whole steps: --exact),
// and the report prints that command for the fastest configurations.
TEST_F(PlanCli, SimulateReproducesEveryPlannedConfiguration) {
  const fs::path out = dir_ / "out";
  const CliRun r = plan(inputs() + " --designs sequential,decomposed --simulate-top 3 --exact " +
                        "--out " + out.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(slurp(out / "results.json"));
  int checked = 0;
  for (const auto& p : j["points"]) {
    if (p["runs"].empty()) continue;
    const CliRun s = run_cli("simulate -w " + model_ + " -c " + cluster_ + " --configuration '" +
                             p["key"].get<std::string>() + "' --design all --format json");
    ASSERT_EQ(s.exit_code, 0) << p["key"] << ": " << s.err;
    const auto sim = nlohmann::json::parse(s.out);
    for (const auto& run : p["runs"]) {
      bool found = false;
      for (const auto& d : sim["designs"])
        if (d["design"] == run["design"]) {
          found = true;
          EXPECT_EQ(d["step_time_s"].get<double>(), run["step_time_s"].get<double>())
              << p["key"] << " " << run["design"];
        }
      EXPECT_TRUE(found) << run["design"];
    }
    ++checked;
  }
  EXPECT_GE(checked, 2);
  std::string md = slurp(out / "report.md");
  EXPECT_NE(md.find("    overlapsim simulate -w " + model_ + " -c " + cluster_ +
                    " --configuration 'n1 tp2 pp1 v1 cp1 ep1 dp1 mb"),
            std::string::npos)
      << md;
  // A path with markup in it is escaped in the printed command, one with a space quoted.
  const std::string odd =
      testing::write_text(dir_ / "a <b> model.yaml", testing::plan_model_yaml());
  const std::string spaced =
      testing::write_text(dir_ / "my cluster.yaml", testing::plan_cluster_yaml());
  ASSERT_EQ(plan("-w '" + odd + "' -c '" + spaced + "' --nodes 1 --designs sequential --out " +
                 out.string())
                .exit_code,
            0);
  md = slurp(out / "report.md");
  EXPECT_EQ(md.find("<b>"), std::string::npos);
  EXPECT_NE(md.find("a &lt;b&gt; model.yaml"), std::string::npos) << md;
  EXPECT_NE(md.find(" -c '" + spaced + "' --configuration"), std::string::npos) << md;
}

// --include times the configurations it names whatever the pre-screen and the cap say: one
// the cap pruned, one outside the search's bounds (a micro-batch over --max-micro-batch),
// one too large for memory (reported rejected with its breakdown); every other point comes
// out as without it.
TEST_F(PlanCli, IncludeSimulatesTheNamedConfigurationsAndLeavesTheSearchAlone) {
  const std::string args = inputs() + " --designs sequential --simulate-top 1 --max-micro-batch 2";
  const fs::path base = dir_ / "base", with = dir_ / "with";
  ASSERT_EQ(plan(args + " --out " + base.string()).exit_code, 0);
  const CliRun r = plan(args +
                        " --include 'n1 tp1 pp2 v1 cp1 ep1 dp1 mb1 sp0 full'"
                        " --include 'c0 n1 tp2 pp1 v1 cp1 ep1 dp1 mb4 sp0 none'"
                        " --include 'n1 tp1 pp1 v1 cp1 ep1 dp2 mb1 sp0 none' --out " +
                        with.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto b = nlohmann::json::parse(slurp(base / "results.json"));
  const auto w = nlohmann::json::parse(slurp(with / "results.json"));
  std::map<std::string, nlohmann::json> before;
  for (const auto& p : b["points"]) before[p["key"].get<std::string>()] = p;
  ASSERT_EQ(before.at("c0 n1 tp1 pp2 v1 cp1 ep1 dp1 mb1 sp0 full")["status"], "pruned");
  EXPECT_EQ(before.count("c0 n1 tp2 pp1 v1 cp1 ep1 dp1 mb4 sp0 none"), 0u);
  std::map<std::string, nlohmann::json> requested;
  for (const auto& p : w["points"]) {
    const std::string key = p["key"];
    if (p["requested"].get<bool>()) {
      requested[key] = p;
    } else {
      ASSERT_EQ(before.count(key), 1u) << key;
      EXPECT_EQ(p, before.at(key)) << key;
    }
  }
  ASSERT_EQ(requested.size(), 3u);
  for (const char* key :
       {"c0 n1 tp1 pp2 v1 cp1 ep1 dp1 mb1 sp0 full", "c0 n1 tp2 pp1 v1 cp1 ep1 dp1 mb4 sp0 none"}) {
    EXPECT_EQ(requested.at(key)["status"], "feasible") << key;
    EXPECT_EQ(requested.at(key)["reason"], "") << key;
    EXPECT_EQ(requested.at(key)["runs"].size(), 1u) << key;
  }
  const auto& rejected = requested.at("c0 n1 tp1 pp1 v1 cp1 ep1 dp2 mb1 sp0 none");
  EXPECT_EQ(rejected["status"], "rejected");
  EXPECT_TRUE(rejected["runs"].empty());
  EXPECT_NE(slurp(with / "report.md").find("TP2 PP1 CP1 DP1 mb4 none (requested) | sequential"),
            std::string::npos);
  // nodes 1, gpus 2, tp 2, pp 1, v 1, cp 1, ep 1, dp 1, mb 4, sp 0: requested 1
  EXPECT_NE(slurp(with / "results.csv").find(",1,2,2,1,1,1,1,1,4,0,none,sequential,feasible,1,,"),
            std::string::npos);
}

}  // namespace
}  // namespace overlapsim
