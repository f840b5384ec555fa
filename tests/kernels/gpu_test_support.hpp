#pragma once
// Helpers shared by the kernels/ tests: GPU-count skips, fresh seeds, host copies.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "kernels/harness/dtype.hpp"
#include "kernels/harness/multi_gpu.hpp"
#include "kernels/harness/random_values.hpp"

// Skips the test (with the reason) unless at least `n` GPUs are visible.
#define OVERLAPSIM_REQUIRE_GPUS(n)                                                          \
  do {                                                                                      \
    const int gpus_ = ::overlapsim::kernels::visible_gpu_count();                           \
    if (gpus_ < (n)) GTEST_SKIP() << "needs " << (n) << " GPU(s), " << gpus_ << " visible"; \
  } while (0)

namespace overlapsim::kernels::testing {

// A new seed every run: the kernels must compute the same function on any input.
inline std::uint64_t fresh_seed() {
  std::random_device device;
  return (static_cast<std::uint64_t>(device()) << 32) ^ device();
}

// Device buffer of 16-bit values -> host doubles (NaN stays NaN).
inline std::vector<double> to_host(const void* data, std::size_t count, DType dtype) {
  std::vector<std::uint16_t> bits(count);
  EXPECT_EQ(cudaMemcpy(bits.data(), data, count * 2, cudaMemcpyDeviceToHost), cudaSuccess);
  std::vector<double> values(count);
  for (std::size_t i = 0; i < count; ++i) values[i] = bits_to_float(dtype, bits[i]);
  return values;
}

}  // namespace overlapsim::kernels::testing
