// The multi-GPU harness: a rank per GPU with its own device, streams of the right
// priorities and a working communicator; host values reduced over ranks.
#include <gtest/gtest.h>

#include <cstdlib>
#include <vector>

#include "kernels/harness/multi_gpu.hpp"
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
