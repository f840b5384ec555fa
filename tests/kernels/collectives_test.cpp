// NCCL collectives through the harness, every element checked against host-computed
// sums / gathers of each rank's fresh random input. Needs >= 2 GPUs.
#include <gtest/gtest.h>

#include <cmath>
#include <mutex>

#include "kernels/collectives/nccl_collectives.hpp"
#include "kernels/harness/device_buffer.hpp"
#include "kernels/harness/fill.hpp"
#include "kernels/harness/random_values.hpp"
#include "tests/kernels/gpu_test_support.hpp"

namespace overlapsim::kernels {
namespace {

using testing::fresh_seed;
using testing::to_host;

struct Outcome {
  std::vector<std::vector<double>> received;  // per rank
};

// Runs `op` with `send_count` elements per rank and returns what each rank received.
Outcome run_collective(CollectiveOp op, std::size_t send_count, DType dtype, std::uint64_t seed) {
  const int world = visible_gpu_count();
  Outcome outcome;
  outcome.received.resize(world);
  const std::size_t recv_count = op == CollectiveOp::ReduceScatter ? send_count / world
                                 : op == CollectiveOp::AllGather   ? send_count * world
                                                                   : send_count;
  const Status status = run_ranks({}, [&](RankContext& ctx) -> Status {
    DeviceBuffer send, recv;
    OVERLAPSIM_TRY(send.allocate(send_count * 2));
    OVERLAPSIM_TRY(recv.allocate(recv_count * 2));
    OVERLAPSIM_TRY(fill_random(send.data(), send_count, dtype, buffer_seed(seed, ctx.comm.rank, 0),
                               ctx.compute_stream));
    OVERLAPSIM_TRY(poison(recv.data(), recv_count, ctx.compute_stream));
    switch (op) {
      case CollectiveOp::AllReduce:
        OVERLAPSIM_TRY(
            all_reduce(ctx.comm, send.data(), recv.data(), send_count, dtype, ctx.compute_stream));
        break;
      case CollectiveOp::ReduceScatter:
        OVERLAPSIM_TRY(reduce_scatter(ctx.comm, send.data(), recv.data(), recv_count, dtype,
                                      ctx.compute_stream));
        break;
      case CollectiveOp::AllGather:
        OVERLAPSIM_TRY(
            all_gather(ctx.comm, send.data(), recv.data(), send_count, dtype, ctx.compute_stream));
        break;
      case CollectiveOp::AllToAll: {
        const std::size_t per_peer = send_count / world;
        OVERLAPSIM_TRY(all_to_all(ctx.comm, send.data(), per_peer, recv.data(), per_peer, per_peer,
                                  dtype, ctx.compute_stream));
        break;
      }
    }
    OVERLAPSIM_TRY(wait_stream(ctx.comm, ctx.compute_stream, "test collective"));
    outcome.received[ctx.comm.rank] = to_host(recv.data(), recv_count, dtype);
    return Status::success();
  });
  EXPECT_TRUE(status.ok) << status.message;
  return outcome;
}

double input(DType dtype, std::uint64_t seed, int rank, std::size_t i) {
  return random_value(dtype, buffer_seed(seed, rank, 0), i);
}

void check(CollectiveOp op, std::size_t send_count, DType dtype) {
  const std::uint64_t seed = fresh_seed();
  const Outcome outcome = run_collective(op, send_count, dtype, seed);
  const int world = static_cast<int>(outcome.received.size());
  const double eps = dtype == DType::BF16 ? 0x1p-8 : 0x1p-11;
  for (int me = 0; me < world; ++me) {
    const std::vector<double>& got = outcome.received[me];
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < got.size(); ++i) {
      double expected = 0, tolerance = 0;
      if (op == CollectiveOp::AllReduce || op == CollectiveOp::ReduceScatter) {
        const std::size_t source = op == CollectiveOp::ReduceScatter ? me * got.size() + i : i;
        double magnitude = 0;
        for (int r = 0; r < world; ++r) {
          expected += input(dtype, seed, r, source);
          magnitude += std::fabs(input(dtype, seed, r, source));
        }
        tolerance = 2.0 * world * eps * magnitude;
      } else if (op == CollectiveOp::AllGather) {
        expected = input(dtype, seed, static_cast<int>(i / send_count), i % send_count);
      } else {
        const std::size_t per_peer = send_count / world;
        expected = input(dtype, seed, static_cast<int>(i / per_peer), me * per_peer + i % per_peer);
      }
      wrong += !(std::fabs(got[i] - expected) <= tolerance);
    }
    EXPECT_EQ(wrong, 0u) << to_string(op) << " rank " << me << " of " << got.size();
  }
}

TEST(NcclCollectives, AllReduceSums) {
  OVERLAPSIM_REQUIRE_GPUS(2);
  check(CollectiveOp::AllReduce, 1 << 20, DType::BF16);
  check(CollectiveOp::AllReduce, 1001, DType::FP16);
}

TEST(NcclCollectives, ReduceScatterKeepsEachRanksBlock) {
  OVERLAPSIM_REQUIRE_GPUS(2);
  const std::size_t world = static_cast<std::size_t>(visible_gpu_count());
  check(CollectiveOp::ReduceScatter, world * 123457, DType::BF16);
}

TEST(NcclCollectives, AllGatherConcatenates) {
  OVERLAPSIM_REQUIRE_GPUS(2);
  check(CollectiveOp::AllGather, 99991, DType::BF16);
}

TEST(NcclCollectives, AllToAllExchangesBlocks) {
  OVERLAPSIM_REQUIRE_GPUS(2);
  const std::size_t world = static_cast<std::size_t>(visible_gpu_count());
  check(CollectiveOp::AllToAll, world * 65539, DType::BF16);
}

}  // namespace
}  // namespace overlapsim::kernels
