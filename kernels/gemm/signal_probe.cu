#include <cuda_runtime.h>

#include "kernels/common/global_timer.cuh"
#include "kernels/gemm/signal_probe.hpp"

namespace overlapsim::kernels::gemm {
namespace {

__device__ __forceinline__ uint32_t load_acquire_gpu(const uint32_t* p) {
  uint32_t v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

__global__ void signal_probe_kernel(SignalProbeArgs a) {
  __shared__ int status;  // 0 complete, 1 timed out
  const uint64_t deadline = global_timer_ns() + static_cast<uint64_t>(a.timeout_s * 1e9);
  for (int g = 0; g < a.groups; ++g) {
    if (threadIdx.x == 0) {
      const uint32_t target = static_cast<uint32_t>(a.group_tiles[g]);
      uint32_t seen = load_acquire_gpu(a.group_counters + g);
      if (seen < target) atomicAdd(a.result + 1, 1);
      status = 0;
      while (seen < target) {
        if (global_timer_ns() > deadline) {
          status = 1;
          break;
        }
        __nanosleep(64);
        seen = load_acquire_gpu(a.group_counters + g);
      }
    }
    // Thread 0's acquire, then the barrier, orders every thread's reads below after it.
    __syncthreads();
    if (status != 0) {
      if (threadIdx.x == 0) atomicAdd(a.result + 2, 1);
      __syncthreads();
      continue;
    }
    int bad = 0;
    for (int64_t i = a.region_begin[g] + threadIdx.x; i < a.region_end[g]; i += blockDim.x) {
      // Read through L2 (.cg): L1 is not coherent with the producer's stores.
      if (__ldcg(a.data + i) == a.poison) ++bad;
    }
    if (bad != 0) atomicAdd(a.result, bad);
    __syncthreads();
  }
}

}  // namespace

Status preload_signal_probe() {
  cudaFuncAttributes attributes{};
  CUDA_CHECK(cudaFuncGetAttributes(&attributes, signal_probe_kernel));
  return Status::success();
}

Status launch_signal_probe(const SignalProbeArgs& args, cudaStream_t stream) {
  if (args.groups < 1 || !args.group_counters || !args.group_tiles || !args.region_begin ||
      !args.region_end || !args.data || !args.result)
    return Status::failure("signal probe: groups >= 1 and every pointer set are required");
  signal_probe_kernel<<<1, 256, 0, stream>>>(args);
  CUDA_CHECK(cudaGetLastError());
  return Status::success();
}

}  // namespace overlapsim::kernels::gemm
