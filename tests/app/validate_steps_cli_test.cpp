// `overlapsim validate-steps` end to end on the test fixture's reference run: the table and
// JSON agree, --max-error decides the exit code, bad input exits 2 with one line.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/scenario/step_band.hpp"
#include "tests/cli_test_util.hpp"

namespace overlapsim {
namespace {

using testing::CliRun;
using testing::kRoot;
const std::string kDir = kRoot + "/tests/workloads/data/reference";

class ValidateStepsCli : public testing::CliTest {
 protected:
  CliRun run(const std::string& args) { return run_cli("validate-steps " + args); }
};

TEST_F(ValidateStepsCli, JsonHasEachRunWithItsErrorAndBand) {
  const CliRun r = run(kDir + " --format json --no-timing");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["runs"].size(), 1u);
  const auto& run = j["runs"][0];
  EXPECT_EQ(run["name"], "tiny-gpt-8gpu");
  const double pred = run["predicted_step_time_s"], pub = run["published_step_time_s"];
  EXPECT_DOUBLE_EQ(pub, 0.010);
  EXPECT_NEAR(double(run["error"]), (pred - pub) / pub, 1e-12);
  EXPECT_LE(double(run["band_low_s"]), pred);
  EXPECT_GE(double(run["band_high_s"]), pred);
  EXPECT_NEAR(double(j["max_abs_error"]), std::fabs(double(run["error"])), 1e-12);
  EXPECT_EQ(run["sim_wall_s"], 0.0);
}

TEST_F(ValidateStepsCli, MaxErrorDecidesTheExitCode) {
  const auto j = nlohmann::json::parse(run(kDir + " --format json --no-timing").out);
  const double err = 100 * std::fabs(double(j["runs"][0]["error"]));
  EXPECT_EQ(run(kDir + " --max-error " + std::to_string(err * 1.01 + 0.01) + "%").exit_code, 0);
  EXPECT_EQ(run(kDir + " --max-error " + std::to_string(err * 0.99) + "%").exit_code, 1);
}

TEST_F(ValidateStepsCli, BadInputIsOneLineAndExitTwo) {
  for (const std::string& args :
       std::vector<std::string>{kDir + " --format yaml", kDir + " --max-error lots",
                                kRoot + "/no/such/folder", kRoot + "/tests/app/data"}) {
    const CliRun r = run(args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.err;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
    EXPECT_EQ(r.out, "");
  }
}

// The bands' inter-host error is the NCCL model's median on the published tables, rounded
// up: never below what validate-collectives measures, and not stale by more than a point.
TEST_F(ValidateStepsCli, InterHostErrorIsWhatValidateCollectivesMeasures) {
  const CliRun r = run_cli("validate-collectives " + kRoot +
                           "/workloads/reference/collectives --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const double measured = nlohmann::json::parse(r.out)["median_abs_err"];
  const sim::ModelError used = sim::network_model_error();
  EXPECT_GE(used.relative_error, measured);
  EXPECT_LT(used.relative_error, measured + 0.01);
}

}  // namespace
}  // namespace overlapsim
