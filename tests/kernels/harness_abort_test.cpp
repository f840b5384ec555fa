// Failure paths of the harness: a rank that fails, or a peer that never joins a
// collective, ends in ncclCommAbort and a failed Status within the deadline, never a
// hang. Its own binary, so the aborted communicators cannot disturb other tests.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "kernels/harness/device_buffer.hpp"
#include "kernels/harness/multi_gpu.hpp"
#include "tests/kernels/gpu_test_support.hpp"

namespace overlapsim::kernels {
namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Both kinds of communicator. With blocking ones nothing can interrupt a NCCL call from
// its own thread, so these tests rely on: channels connected during init
// (NCCL_RUNTIME_CONNECT=0, set by run_ranks before NCCL's first init in the process: on
// 2 x H200 on 2026-11-22 the blocking instantiation hung when the variable was set too
// late and the first allreduce connected lazily to a dead peer), waits that poll, a
// failed rank aborting its own communicator before anything else, and finalize only
// after every rank's body succeeded (a blocking finalize would otherwise wait on a peer
// that had already aborted, as in CollectiveTimeoutAbortsInsteadOfHanging).
class HarnessAbort : public ::testing::TestWithParam<bool> {
 protected:
  HarnessOptions options() const {
    HarnessOptions o;
    o.world = 2;
    o.blocking_comms = GetParam();
    return o;
  }
};

// Rank 0 enqueues an allreduce and waits; rank 1 fails before joining it.
TEST_P(HarnessAbort, PeerFailureAbortsTheWaitingRank) {
  OVERLAPSIM_REQUIRE_GPUS(2);
  HarnessOptions options = this->options();
  options.timeout_s = 60;  // the abort must come from the peer's failure, not the deadline
  const auto start = std::chrono::steady_clock::now();
  const Status status = run_ranks(options, [](RankContext& ctx) -> Status {
    if (ctx.comm.rank == 1) return Status::failure("rank 1: planted failure");
    std::vector<double> values{1.0};
    return allreduce_host(ctx.comm, ctx.compute_stream, values, ncclSum);
  });
  EXPECT_FALSE(status.ok);
  EXPECT_NE(status.message.find("planted failure"), std::string::npos) << status.message;
  EXPECT_LT(seconds_since(start), 30.0);
}

// Rank 1 is busy on the host past rank 0's deadline: rank 0 times out and aborts.
TEST_P(HarnessAbort, CollectiveTimeoutAbortsInsteadOfHanging) {
  OVERLAPSIM_REQUIRE_GPUS(2);
  HarnessOptions options = this->options();
  options.timeout_s = 2;
  const auto start = std::chrono::steady_clock::now();
  const Status status = run_ranks(options, [](RankContext& ctx) -> Status {
    if (ctx.comm.rank == 1) {
      std::this_thread::sleep_for(std::chrono::seconds(5));
      return Status::success();  // never joins rank 0's allreduce
    }
    std::vector<double> values{1.0};
    return allreduce_host(ctx.comm, ctx.compute_stream, values, ncclSum);
  });
  EXPECT_FALSE(status.ok);
  EXPECT_NE(status.message.find("timed out"), std::string::npos) << status.message;
  EXPECT_NE(status.message.find("aborted"), std::string::npos) << status.message;
  EXPECT_LT(seconds_since(start), 40.0);
}

INSTANTIATE_TEST_SUITE_P(NonBlocking, HarnessAbort, ::testing::Values(false));
INSTANTIATE_TEST_SUITE_P(Blocking, HarnessAbort, ::testing::Values(true));

}  // namespace
}  // namespace overlapsim::kernels
