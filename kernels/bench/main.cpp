// overlap-bench: measures ops, collectives and overlap designs on the local GPUs (one
// rank per GPU, or one per MPI process) and prints nccl-tests-style CSV.
// Exit codes: 0 success, 1 a GPU/NCCL failure (communicators aborted), 2 bad input.
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "config/atomic_file.hpp"
#include "config/error.hpp"
#include "kernels/bench/bench_env.hpp"
#include "kernels/bench/flags.hpp"
#include "kernels/bench/interference_runner.hpp"
#include "kernels/bench/suite.hpp"
#include "kernels/bench/tilewise_report.hpp"
#include "kernels/bench/timing.hpp"

namespace {

using namespace overlapsim::kernels;
using namespace overlapsim::kernels::bench;

std::uint64_t fresh_seed() {
  return static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) |
         1u;
}

Status run_case(BenchEnv& env, const BenchCase& c) {
  const ScopedTimingPolicy policy({c.min_time_s, c.warmup_s});
  switch (c.kind) {
    case CaseKind::Collective:
      return run_collective_case(env, c);
    case CaseKind::Compute:
      return run_compute_case(env, c);
    case CaseKind::Pair:
      return run_pair_case(env, c);
    case CaseKind::Interference:
      return run_interference_case(env, c);
  }
  return Status::failure("unknown case kind");
}

int run(const BenchOptions& options, BenchPlan plan) {
  if (options.seed != 0) plan.seed = options.seed;
  if (plan.seed == 0) plan.seed = fresh_seed();
  for (BenchCase& c : plan.cases) {
    if (options.iterations) c.iterations = *options.iterations;
    if (options.warmup) c.warmup = *options.warmup;
    if (options.min_time_s) c.min_time_s = *options.min_time_s;
    if (options.warmup_s) c.warmup_s = *options.warmup_s;
  }
  std::fprintf(stderr, "overlap-bench: seed %llu, %zu case(s)\n",
               static_cast<unsigned long long>(plan.seed), plan.cases.size());

  std::vector<std::string> lines;
  std::mutex lines_mutex;
  // The tile-wise detail and timeline files collect the lines of every rank.
  const auto tilewise_reports = std::make_shared<TilewiseReports>();
  HarnessOptions harness;
  harness.world = options.world;
  harness.timeout_s = options.timeout_s;
  harness.use_mpi = options.use_mpi;
  harness.blocking_comms = options.blocking_comms;
  harness.trace = options.trace;
  const Status status = run_ranks(harness, [&](RankContext& ctx) -> Status {
    BenchEnv env;
    OVERLAPSIM_TRY(open_env(ctx, plan.seed, &env));
    env.tilewise_settings = options.tilewise;
    env.shaped_algos_path = options.shaped_algos;
    env.shaped_paired_path = options.shaped_paired;
    env.tilewise_reports = tilewise_reports;
    const DeviceTags tags = read_device_tags(ctx.comm.world);
    const bool printer = ctx.comm.rank == 0;
    if (printer) std::cout << csv_header() << std::endl;
    env.emit = [&](const BenchRow& row) {
      if (!printer) return;
      const std::string line = csv_line(tags, row);
      std::cout << line << std::endl;
      std::lock_guard<std::mutex> lock(lines_mutex);
      lines.push_back(line);
    };
    Status result = Status::success();
    for (const BenchCase& c : plan.cases) {
      result = run_case(env, c);
      if (!result.ok) break;
    }
    close_env(&env);
    return result;
  });
  if (!status.ok) {
    std::fprintf(stderr, "overlap-bench: %s\n", status.message.c_str());
    return 1;
  }
  if (!options.output.empty() && !lines.empty()) {
    std::string csv = csv_header() + "\n";
    for (const auto& line : lines) csv += line + "\n";
    overlapsim::config::write_file_atomic(options.output, csv);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  BenchOptions options;
  BenchPlan plan;
  try {
    options = parse_flags(std::vector<std::string>(argv + 1, argv + argc));
    if (options.help) {
      std::cout << usage();
      return 0;
    }
    if (!options.suite.empty())
      plan = load_suite(options.suite);
    else
      plan.cases.push_back(*options.flag_case);
  } catch (const overlapsim::config::ConfigError& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
  try {
    return run(options, plan);
  } catch (const std::exception& e) {  // e.g. the atomic write of --output failed
    std::fprintf(stderr, "overlap-bench: %s\n", e.what());
    return 1;
  }
}
