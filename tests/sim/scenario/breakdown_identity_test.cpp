// The breakdown identity of docs/simulate.md — on every simulated rank, step = compute +
// exposed communication + bubble — under every design, on every model shipped in
// workloads/models/. The models run as their files set them up on the 128-node H200
// cluster, with the transformers' global batch cut to 2 x pp microbatches per replica (the
// pairs, communicators and schedules are the file's; only the count of microbatches drops)
// so the cheap models stay within about a minute on one core. `best` runs too: it must be
// no slower than sequential or any forced design. DeepSeek-V3 and Llama-3 405B
// (minutes each: thousands of 64-rank all-to-alls, 126 layers x 16 stages) run only with
// OVERLAPSIM_SLOW_TESTS=1.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "sim/scenario/scenario.hpp"
#include "workloads/cluster.hpp"
#include "workloads/generator.hpp"
#include "workloads/scenario_inputs.hpp"

namespace overlapsim {
namespace {

const std::string kRoot = OVERLAPSIM_SOURCE_DIR;

std::vector<std::string> shipped_models() {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(kRoot + "/workloads/models"))
    if (e.path().extension() == ".yaml") out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

// The model's file, loaded on the 128-node cluster with fewer microbatches; with
// `host_launch_s` > 0 the host issues its ops at that cost a launch and waits 20 us after
// each MoE layer's sync (docs/simulate.md, "The host").
workloads::ScenarioInputs cheap_inputs(const std::string& model_file, double host_launch_s = 0) {
  workloads::ScenarioRequest req;
  req.model_file = model_file;
  req.cluster_file = kRoot + "/workloads/clusters/h200-128node-ndr.yaml";
  workloads::ScenarioInputs in = workloads::load_scenario_inputs(req);
  if (in.model.kind == workloads::ModelKind::Dlrm) return in;  // one microbatch already
  workloads::ModelSpec spec = workloads::load_model(model_file);
  spec.training.host_launch_time_s = host_launch_s;
  spec.training.host_sync_time_s = host_launch_s > 0 ? 20e-6 : 0;
  const workloads::ModelSpec& r = in.model;
  const std::int64_t per_replica =
      static_cast<std::int64_t>(r.training.micro_batch) * 2 * std::max(1, r.parallelism.pp);
  spec.training.global_batch =
      std::min<std::int64_t>(spec.training.global_batch, per_replica * r.parallelism.dp);
  workloads::GenerateOptions gen;
  gen.gpus_per_node = in.cluster.gpus_per_node;
  in.step = workloads::generate_step(spec, in.cluster.num_gpus(), gen);
  workloads::infer_representatives(in.step);
  return in;
}

class BreakdownIdentity : public ::testing::TestWithParam<std::string> {};

bool slow_model(const std::string& file) {
  return file.find("deepseek") != std::string::npos || file.find("405b") != std::string::npos;
}

TEST(BreakdownIdentityModels, EveryShippedModelIsListed) { EXPECT_GE(shipped_models().size(), 5u); }

// Every design on `in`: the identity on every rank, and best no slower than any run.
void check_identity(const workloads::ScenarioInputs& in, const std::string& name) {
  const auto t0 = std::chrono::steady_clock::now();
  sim::ScenarioOptions options;
  options.designs = sim::design_names();
  options.designs.emplace_back(sim::kBestDesign);
  options.planning.scaled_parts_min_ranks = 256;  // as `simulate` runs them
  const sim::ScenarioResult result = workloads::simulate_inputs(in, options);
  int paired_runs = 0;
  for (const sim::DesignRun& run : result.runs) {
    const sim::StepResult& s = run.result;
    if (run.paired && run.pairs.overlapped > 0) ++paired_runs;
    ASSERT_GT(s.step_time_s, 0) << name << " " << s.design;
    for (const sim::RankResult& r : s.ranks) {
      const double sum = r.compute_s + r.exposed_comm_s + r.bubble_s + r.host_wait_s;
      EXPECT_NEAR(sum, r.step_time_s, 1e-9 * r.step_time_s + 1e-12)
          << name << " " << s.design << " rank " << r.rank << ": compute " << r.compute_s
          << " + exposed " << r.exposed_comm_s << " + bubble " << r.bubble_s << " + host "
          << r.host_wait_s;
      EXPECT_LE(r.exposed_paired_s, r.exposed_comm_s + 1e-12) << name << " " << s.design;
    }
  }
  // The identity is only worth checking where designs acted on pairs.
  EXPECT_GT(paired_runs, 0) << name;
  // best is never slower than sequential, nor than any forced design.
  const sim::DesignRun* best = result.run_of(sim::kBestDesign);
  ASSERT_NE(best, nullptr);
  for (const sim::DesignRun& run : result.runs)
    EXPECT_LE(best->result.step_time_s, run.result.step_time_s) << name << " " << run.result.design;
  std::printf("[identity] %s: best %s, %.4f s against sequential %.4f s\n", name.c_str(),
              best->best_basis.c_str(), best->result.step_time_s,
              result.run_of("sequential")->result.step_time_s);
  const double wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("[identity] %s: %zu designs in %.2f s\n", name.c_str(), result.runs.size(), wall_s);
}

TEST_P(BreakdownIdentity, HoldsForEveryDesign) {
  const std::string file = GetParam();
  const std::string name = std::filesystem::path(file).filename().string();
  if (slow_model(file) && !std::getenv("OVERLAPSIM_SLOW_TESTS"))
    GTEST_SKIP() << name << " takes minutes: run with OVERLAPSIM_SLOW_TESTS=1";
  check_identity(cheap_inputs(file), name);
}

// With the host on the critical path (30 us a launch, more than many of Mixtral's short
// ops take): the host's wait joins the identity, under every design, and it is not zero.
TEST(BreakdownIdentityWithHost, HoldsForEveryDesignOnAnMoeModel) {
  const std::string file = kRoot + "/workloads/models/mixtral-8x7b.yaml";
  const workloads::ScenarioInputs in = cheap_inputs(file, 30e-6);
  check_identity(in, "mixtral-8x7b.yaml with the host");
  sim::ScenarioOptions options;
  const sim::ScenarioResult result = workloads::simulate_inputs(in, options);
  EXPECT_GT(result.runs.front().result.host_wait_s, 0);
}

INSTANTIATE_TEST_SUITE_P(ShippedModels, BreakdownIdentity, ::testing::ValuesIn(shipped_models()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string n = std::filesystem::path(info.param).stem().string();
                           for (char& c : n)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return n;
                         });

}  // namespace
}  // namespace overlapsim
