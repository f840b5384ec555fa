// alloc-sync-probe: which host-side CUDA calls wait for a kernel that is running on
// another GPU. That is the mechanism suspected behind the tile-wise all-to-all hang
// (docs/kernels/log.md). The suspected deadlock: rank X's thread is blocked in such a call
// while GPU Y runs a collective kernel that waits for X's part. X can never enqueue that
// part.
//
// For each call it holds one GPU busy with a spinning kernel, makes the call on GPU 0
// from the host thread, and times it. The spinning kernel ends when the host releases it
// or after --hold-ms. A call that returns only after about --hold-ms waited for that
// kernel. The grid: peer access off / on (cudaDeviceEnablePeerAccess both ways), busy
// GPU = 1 (the peer) or 0 (the caller's own GPU, the known case). One CSV row per
// measurement after a header line. Needs 2 GPUs; exits 2 without them.
#include <cuda_runtime.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "kernels/bench/bench_row.hpp"
#include "kernels/common/global_timer.cuh"

namespace {

__global__ void spin_until_released(const volatile int* release, unsigned long long hold_ns) {
  const unsigned long long start = overlapsim::kernels::global_timer_ns();
  while (*release == 0 && overlapsim::kernels::global_timer_ns() - start < hold_ns)
    __nanosleep(1000);
}

bool ok(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return true;
  std::fprintf(stderr, "alloc-sync-probe: %s: %s\n", what, cudaGetErrorString(e));
  return false;
}

#define PROBE_CHECK(call)               \
  do {                                  \
    if (!ok((call), #call)) return false; \
  } while (0)

struct Probe {
  double hold_ms = 1000;
  std::size_t device_bytes = std::size_t{256} << 20;
  volatile int* release = nullptr;  // host-mapped
  int* release_device = nullptr;
  cudaStream_t busy_stream[2] = {nullptr, nullptr};
  char* pageable = nullptr;

  bool setup() {
    int* words = nullptr;
    PROBE_CHECK(cudaHostAlloc(&words, sizeof(int), cudaHostAllocMapped | cudaHostAllocPortable));
    *words = 0;
    release = words;
    PROBE_CHECK(cudaHostGetDevicePointer(&release_device, words, 0));
    for (int d = 0; d < 2; ++d) {
      PROBE_CHECK(cudaSetDevice(d));
      PROBE_CHECK(cudaStreamCreateWithFlags(&busy_stream[d], cudaStreamNonBlocking));
      spin_until_released<<<1, 1, 0, busy_stream[d]>>>(release_device, 0);  // loads the module
      PROBE_CHECK(cudaStreamSynchronize(busy_stream[d]));
    }
    pageable = static_cast<char*>(std::malloc(1 << 20));
    return pageable != nullptr && ok(cudaSetDevice(0), "cudaSetDevice");
  }

  // Holds `busy` busy, runs `call` on GPU 0, returns its wall time in ms (< 0: failed).
  double time_call(int busy, const std::function<bool()>& call) {
    *release = 0;
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (!ok(cudaSetDevice(busy), "cudaSetDevice")) return -1;
    spin_until_released<<<1, 1, 0, busy_stream[busy]>>>(
        release_device, static_cast<unsigned long long>(hold_ms * 1e6));
    if (!ok(cudaGetLastError(), "spin launch")) return -1;
    // Until the kernel has surely started (a launch returns before it runs).
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (cudaStreamQuery(busy_stream[busy]) != cudaErrorNotReady) {
      std::fprintf(stderr, "alloc-sync-probe: the spinning kernel was not running\n");
      return -1;
    }
    if (!ok(cudaSetDevice(0), "cudaSetDevice")) return -1;
    const auto start = std::chrono::steady_clock::now();
    const bool called = call();
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
            .count();
    *release = 1;
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (!ok(cudaStreamSynchronize(busy_stream[busy]), "release")) return -1;
    return called ? ms : -1;
  }
};

struct Call {
  const char* name;
  // prepare (unmeasured, GPU 0 current), the measured call, cleanup (unmeasured).
  std::function<bool()> prepare, call, cleanup;
};

}  // namespace

int main(int argc, char** argv) {
  Probe probe;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--hold-ms") == 0 && i + 1 < argc) {
      probe.hold_ms = std::atof(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: alloc-sync-probe [--hold-ms MS]\n");
      return 2;
    }
  }
  int gpus = 0;
  if (cudaGetDeviceCount(&gpus) != cudaSuccess || gpus < 2) {
    std::fprintf(stderr, "alloc-sync-probe: needs 2 GPUs, found %d\n", gpus);
    return 2;
  }
  if (!probe.setup()) return 1;
  const overlapsim::kernels::bench::DeviceTags tags = overlapsim::kernels::bench::read_device_tags(2);

  void* device_block = nullptr;
  void* pinned = nullptr;
  void* mapped_block = nullptr;
  const std::vector<Call> calls = {
      {"cudaEventCreate", [] { return true; },
       [] {
         cudaEvent_t e = nullptr;
         const bool r = ok(cudaEventCreate(&e), "cudaEventCreate");
         cudaEventDestroy(e);
         return r;
       },
       [] { return true; }},
      {"cudaMalloc", [] { return true; },
       [&] { return ok(cudaMalloc(&device_block, probe.device_bytes), "cudaMalloc"); },
       [&] { return ok(cudaFree(device_block), "cudaFree"); }},
      {"cudaFree", [&] { return ok(cudaMalloc(&device_block, probe.device_bytes), "cudaMalloc"); },
       [&] { return ok(cudaFree(device_block), "cudaFree"); }, [] { return true; }},
      {"cudaFree_small", [&] { return ok(cudaMalloc(&device_block, 8), "cudaMalloc"); },
       [&] { return ok(cudaFree(device_block), "cudaFree"); }, [] { return true; }},
      {"cudaMallocHost", [] { return true; },
       [&] { return ok(cudaMallocHost(&pinned, 1 << 20), "cudaMallocHost"); },
       [&] { return ok(cudaFreeHost(pinned), "cudaFreeHost"); }},
      {"cudaFreeHost", [&] { return ok(cudaMallocHost(&pinned, 1 << 20), "cudaMallocHost"); },
       [&] { return ok(cudaFreeHost(pinned), "cudaFreeHost"); }, [] { return true; }},
      {"cudaMemcpy_d2h_pageable",
       [&] { return ok(cudaMalloc(&mapped_block, 1 << 20), "cudaMalloc"); },
       [&] {
         return ok(cudaMemcpy(probe.pageable, mapped_block, 4, cudaMemcpyDeviceToHost),
                   "cudaMemcpy");
       },
       [&] { return ok(cudaFree(mapped_block), "cudaFree"); }},
  };

  std::printf("gpu,driver,cuda,nccl,peer_access,busy_gpu,call,call_ms,hold_ms,waited\n");
  for (const bool peer : {false, true}) {
    if (peer) {
      for (int d = 0; d < 2; ++d) {
        if (!ok(cudaSetDevice(d), "cudaSetDevice")) return 1;
        const cudaError_t e = cudaDeviceEnablePeerAccess(1 - d, 0);
        if (e != cudaSuccess && e != cudaErrorPeerAccessAlreadyEnabled) {
          ok(e, "cudaDeviceEnablePeerAccess");
          return 1;
        }
        cudaGetLastError();
      }
      if (!ok(cudaSetDevice(0), "cudaSetDevice")) return 1;
    }
    for (const int busy : {1, 0}) {
      for (const Call& c : calls) {
        if (!c.prepare()) return 1;
        const double ms = probe.time_call(busy, c.call);
        if (ms < 0) return 1;
        if (!c.cleanup()) return 1;
        std::printf("%s,%s,%s,%s,%s,%d,%s,%.3f,%.0f,%d\n", tags.gpu.c_str(), tags.driver.c_str(),
                    tags.cuda.c_str(), tags.nccl.c_str(), peer ? "on" : "off", busy, c.name, ms, probe.hold_ms,
                    ms > 0.5 * probe.hold_ms ? 1 : 0);
        std::fflush(stdout);
      }
    }
  }
  return 0;
}
