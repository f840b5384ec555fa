#pragma once
// A gate on a stream: a one-thread kernel that holds the stream until the host opens the
// gate (or a timeout passes), so the host can enqueue a batch of short kernels and their
// timing events ahead of the GPU and the GPU then runs them back to back. Without it, a
// ~10 us NCCL call timed alone, behind a host that enqueues at about the GPU's pace, finds
// the stream empty in some iterations and not in others: its start event then runs before
// the host has finished launching the kernel, and the iteration counts the host's launch
// latency. On 2 x H200 that made neighbouring sizes' medians alternate (reducescatter 8.4,
// 10.5, 8.6, 10.6 us at 1, 2, 4, 8 KiB, calibration/data/h200x2). NVIDIA's nvbench blocks
// its stream the same way. The timeout bounds the hold if the host itself blocks (a full
// launch queue): the batch then runs late but nothing hangs, and timed_out() says so.
// Thread-compatible, one per rank thread; C++17.
#include <cuda_runtime.h>

#include "kernels/common/status.hpp"

namespace overlapsim::kernels {

class StreamGate {
 public:
  StreamGate() = default;
  ~StreamGate();
  StreamGate(const StreamGate&) = delete;
  StreamGate& operator=(const StreamGate&) = delete;

  // Pinned, mapped host words for the flag and the timeout report, on the current device.
  Status initialize();
  bool initialized() const { return flag_ != nullptr; }
  // Enqueues the holding kernel on `stream`; it returns once open() is called or after
  // `timeout_s` (then timed_out() is true once the stream has passed the gate).
  Status close(cudaStream_t stream, double timeout_s);
  // Releases the last gate closed (host side, no CUDA call).
  void open();
  // Gates that opened by their timeout so far (read after the stream has passed them).
  int timeouts() const;

 private:
  volatile int* flag_ = nullptr;      // host-mapped: the last epoch opened
  volatile int* timeouts_ = nullptr;  // host-mapped: count of gates that timed out
  int epoch_ = 0;
};

}  // namespace overlapsim::kernels
