#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>

#include "kernels/common/global_timer.cuh"
#include "kernels/harness/stream_gate.hpp"

namespace overlapsim::kernels {
namespace {

// One thread polls the host-mapped flag with back-off; the stream's next work starts when
// it reaches `epoch` (host opened) or when `timeout_ns` has passed.
__global__ void hold_kernel(const volatile int* flag, int epoch, unsigned long long timeout_ns,
                            volatile int* timeouts) {
  const unsigned long long start = global_timer_ns();
  unsigned sleep_ns = 256;
  while (*flag < epoch) {
    if (global_timer_ns() - start > timeout_ns) {
      *timeouts = *timeouts + 1;
      break;
    }
    __nanosleep(sleep_ns);
    sleep_ns = sleep_ns < 4096 ? 2 * sleep_ns : sleep_ns;
  }
}

}  // namespace

StreamGate::~StreamGate() {
  if (flag_) cudaFreeHost(const_cast<int*>(flag_));
}

Status StreamGate::initialize() {
  if (flag_) return Status::success();
  int* words = nullptr;
  CUDA_CHECK(cudaHostAlloc(&words, 2 * sizeof(int), cudaHostAllocMapped | cudaHostAllocPortable));
  words[0] = 0;
  words[1] = 0;
  flag_ = words;
  timeouts_ = words + 1;
  return Status::success();
}

Status StreamGate::close(cudaStream_t stream, double timeout_s) {
  if (!flag_) return Status::failure("StreamGate::close before initialize");
  int* device_words = nullptr;
  CUDA_CHECK(cudaHostGetDevicePointer(&device_words, const_cast<int*>(flag_), 0));
  const auto timeout_ns = static_cast<unsigned long long>(std::max(timeout_s, 0.0) * 1e9);
  hold_kernel<<<1, 1, 0, stream>>>(device_words, ++epoch_, timeout_ns, device_words + 1);
  CUDA_CHECK(cudaGetLastError());
  return Status::success();
}

void StreamGate::open() {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  *flag_ = epoch_;
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

int StreamGate::timeouts() const { return flag_ ? *timeouts_ : 0; }

}  // namespace overlapsim::kernels
