// overlap-bench's interference runner on the local GPUs (>= 2): every point gives its four
// rows (GEMM and collective, alone and beside), in order, with the CTA limit in `chunks`,
// correct results, positive times, and the beside rows no faster than their alone rows
// beyond noise. Blocking communicators, like the benchmark.
#include "kernels/bench/interference_runner.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <mutex>
#include <vector>

#include "kernels/bench/bench_env.hpp"
#include "kernels/bench/timing.hpp"
#include "tests/kernels/gpu_test_support.hpp"

namespace overlapsim::kernels::bench {
namespace {

TEST(InterferenceRunner, FourRowsPerPointCheckedAndOrdered) {
  OVERLAPSIM_REQUIRE_GPUS(2);
  BenchCase c;
  c.kind = CaseKind::Interference;
  c.op = "interference";
  c.designs = {"interleaved"};
  c.shapes = {{2048, 2048, 1024, 0}, {1000, 700, 777, 0}};  // irregular K included
  c.bytes = {1u << 20, 8u << 20};
  c.collectives = {"allreduce", "alltoall"};
  c.ctas = {8, 0};
  c.iterations = 5;
  std::vector<BenchRow> rows;
  std::mutex rows_mutex;
  HarnessOptions options;
  options.world = 2;
  options.blocking_comms = true;
  options.timeout_s = 60;
  // One seed for every rank: the collective's reference derives each rank's input from the
  // run's seed, so ranks with their own seeds fail every collective check.
  const std::uint64_t seed = testing::fresh_seed() | 1;
  const Status status = run_ranks(options, [&](RankContext& ctx) -> Status {
    BenchEnv env;
    OVERLAPSIM_TRY(open_env(ctx, seed, &env));
    env.emit = [&](const BenchRow& row) {
      if (ctx.comm.rank != 0) return;
      std::lock_guard<std::mutex> lock(rows_mutex);
      rows.push_back(row);
    };
    const ScopedTimingPolicy policy({0.005, 0.01});
    Status s = run_interference_case(env, c);
    close_env(&env);
    return s;
  });
  ASSERT_TRUE(status.ok) << status.message;
  // 2 CTA limits x 2 shapes x 2 collectives x 2 sizes, four rows each.
  ASSERT_EQ(rows.size(), 2u * 2 * 2 * 2 * 4);
  for (std::size_t i = 0; i < rows.size(); i += 4) {
    const std::string coll = rows[i].design.substr(5, rows[i].design.find(':') - 5);
    EXPECT_EQ(rows[i].design, "gemm|" + coll + ":alone");
    EXPECT_EQ(rows[i + 1].design, "gemm|" + coll + ":beside");
    EXPECT_EQ(rows[i + 2].design, coll + "|gemm:alone");
    EXPECT_EQ(rows[i + 3].design, coll + "|gemm:beside");
    for (std::size_t j = i; j < i + 4; ++j) {
      EXPECT_EQ(rows[j].op, "interference");
      EXPECT_EQ(rows[j].wrong, 0u) << rows[j].design << " " << rows[j].m << "x" << rows[j].n;
      EXPECT_GT(rows[j].time_min_s, 0);
      EXPECT_LE(rows[j].time_min_s, rows[j].time_s);
      EXPECT_EQ(rows[j].chunks, rows[i].chunks);
      EXPECT_EQ(rows[j].bytes, rows[i].bytes);
    }
    // Side by side nothing gets much faster (10 % for noise).
    EXPECT_GT(rows[i + 1].time_s, 0.9 * rows[i].time_s) << coll << " ctas " << rows[i].chunks;
    EXPECT_GT(rows[i + 3].time_s, 0.9 * rows[i + 2].time_s) << coll << " ctas " << rows[i].chunks;
  }
  EXPECT_EQ(rows.front().chunks, 8);
  EXPECT_EQ(rows.back().chunks, 0);
}

}  // namespace
}  // namespace overlapsim::kernels::bench
