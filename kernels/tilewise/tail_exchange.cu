#include <cuda_runtime.h>

#include <string>

#include "kernels/common/global_timer.cuh"
#include "kernels/tilewise/tail_exchange.hpp"

namespace overlapsim::kernels::tilewise {
namespace {

constexpr int kUnroll = 4;  // 16-byte loads in flight per thread before their remote stores

__device__ __forceinline__ void release_sys(std::uint32_t* flag, std::uint32_t value) {
  asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(flag), "r"(value) : "memory");
}

__device__ __forceinline__ std::uint32_t acquire_sys(const std::uint32_t* flag) {
  std::uint32_t v;
  asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(flag) : "memory");
  return v;
}

// Copies [begin, end) of src to dst with the whole CTA; vector: every address and both ends
// are 16-byte aligned, else 2-byte elements (bf16/fp16 regions always are).
template <int kThreads>
__device__ void copy_range(const char* src, char* dst, std::size_t begin, std::size_t end,
                           bool vector) {
  if (vector) {
    const uint4* s = reinterpret_cast<const uint4*>(src + begin);
    uint4* d = reinterpret_cast<uint4*>(dst + begin);
    const std::size_t n = (end - begin) / 16;
    std::size_t i = threadIdx.x;
    for (; i + (kUnroll - 1) * kThreads < n; i += kUnroll * kThreads) {
      uint4 v[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) v[u] = s[i + u * kThreads];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) d[i + u * kThreads] = v[u];
    }
    for (; i < n; i += kThreads) d[i] = s[i];
    return;
  }
  const std::uint16_t* s = reinterpret_cast<const std::uint16_t*>(src + begin);
  std::uint16_t* d = reinterpret_cast<std::uint16_t*>(dst + begin);
  const std::size_t n = (end - begin) / 2;
  for (std::size_t i = threadIdx.x; i < n; i += kThreads) d[i] = s[i];
}

template <int kThreads>
__global__ void __launch_bounds__(kThreads)
    tail_exchange_kernel(TailExchangeArgs args, std::size_t slice_bytes, bool vector,
                         std::uint64_t timeout_ns) {
  // Launched as a programmatic dependent of the GEMM: this CTA may be resident before the
  // GEMM has finished; wait for it (and its memory) here. A no-op without the dependency.
  asm volatile("griddepcontrol.wait;" ::: "memory");
  if (blockIdx.x == 0 && threadIdx.x == 0 && args.reset_counter) *args.reset_counter = 0;
  // No bytes: a handshake alone, one flag per peer.
  const int slices = args.bytes == 0 ? 1 : kTailSlices;
  for (int p = 0; p < args.peers; ++p) {
    for (int slice = blockIdx.x; slice < slices; slice += gridDim.x) {
      const std::size_t begin = slice * slice_bytes;
      const std::size_t end = begin + slice_bytes < args.bytes ? begin + slice_bytes : args.bytes;
      if (begin < end) copy_range<kThreads>(args.src, args.dst[p], begin, end, vector);
    }
    // Every thread's stores are done (barrier) and visible to the peer (the system-scope
    // fence, cumulative over the barrier) before the flags: one fence per CTA and peer, as
    // each fence waits for the CTA's stores to drain over the link.
    __syncthreads();
    if (threadIdx.x == 0) {
      __threadfence_system();
      for (int slice = blockIdx.x; slice < slices; slice += gridDim.x)
        release_sys(args.out_flags[p] + slice, args.epoch);
    }
  }
  if (threadIdx.x != 0) return;
  const std::uint64_t deadline = global_timer_ns() + timeout_ns;
  for (int slice = blockIdx.x; slice < slices; slice += gridDim.x) {
    for (int p = 0; p < args.peers; ++p) {
      unsigned sleep_ns = 32;
      // Epochs only grow (wrapping): a flag at or past this call's epoch has arrived.
      while (static_cast<std::int32_t>(acquire_sys(args.in_flags[p] + slice) - args.epoch) < 0) {
        if (global_timer_ns() > deadline) {
          if (args.timed_out) atomicExch(args.timed_out, 1);
          return;
        }
        __nanosleep(sleep_ns);
        if (sleep_ns < 256) sleep_ns *= 2;
      }
    }
  }
}

}  // namespace

void set_tail_peers(int world, int rank, const std::function<char*(int)>& dst_of,
                    const std::function<std::uint32_t*(int)>& flags_of, std::uint32_t* my_flags,
                    TailExchangeArgs* args) {
  args->peers = world - 1;
  for (int i = 1; i < world && i <= kTailMaxPeers; ++i) {
    const int d = (rank + i) % world;
    args->dst[i - 1] = dst_of(d);
    args->out_flags[i - 1] = flags_of(d) + rank * kTailSlices;
    args->in_flags[i - 1] = my_flags + d * kTailSlices;
  }
}

Status launch_tail_exchange(const TailExchangeArgs& args, cudaStream_t stream) {
  if (args.peers < 1 || args.peers > kTailMaxPeers || args.grid < 1 || args.grid > kTailSlices ||
      args.bytes % 2 != 0 || (args.threads != 256 && args.threads != 512 && args.threads != 1024))
    return Status::failure("tilewise tail exchange: needs 1.." + std::to_string(kTailMaxPeers) +
                           " peers, 1.." + std::to_string(kTailSlices) +
                           " CTAs of 256, 512 or 1024 threads and whole 2-byte elements, got " +
                           std::to_string(args.peers) + " peers, " + std::to_string(args.grid) +
                           " CTAs of " + std::to_string(args.threads) + ", " +
                           std::to_string(args.bytes) + " bytes");
  std::size_t slice_bytes = (args.bytes + kTailSlices - 1) / kTailSlices;
  slice_bytes = (slice_bytes + 15) / 16 * 16;
  auto misaligned = [](const void* ptr) { return reinterpret_cast<std::uintptr_t>(ptr) % 16 != 0; };
  bool vector = args.bytes % 16 == 0 && !misaligned(args.src);
  for (int p = 0; p < args.peers; ++p) vector = vector && !misaligned(args.dst[p]);
  const auto timeout_ns = static_cast<std::uint64_t>(args.timeout_s * 1e9);
  // Programmatic stream serialisation: the launch is prepared while the kernel before it
  // (the GEMM) drains, instead of after it, and the kernel waits for it itself.
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(static_cast<unsigned>(args.grid));
  config.blockDim = dim3(static_cast<unsigned>(args.threads));
  config.stream = stream;
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute.val.programmaticStreamSerializationAllowed = 1;
  config.attrs = &attribute;
  config.numAttrs = 1;
  if (args.threads == 256)
    CUDA_CHECK(cudaLaunchKernelEx(&config, tail_exchange_kernel<256>, args, slice_bytes, vector,
                                  timeout_ns));
  else if (args.threads == 1024)
    CUDA_CHECK(cudaLaunchKernelEx(&config, tail_exchange_kernel<1024>, args, slice_bytes, vector,
                                  timeout_ns));
  else
    CUDA_CHECK(cudaLaunchKernelEx(&config, tail_exchange_kernel<512>, args, slice_bytes, vector,
                                  timeout_ns));
  CUDA_CHECK(cudaGetLastError());
  return Status::success();
}

Status preload_tail_exchange() {
  cudaFuncAttributes attributes{};
  CUDA_CHECK(cudaFuncGetAttributes(&attributes, tail_exchange_kernel<256>));
  CUDA_CHECK(cudaFuncGetAttributes(&attributes, tail_exchange_kernel<512>));
  CUDA_CHECK(cudaFuncGetAttributes(&attributes, tail_exchange_kernel<1024>));
  return Status::success();
}

}  // namespace overlapsim::kernels::tilewise
