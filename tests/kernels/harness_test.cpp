// The multi-GPU harness: a rank per GPU with its own device, streams of the right
// priorities and a working communicator; host values reduced over ranks.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <thread>
#include <vector>

#include "kernels/harness/device_buffer.hpp"
#include "kernels/harness/free_queue.hpp"
#include "kernels/harness/multi_gpu.hpp"
#include "kernels/harness/rank_barrier.hpp"
#include "tests/kernels/gpu_test_support.hpp"

namespace overlapsim::kernels {
namespace {

TEST(Harness, EveryRankGetsItsDeviceStreamsAndCommunicator) {
  OVERLAPSIM_REQUIRE_GPUS(1);
  const int world = visible_gpu_count();
  std::vector<int> devices(world, -1);
  std::vector<int> priority_gap(world, 0);
  const Status status = run_ranks({}, [&](RankContext& ctx) -> Status {
    int device = -1;
    CUDA_CHECK(cudaGetDevice(&device));
    devices[ctx.comm.rank] = device;
    int compute = 0, comm = 0;
    CUDA_CHECK(cudaStreamGetPriority(ctx.compute_stream, &compute));
    CUDA_CHECK(cudaStreamGetPriority(ctx.comm_stream, &comm));
    priority_gap[ctx.comm.rank] = compute - comm;  // lower number = higher priority
    int count = 0;
    NCCL_CHECK(ncclCommCount(ctx.comm.comm, &count));
    if (count != ctx.comm.world) return Status::failure("communicator size mismatch");
    return Status::success();
  });
  ASSERT_TRUE(status.ok) << status.message;
  for (int r = 0; r < world; ++r) {
    EXPECT_EQ(devices[r], r);
    EXPECT_GT(priority_gap[r], 0) << "the comm stream must outrank the compute stream";
  }
  EXPECT_STREQ(std::getenv("NCCL_NVLS_ENABLE"), "0");
}

TEST(Harness, HostValuesReduceOverRanks) {
  OVERLAPSIM_REQUIRE_GPUS(1);
  const int world = visible_gpu_count();
  std::vector<std::vector<double>> seen(world);
  const Status status = run_ranks({}, [&](RankContext& ctx) -> Status {
    std::vector<double> sums{ctx.comm.rank + 1.0, 0.5};
    OVERLAPSIM_TRY(allreduce_host(ctx.comm, ctx.compute_stream, sums, ncclSum));
    std::vector<double> maxes{static_cast<double>(ctx.comm.rank)};
    OVERLAPSIM_TRY(allreduce_host(ctx.comm, ctx.compute_stream, maxes, ncclMax));
    sums.push_back(maxes[0]);
    seen[ctx.comm.rank] = sums;
    return Status::success();
  });
  ASSERT_TRUE(status.ok) << status.message;
  for (int r = 0; r < world; ++r) {
    ASSERT_EQ(seen[r].size(), 3u);
    EXPECT_DOUBLE_EQ(seen[r][0], world * (world + 1) / 2.0);
    EXPECT_DOUBLE_EQ(seen[r][1], 0.5 * world);
    EXPECT_DOUBLE_EQ(seen[r][2], world - 1.0);
  }
}

// The rendezvous (host only): nobody passes a phase before every rank arrived, phases
// repeat, and an abort or a deadline releases the waiters and breaks the barrier.
TEST(RankBarrier, NobodyPassesBeforeEveryRankArrived) {
  constexpr int kRanks = 4, kPhases = 50;
  RankBarrier barrier(kRanks);
  std::atomic<int> arrived{0};
  std::atomic<int> early{0};
  std::vector<int> outcome_ok(kRanks, 1);
  std::vector<std::thread> threads;
  for (int r = 0; r < kRanks; ++r)
    threads.emplace_back([&, r] {
      for (int phase = 0; phase < kPhases; ++phase) {
        // Late arrivals on purpose: rank r sleeps r * 50 us before each phase.
        std::this_thread::sleep_for(std::chrono::microseconds(50 * r));
        arrived.fetch_add(1);
        if (barrier.arrive_and_wait(10.0, nullptr) != RankBarrier::Outcome::Passed)
          outcome_ok[r] = 0;
        if (arrived.load() < (phase + 1) * kRanks) early.fetch_add(1);
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(early.load(), 0);
  for (int r = 0; r < kRanks; ++r) EXPECT_EQ(outcome_ok[r], 1) << "rank " << r;
}

TEST(RankBarrier, AbortReleasesWaitersAndBreaksTheBarrier) {
  RankBarrier barrier(3);
  std::atomic<bool> abort{false};
  std::vector<RankBarrier::Outcome> outcomes(2, RankBarrier::Outcome::Passed);
  std::vector<std::thread> waiters;
  for (int r = 0; r < 2; ++r)
    waiters.emplace_back([&, r] { outcomes[r] = barrier.arrive_and_wait(30.0, &abort); });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const auto start = std::chrono::steady_clock::now();
  abort = true;  // the third rank failed instead of arriving
  for (auto& t : waiters) t.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  EXPECT_EQ(outcomes[0], RankBarrier::Outcome::Aborted);
  EXPECT_EQ(outcomes[1], RankBarrier::Outcome::Aborted);
  abort = false;
  EXPECT_EQ(barrier.arrive_and_wait(30.0, &abort), RankBarrier::Outcome::Aborted);
}

TEST(RankBarrier, DeadlineEndsTheWait) {
  RankBarrier barrier(2);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(barrier.arrive_and_wait(0.05, nullptr), RankBarrier::Outcome::TimedOut);
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_GE(waited, 0.05);
  EXPECT_LT(waited, 2.0);
  EXPECT_EQ(barrier.arrive_and_wait(10.0, nullptr), RankBarrier::Outcome::Aborted);
}

TEST(RankBarrier, OneRankPassesAtOnce) {
  RankBarrier barrier(1);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(barrier.arrive_and_wait(0.0, nullptr), RankBarrier::Outcome::Passed);
}

// GPU: quiesce drains both streams and meets the other ranks; allocations between two
// quiesce calls while ranks alternate allocating and all-reducing do not hang.
TEST(Harness, QuiesceAroundAllocationsKeepsRanksInStep) {
  OVERLAPSIM_REQUIRE_GPUS(1);
  const int world = visible_gpu_count();
  std::vector<double> result(world, 0.0);
  const Status status = run_ranks({}, [&](RankContext& ctx) -> Status {
    if (ctx.comm.barrier == nullptr) return Status::failure("thread mode must set the barrier");
    for (int round = 0; round < 20; ++round) {
      OVERLAPSIM_TRY(quiesce(ctx, "test: before allocating"));
      void* scratch = nullptr;
      CUDA_CHECK(cudaMalloc(&scratch, (1u << 20) * (1 + (round + ctx.comm.rank) % 3)));
      OVERLAPSIM_TRY(quiesce(ctx, "test: after allocating"));
      std::vector<double> v{1.0};
      OVERLAPSIM_TRY(allreduce_host(ctx.comm, ctx.compute_stream, v, ncclSum));
      result[ctx.comm.rank] = v[0];
      OVERLAPSIM_TRY(quiesce(ctx, "test: before freeing"));
      CUDA_CHECK(cudaFree(scratch));
    }
    return Status::success();
  });
  ASSERT_TRUE(status.ok) << status.message;
  for (int r = 0; r < world; ++r) EXPECT_DOUBLE_EQ(result[r], world);
}

// A rank thread's free waits for the next quiesce (free_queue.hpp): parked at release,
// gone (memory back) once quiesce has passed; outside rank threads it is immediate.
TEST(Harness, RankThreadFreesWaitForTheNextQuiesce) {
  OVERLAPSIM_REQUIRE_GPUS(1);
  const int world = visible_gpu_count();
  constexpr std::size_t kBytes = std::size_t{1} << 30;
  std::vector<long long> parked(world, -1), after(world, -1), regained_mib(world, 0);
  const Status status = run_ranks({}, [&](RankContext& ctx) -> Status {
    DeviceBuffer big;
    OVERLAPSIM_TRY(quiesce(ctx, "test: before allocating"));
    OVERLAPSIM_TRY(big.allocate(kBytes));
    OVERLAPSIM_TRY(quiesce(ctx, "test: after allocating"));
    std::size_t free_held = 0, free_after = 0, total = 0;
    big.release();
    parked[ctx.comm.rank] = static_cast<long long>(thread_free_queue()->size());
    CUDA_CHECK(cudaMemGetInfo(&free_held, &total));
    OVERLAPSIM_TRY(quiesce(ctx, "test: frees"));
    after[ctx.comm.rank] = static_cast<long long>(thread_free_queue()->size());
    CUDA_CHECK(cudaMemGetInfo(&free_after, &total));
    regained_mib[ctx.comm.rank] =
        (static_cast<long long>(free_after) - static_cast<long long>(free_held)) >> 20;
    return Status::success();
  });
  ASSERT_TRUE(status.ok) << status.message;
  for (int r = 0; r < world; ++r) {
    EXPECT_EQ(parked[r], 1) << "rank " << r;
    EXPECT_EQ(after[r], 0) << "rank " << r;
    EXPECT_GE(regained_mib[r], 1000) << "rank " << r << ": the GiB came back at quiesce";
  }
  EXPECT_EQ(thread_free_queue(), nullptr);
}

// allreduce_host keeps its scratch between calls and grows it between its fences.
TEST(Harness, HostReductionsOfGrowingSizes) {
  OVERLAPSIM_REQUIRE_GPUS(1);
  const int world = visible_gpu_count();
  std::vector<int> good(world, 0);
  const Status status = run_ranks({}, [&](RankContext& ctx) -> Status {
    for (std::size_t n : {1, 700, 3, 5000, 2}) {
      std::vector<double> v(n);
      for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<double>(i + ctx.comm.rank);
      OVERLAPSIM_TRY(allreduce_host(ctx.comm, ctx.compute_stream, v, ncclSum));
      bool all = true;
      for (std::size_t i = 0; i < n; ++i)
        all = all && v[i] == static_cast<double>(world * i + world * (world - 1) / 2);
      good[ctx.comm.rank] += all ? 1 : 0;
    }
    return Status::success();
  });
  ASSERT_TRUE(status.ok) << status.message;
  for (int r = 0; r < world; ++r) EXPECT_EQ(good[r], 5) << "rank " << r;
}

TEST(Harness, RejectsMoreRanksThanGpus) {
  OVERLAPSIM_REQUIRE_GPUS(1);
  HarnessOptions options;
  options.world = visible_gpu_count() + 1;
  const Status status = run_ranks(options, [](RankContext&) { return Status::success(); });
  EXPECT_FALSE(status.ok);
}

TEST(Harness, MpiModeIsAnErrorWithoutMpi) {
  if (mpi_available()) GTEST_SKIP() << "this build has MPI mode";
  HarnessOptions options;
  options.use_mpi = true;
  const Status status = run_ranks(options, [](RankContext&) { return Status::success(); });
  EXPECT_FALSE(status.ok);
  EXPECT_NE(status.message.find("MPI"), std::string::npos);
}

}  // namespace
}  // namespace overlapsim::kernels
