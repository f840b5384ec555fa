// The plan's configuration text: what the reports print reads back to the same
// configuration, and `configure` builds the model and cluster the planner timed.
#include "planning/configuration_text.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "config/error.hpp"
#include "planning/search_space.hpp"
#include "tests/planning/plan_fixture.hpp"
#include "workloads/cluster.hpp"
#include "workloads/model.hpp"

namespace overlapsim::planning {
namespace {

PlanConfig sample() {
  PlanConfig c;
  c.cluster = 3;
  c.nodes = 16;
  c.tp = 4, c.pp = 8, c.virtual_stages = 3, c.cp = 2, c.ep = 1, c.dp = 2;
  c.micro_batch = 2;
  c.sequence_parallel = true;
  c.recompute = workloads::Recompute::Selective;
  return c;
}

TEST(ConfigurationText, IsTheKeyWithoutItsClusterIndex) {
  const PlanConfig c = sample();
  EXPECT_EQ(configuration_text(c), "n16 tp4 pp8 v3 cp2 ep1 dp2 mb2 sp1 selective");
  EXPECT_EQ(c.key(), "c3 " + configuration_text(c));
}

TEST(ConfigurationText, ReadsBackEveryField) {
  for (const std::string& text :
       {configuration_text(sample()), sample().key(),
        std::string("  n16 tp4 pp8  v3 cp2 ep1 dp2 mb2 sp1 selective ")}) {
    const PlanConfig c = parse_configuration_text(text, "--configuration");
    EXPECT_EQ(c.cluster, text.find("c3 ") == 0 ? 3 : -1) << text;  // the key's index, if any
    EXPECT_EQ(configuration_text(c), configuration_text(sample())) << text;
  }
  const PlanConfig full =
      parse_configuration_text("n1 tp1 pp1 v1 cp1 ep8 dp8 mb1 sp0 full", "--configuration");
  EXPECT_EQ(full.ep, 8);
  EXPECT_FALSE(full.sequence_parallel);
  EXPECT_EQ(full.recompute, workloads::Recompute::Full);
  // A DLRM plan's one configuration has no micro-batch (the model's step is one batch).
  EXPECT_EQ(
      parse_configuration_text("c0 n16 tp1 pp1 v1 cp1 ep1 dp128 mb0 sp0 none", "--c").micro_batch,
      0);
}

TEST(ConfigurationText, BadTextNamesTheFlagAndTheToken) {
  const std::pair<std::string, std::string> cases[] = {
      {"", "has 0 fields, not 10"},
      {"n16 tp4 pp8 v3 cp2 ep1 dp2 mb2 sp1", "has 9 fields"},
      {"n16 tp4 pp8 v3 cp2 ep1 dp2 mb2 sp1 some", "'some' is not a recompute mode"},
      {"n16 pp8 tp4 v3 cp2 ep1 dp2 mb2 sp1 none", "'pp8' is not the tp field"},
      {"n16 tp0 pp8 v3 cp2 ep1 dp2 mb2 sp1 none", "'tp0' is not tp<integer >= 1>"},
      {"n16 tp4 pp8 v3 cp2 ep1 dp2 mb2 sp2 none", "'sp2' is not sp0 or sp1"},
      {"n16 tp4 pp8 v3 cp2 ep1 dp2 mbx sp1 none", "'mbx' is not mb<integer >= 0>"},
  };
  for (const auto& [text, expect] : cases) {
    try {
      parse_configuration_text(text, "--configuration");
      ADD_FAILURE() << "accepted: " << text;
    } catch (const config::ConfigError& e) {
      const std::string what = e.what();
      EXPECT_EQ(what.rfind("--configuration: ", 0), 0u) << what;
      EXPECT_NE(what.find(expect), std::string::npos) << what;
      EXPECT_NE(what.find("(expected 'n<nodes> tp<n>"), std::string::npos) << what;
    }
  }
}

// The planner tests' fixture: 2 layers, global batch 4; one node of 2 GPUs.
workloads::ModelSpec small_model() {
  return workloads::load_model_string(testing::plan_model_yaml(), "model.yaml");
}
workloads::ClusterSpec two_gpu_nodes() {
  const auto path = std::filesystem::temp_directory_path() /
                    ("configuration_text_test_" + std::to_string(::getpid()) + ".yaml");
  testing::write_text(path, testing::plan_cluster_yaml());
  workloads::ClusterSpec c = workloads::load_cluster(path.string());
  std::filesystem::remove(path);
  return c;
}

TEST(ConfigurationText, ConfigureBuildsThePlannersModelAndChecksDp) {
  PlanConfig c = parse_configuration_text("n2 tp2 pp1 v1 cp1 ep1 dp2 mb2 sp1 selective", "--c");
  const ConfiguredSpecs s = configure(small_model(), two_gpu_nodes(), c, "--c");
  EXPECT_EQ(s.cluster.nodes, 2);
  EXPECT_EQ(c.gpus, 4);
  EXPECT_EQ(s.model.parallelism.tp, 2);
  EXPECT_EQ(s.model.parallelism.dp, 2);
  EXPECT_EQ(s.model.training.micro_batch, 2);
  EXPECT_TRUE(s.model.parallelism.sequence_parallel);
  EXPECT_EQ(s.model.training.recompute, workloads::Recompute::Selective);
  // The same model the planner builds for the point.
  const workloads::ModelSpec planned = configured_model(small_model(), c, 2);
  EXPECT_EQ(planned.parallelism.dp, s.model.parallelism.dp);
  EXPECT_EQ(planned.training.global_batch, s.model.training.global_batch);

  PlanConfig wrong = parse_configuration_text("n2 tp2 pp1 v1 cp1 ep1 dp4 mb2 sp1 none", "--c");
  try {
    configure(small_model(), two_gpu_nodes(), wrong, "--c");
    ADD_FAILURE() << "dp4 on 4 GPUs at tp2 accepted";
  } catch (const config::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("--c: dp4 does not fit 4 GPUs (expected dp2"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace overlapsim::planning
