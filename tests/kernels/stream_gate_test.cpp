// StreamGate (kernels/harness/stream_gate.hpp): work behind a closed gate does not run
// until the host opens it; a gate nobody opens lets the stream go after its timeout and
// counts it; gates close and open again without resets (epochs).
#include "kernels/harness/stream_gate.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "tests/kernels/gpu_test_support.hpp"

namespace overlapsim::kernels {
namespace {

struct Stream {
  cudaStream_t s = nullptr;
  cudaEvent_t done = nullptr;
  Stream() {
    EXPECT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
    EXPECT_EQ(cudaEventCreate(&done), cudaSuccess);
  }
  ~Stream() {
    cudaEventDestroy(done);
    cudaStreamDestroy(s);
  }
};

TEST(StreamGateGpu, HoldsTheStreamUntilOpened) {
  OVERLAPSIM_REQUIRE_GPUS(1);
  Stream st;
  StreamGate gate;
  ASSERT_TRUE(gate.initialize().ok);
  for (int round = 0; round < 3; ++round) {  // epochs: no reset between gates
    ASSERT_TRUE(gate.close(st.s, 10.0).ok);
    ASSERT_EQ(cudaEventRecord(st.done, st.s), cudaSuccess);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_EQ(cudaEventQuery(st.done), cudaErrorNotReady) << "round " << round;
    gate.open();
    ASSERT_EQ(cudaEventSynchronize(st.done), cudaSuccess);
  }
  EXPECT_EQ(gate.timeouts(), 0);
}

TEST(StreamGateGpu, TimeoutReleasesAndIsCounted) {
  OVERLAPSIM_REQUIRE_GPUS(1);
  Stream st;
  StreamGate gate;
  ASSERT_TRUE(gate.initialize().ok);
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(gate.close(st.s, 0.02).ok);
  ASSERT_EQ(cudaEventRecord(st.done, st.s), cudaSuccess);
  ASSERT_EQ(cudaEventSynchronize(st.done), cudaSuccess);  // nobody opens it
  const double waited_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_GE(waited_s, 0.019);
  EXPECT_LT(waited_s, 5.0);
  EXPECT_EQ(gate.timeouts(), 1);
  gate.open();  // late open of a passed gate: harmless, the next gate still holds
  ASSERT_TRUE(gate.close(st.s, 10.0).ok);
  ASSERT_EQ(cudaEventRecord(st.done, st.s), cudaSuccess);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(cudaEventQuery(st.done), cudaErrorNotReady);
  gate.open();
  ASSERT_EQ(cudaEventSynchronize(st.done), cudaSuccess);
}

TEST(StreamGate, CloseBeforeInitializeIsAnError) {
  StreamGate gate;
  EXPECT_FALSE(gate.close(nullptr, 1.0).ok);
  EXPECT_EQ(gate.timeouts(), 0);
}

}  // namespace
}  // namespace overlapsim::kernels
