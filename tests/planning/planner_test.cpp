// The planner's library: cost closed forms, the Pareto front, escaping, the search on a
// model small enough to plan by hand (plan_fixture.hpp), determinism across thread counts,
// and resume.
#include "planning/planner.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "config/error.hpp"
#include "planning/cost.hpp"
#include "planning/escape.hpp"
#include "planning/pareto.hpp"
#include "planning/plan_state.hpp"
#include "planning/prescreen.hpp"
#include "planning/reports.hpp"
#include "planning/search_space.hpp"
#include "tests/planning/plan_fixture.hpp"
#include "tests/workloads/workloads_test_util.hpp"
#include "workloads/cluster.hpp"
#include "workloads/model.hpp"

namespace overlapsim::planning {
namespace {

namespace fs = std::filesystem;

TEST(PlanCost, ClosedForms) {
  CostInputs in;
  in.step_time_s = 10;
  in.tokens_per_step = 1e6;
  in.gpus = 16;
  in.price_per_gpu_hour_usd = 2.0;
  in.power_W = 700;
  in.target_tokens = 1e9;
  const PlanCosts c = step_costs(in);
  EXPECT_DOUBLE_EQ(c.gpu_hours_per_step, 16 * 10 / 3600.0);
  EXPECT_DOUBLE_EQ(*c.usd_per_step, 2.0 * 16 * 10 / 3600);
  EXPECT_DOUBLE_EQ(*c.usd_per_million_tokens, 2.0 * 16 * 10 / 3600);  // 1e6 tokens a step
  EXPECT_DOUBLE_EQ(c.tokens_per_day, 1e6 / 10 * 86400);
  EXPECT_DOUBLE_EQ(*c.time_to_train_s, 1000 * 10.0);
  EXPECT_DOUBLE_EQ(*c.usd_to_train, 1000 * 2.0 * 16 * 10 / 3600);
  EXPECT_DOUBLE_EQ(*c.energy_kWh_per_step, 700.0 * 16 * 10 / 3.6e6);
  EXPECT_DOUBLE_EQ(*c.energy_kWh_to_train, 1000 * 700.0 * 16 * 10 / 3.6e6);
}

TEST(PlanCost, UnknownPriceAndPowerStayUnknown) {
  CostInputs in;
  in.step_time_s = 2;
  in.tokens_per_step = 100;
  in.gpus = 8;
  const PlanCosts c = step_costs(in);
  EXPECT_FALSE(c.usd_per_step);
  EXPECT_FALSE(c.energy_kWh_per_step);
  EXPECT_FALSE(c.time_to_train_s);
  EXPECT_DOUBLE_EQ(c.gpu_hours_per_step, 16 / 3600.0);
}

TEST(PlanCost, Targets) {
  PlanCosts c;
  c.tokens_per_day = 1e9;
  c.time_to_train_s = 5 * 86400.0;
  EXPECT_TRUE(meets_target({TargetKind::StepTime, 2.0}, 2.0, c));
  EXPECT_FALSE(meets_target({TargetKind::StepTime, 2.0}, 2.01, c));
  EXPECT_TRUE(meets_target({TargetKind::TokensPerDay, 1e9}, 1, c));
  EXPECT_FALSE(meets_target({TargetKind::TokensPerDay, 1.1e9}, 1, c));
  EXPECT_TRUE(meets_target({TargetKind::Tokens, 1e12, 5 * 86400.0}, 1, c));
  EXPECT_FALSE(meets_target({TargetKind::Tokens, 1e12, 4 * 86400.0}, 1, c));
  EXPECT_TRUE(meets_target({TargetKind::Tokens, 1e12, 0}, 1, c));
}

TEST(PlanPareto, SyntheticFront) {
  //   index: 0      1      2      3      4      5 (duplicate of 1)  6 (same time as 2, dearer)
  const std::vector<TimeCost> p = {{1, 10}, {2, 5}, {3, 6}, {4, 1}, {5, 1}, {2, 5}, {3, 7}};
  EXPECT_EQ(pareto_front(p), (std::vector<std::size_t>{0, 1, 3}));
  EXPECT_TRUE(pareto_front({}).empty());
}

TEST(PlanEscape, MarkdownAndCsv) {
  EXPECT_EQ(markdown_escape("<script>alert(1)</script>"), "&lt;script&gt;alert(1)&lt;/script&gt;");
  EXPECT_EQ(markdown_escape("a|b_c*d\n[e]"), "a\\|b\\_c\\*d \\[e\\]");
  EXPECT_EQ(csv_field("plain"), "plain");
  EXPECT_EQ(csv_field("a,\"b\""), "\"a,\"\"b\"\"\"");
}

// The lower bound by hand for the fixture's model (h 4096, s 512, 2 layers, vocabulary
// 32000, 4 x 512 tokens): per token and layer, forward 24 h^2 (q, k, v, o: 8 h^2; the MLP
// of 4h: 16 h^2) plus the causal attention core 2 s h; the head 2 h V; backward twice the
// forward. PP2 with 4 microbatches of 1 sequence adds the bubble factor 1 + 1/4.
TEST(PlanPrescreen, LowerBoundClosedForm) {
  const auto base = workloads::load_model_string(testing::plan_model_yaml(), "fixture");
  PlanConfig c;
  c.gpus = 2;
  c.pp = 2;
  const auto model = configured_model(base, c, 2);
  const workloads::ClusterSpec cluster;  // no links: the estimate adds nothing
  const double h = 4096, s = 512, v = 32000, tokens = 4 * 512, peak = 1e15;
  const double flops = tokens * 3 * (2 * (24 * h * h + 2 * s * h) + 2 * h * v);
  const Prescreen p = prescreen(model, cluster, peak);
  EXPECT_NEAR(p.lower_bound_s, flops / (2 * peak) * 1.25, 1e-12);
  EXPECT_DOUBLE_EQ(p.estimate_s, p.lower_bound_s);
  c.recompute = workloads::Recompute::Full;  // the layers' forward once more
  const double full = tokens * (4 * 2 * (24 * h * h + 2 * s * h) + 3 * 2 * h * v);
  EXPECT_NEAR(prescreen(configured_model(base, c, 2), cluster, peak).lower_bound_s,
              full / (2 * peak) * 1.25, 1e-12);
}

// DeepEP / HybridEP move whole experts (expert TP 1), so the search lets EP span TP ranks;
// the all-to-all dispatcher keeps expert TP = TP and EP inside DP x CP.
TEST(PlanSearchSpace, HierarchicalDispatchFoldsEpOverTensorParallelRanks) {
  workloads::ClusterSpec cluster;
  cluster.nodes = 1;
  cluster.gpus_per_node = 8;
  const auto largest_ep_at_tp2 = [&](const std::string& dispatcher) {
    // The tiny MoE: 8 experts, top 2.
    const auto model = workloads::load_model_string(
        workloads::testing::edit(
            workloads::testing::kTinyMoe,
            {{"  top_k: 2\n", "  top_k: 2\n  dispatcher: " + dispatcher + "\n"}}),
        "m.yaml");
    std::int64_t invalid = 0;
    int largest = 0;
    for (const PlanConfig& c : enumerate_configs(model, cluster, 0, 1, SearchLimits{}, invalid))
      if (c.tp == 2 && c.pp == 1 && c.cp == 1) {
        largest = std::max(largest, c.ep);
        EXPECT_EQ(configured_model(model, c, 8).parallelism.expert_tp(),
                  dispatcher == "alltoall" ? 2 : 1);
      }
    return largest;
  };
  EXPECT_EQ(largest_ep_at_tp2("alltoall"), 4);  // DP 4 at TP 2 on 8 GPUs
  EXPECT_EQ(largest_ep_at_tp2("deepep"), 8);    // every rank of the stage
}

class PlanSearch : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("overlapsim_plan_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    options_.model_file = testing::write_text(dir_ / "model.yaml", testing::plan_model_yaml());
    options_.cluster_files = {
        testing::write_text(dir_ / "cluster.yaml", testing::plan_cluster_yaml())};
    options_.nodes = {1};
    options_.designs = {"sequential", "decomposed"};
    options_.simulate_top = 1000;  // simulate every configuration that fits
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
  PlanOptions options_;
};

// The fixture's hand-worked answer: TP2 PP1 DP1 without recompute; every unsharded (DP2)
// configuration is rejected with its memory breakdown.
TEST_F(PlanSearch, FindsTheHandWorkedBestAndRejectsWhatDoesNotFit) {
  const PlanResult res = run_plan(options_);
  ASSERT_EQ(res.fastest.size(), 2u);
  for (const FastestEntry& f : res.fastest) {
    ASSERT_TRUE(f.choice) << f.design;
    const PlanConfig& c = res.point(*f.choice).config;
    EXPECT_EQ(c.tp, 2) << f.design;
    EXPECT_EQ(c.pp, 1) << f.design;
    EXPECT_EQ(c.dp, 1) << f.design;
    EXPECT_EQ(c.recompute, workloads::Recompute::None) << f.design;
  }
  int rejected = 0;
  for (const PlanPoint& p : res.points) {
    const bool unsharded = p.config.tp == 1 && p.config.pp == 1;
    EXPECT_EQ(p.status == PointStatus::Rejected, unsharded) << p.config.key();
    if (p.status != PointStatus::Rejected) continue;
    ++rejected;
    EXPECT_TRUE(p.runs.empty());
    EXPECT_GT(p.peak_memory_bytes, 10e9);
    EXPECT_NE(p.reason.find("optimizer"), std::string::npos) << p.reason;
    EXPECT_NE(p.reason.find("the GPU has"), std::string::npos) << p.reason;
    double sum = 0;
    for (const auto& t : p.memory_terms) sum += t.bytes;
    EXPECT_NEAR(sum, p.peak_memory_bytes, 1e-6 * sum);
  }
  EXPECT_GT(rejected, 0);
  EXPECT_EQ(res.counts.rejected, rejected);
  EXPECT_EQ(res.counts.simulated + res.counts.rejected + res.counts.pruned, res.counts.enumerated);
  // The analytic lower bound never exceeds a simulated step.
  for (const PlanPoint& p : res.points)
    for (const PlanRun& r : p.runs) EXPECT_LE(p.lower_bound_s, r.step_time_s) << p.config.key();
  // Costs: the cluster's 2.5 $/GPU-hour.
  const PlanRun& best = res.run(*res.fastest[0].choice);
  EXPECT_DOUBLE_EQ(*best.costs.usd_per_step, 2.5 * 2 * best.step_time_s / 3600);
  EXPECT_FALSE(best.costs.energy_kWh_per_step);  // the fixture gives no power
}

TEST_F(PlanSearch, SimulationCapPrunesTheRestWithAReason) {
  options_.simulate_top = 2;
  const PlanResult res = run_plan(options_);
  EXPECT_EQ(res.counts.simulated, 2);
  for (const PlanPoint& p : res.points) {
    if (p.status == PointStatus::Pruned) {
      EXPECT_FALSE(p.reason.empty());
    }
  }
  EXPECT_GT(res.counts.pruned, 0);
}

TEST_F(PlanSearch, SameReportsOnOneAndTwoThreads) {
  options_.threads = 1;
  const std::string one = plan_json(run_plan(options_)) + plan_csv(run_plan(options_));
  options_.threads = 2;
  const PlanResult two = run_plan(options_);
  EXPECT_EQ(one, plan_json(two) + plan_csv(two));
}

TEST_F(PlanSearch, EmptySearchSpaceIsBadInput) {
  options_.cluster_files = {
      testing::write_text(dir_ / "small.yaml", testing::plan_cluster_yaml("2GB"))};
  try {
    run_plan(options_);
    FAIL() << "expected a ConfigError";
  } catch (const config::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("empty search space"), std::string::npos) << e.what();
  }
}

TEST_F(PlanSearch, TargetWithoutPriceIsBadInput) {
  options_.cluster_files = {
      testing::write_text(dir_ / "free.yaml", testing::plan_cluster_yaml("10GB", false))};
  options_.target = {TargetKind::StepTime, 1.0};
  EXPECT_THROW(run_plan(options_), config::ConfigError);
  options_.target = {};
  EXPECT_NO_THROW(run_plan(options_));  // no target: costs are just unknown
}

TEST_F(PlanSearch, ImpossibleTargetNamesTheBestReached) {
  options_.target = {TargetKind::StepTime, 1e-6};
  try {
    run_plan(options_);
    FAIL() << "expected a ConfigError";
  } catch (const config::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("the fastest step is"), std::string::npos) << e.what();
  }
}

// A run interrupted after some points (the state file cut, its last line torn) resumes to
// the very reports of an uninterrupted run, simulating only the missing points.
TEST_F(PlanSearch, ResumeEqualsUninterrupted) {
  options_.state_file = (dir_ / "state.jsonl").string();
  const std::string full = plan_json(run_plan(options_));
  std::ifstream in(options_.state_file);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  ASSERT_GT(lines.size(), 5u);
  {
    std::ofstream cut(options_.state_file, std::ios::trunc);
    for (std::size_t i = 0; i < 4; ++i) cut << lines[i] << '\n';
    cut << lines[4].substr(0, lines[4].size() / 2);  // killed mid-write
  }
  options_.resume = true;
  EXPECT_EQ(plan_json(run_plan(options_)), full);
  // Every point is back in the state file, once.
  std::ifstream again(options_.state_file);
  std::size_t n = 0;
  for (std::string line; std::getline(again, line);) ++n;
  EXPECT_EQ(n, lines.size());
}

TEST_F(PlanSearch, ResumeRefusesAnotherInputsState) {
  options_.state_file = (dir_ / "state.jsonl").string();
  run_plan(options_);
  options_.designs = {"sequential"};
  options_.resume = true;
  EXPECT_THROW(run_plan(options_), config::ConfigError);
}

TEST(PlanState, LinesRoundTrip) {
  SimulatedPoint p;
  p.key = "c0 n1 tp2";
  p.tokens_per_step = 2048;
  PlanRun r;
  r.design = "sequential";
  r.step_time_s = 0.1 + 0.2;  // not exactly representable in few digits
  r.mfu = 1.0 / 3;
  p.runs.push_back(r);
  const auto back = from_state_line(to_state_line(p));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->runs[0].step_time_s, r.step_time_s);
  EXPECT_EQ(back->runs[0].mfu, r.mfu);
  EXPECT_FALSE(from_state_line(to_state_line(p).substr(0, 20)));
}

}  // namespace
}  // namespace overlapsim::planning
