#pragma once
// Helpers shared by the kernels/ tests: GPU-count skips, fresh seeds, host copies.
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdint>
#include <random>
#include <string>
#include <thread>
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

extern char** environ;

namespace overlapsim::kernels::testing {

// How a child test process ended.
enum class ChildEnd { Exited0, Failed, Signalled, Hung };

// Runs this test binary again with `--gtest_filter=<filter>` under CUDA_MODULE_LOADING=LAZY
// (whatever the parent had) and `marker`=1 in the environment, and waits up to `timeout`;
// a child still running then is killed (Hung). The cold-start tests: a first call that
// loads a kernel while a peer's kernel waits on it deadlocks under lazy loading.
inline ChildEnd run_lazy_loading_child(const std::string& filter, const std::string& marker,
                                       std::chrono::seconds timeout = std::chrono::seconds(90)) {
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry(*e);
    if (entry.rfind("CUDA_MODULE_LOADING=", 0) == 0) continue;
    env_strings.push_back(entry);
  }
  env_strings.push_back("CUDA_MODULE_LOADING=LAZY");
  env_strings.push_back(marker + "=1");
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::string exe = "/proc/self/exe", flag = "--gtest_filter=" + filter;
  char* argv[] = {exe.data(), flag.data(), nullptr};
  pid_t pid = 0;
  if (posix_spawn(&pid, "/proc/self/exe", nullptr, nullptr, argv, envp.data()) != 0)
    return ChildEnd::Failed;
  int wstatus = 0;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (waitpid(pid, &wstatus, WNOHANG) == pid) break;
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &wstatus, 0);
      return ChildEnd::Hung;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (!WIFEXITED(wstatus)) return ChildEnd::Signalled;
  return WEXITSTATUS(wstatus) == 0 ? ChildEnd::Exited0 : ChildEnd::Failed;
}

// The fused kernels' cold-start check on the child's end: it must neither hang (a first
// fused call deadlocked) nor die by a signal, and must pass.
inline void expect_cold_start_child_passed(ChildEnd end) {
  ASSERT_NE(end, ChildEnd::Hung)
      << "the cold-start child hung (first fused call deadlocked?) and was killed";
  ASSERT_NE(end, ChildEnd::Signalled) << "child died by a signal";
  EXPECT_EQ(end, ChildEnd::Exited0) << "the cold-start child failed (see its output above)";
}

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
