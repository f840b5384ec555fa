// The fused GEMM + all-to-all's kernels: the own GEMM's mainloop with the push epilogue
// (gemm_alltoall_epilogue.cuh), and the receiver's wait for every source's tiles.
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstring>
#include <string>

#include "kernels/common/global_timer.cuh"
#include "kernels/fused/gemm_alltoall_epilogue.cuh"
#include "kernels/fused/gemm_alltoall_kernel.hpp"
#include "kernels/gemm/own_gemm.hpp"
#include "kernels/gemm/own_gemm_sm90.cuh"

namespace overlapsim::kernels::fused::gemm_a2a {
namespace {

using gemm::sm90::KernelParams;

__device__ __forceinline__ std::uint32_t acquire_sys(const std::uint32_t* counter) {
  std::uint32_t v;
  asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(counter) : "memory");
  return v;
}

// Thread s waits for source s: counters only grow (wrapping), so a count at or past
// target has arrived (a source may already be one call ahead).
__global__ void wait_sources_kernel(const std::uint32_t* counters, int world, std::uint32_t target,
                                    std::uint64_t timeout_ns, int* timed_out) {
  const int src = static_cast<int>(threadIdx.x);
  if (src >= world) return;
  const std::uint64_t deadline = global_timer_ns() + timeout_ns;
  unsigned sleep_ns = 0;
  while (static_cast<std::int32_t>(acquire_sys(counters + src) - target) < 0) {
    if (global_timer_ns() > deadline) {
      atomicExch(timed_out, 1);
      return;
    }
    if (sleep_ns > 0) __nanosleep(sleep_ns);
    sleep_ns = sleep_ns == 0 ? 32 : (sleep_ns < 256 ? 2 * sleep_ns : sleep_ns);
  }
}

template <class T, bool kDefer>
Status load_gemm() {
  auto kernel = gemm::sm90::own_gemm_kernel<T, PushEpilogue, kDefer, 1>;
  CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  GemmConfig::kSharedBytes));
  cudaFuncAttributes attributes{};
  CUDA_CHECK(cudaFuncGetAttributes(&attributes, kernel));
  return Status::success();
}

template <class T>
Status launch_typed(const KernelParams<PushEpilogue>& params, bool defer, int num_ctas,
                    cudaStream_t stream) {
  if (defer) {
    gemm::sm90::own_gemm_kernel<T, PushEpilogue, true, 1>
        <<<num_ctas, GemmConfig::kThreads, GemmConfig::kSharedBytes, stream>>>(params);
  } else {
    gemm::sm90::own_gemm_kernel<T, PushEpilogue, false, 1>
        <<<num_ctas, GemmConfig::kThreads, GemmConfig::kSharedBytes, stream>>>(params);
  }
  CUDA_CHECK(cudaGetLastError());
  return Status::success();
}

}  // namespace

Status launch_push_gemm(const gemm::OwnGemm& g, DType dtype, std::int64_t n, const PushArgs& args,
                        cudaStream_t stream) {
  const gemm::SchedulerOptions& sched = g.scheduler();
  if (g.cluster_m() != 1 || g.padded() || args.world < 1 || args.world > kMaxWorld ||
      args.rows_per_rank < 1 || args.rows_per_rank % GemmConfig::kTileM != 0 || n < 1 ||
      (dtype != DType::BF16 && dtype != DType::FP16))
    return Status::failure(
        "fused gemm+alltoall: the push GEMM needs cluster_m 1, no K padding, 1..8 ranks, rows "
        "per rank a multiple of 128 and bf16 or fp16");
  const std::int64_t m = args.rows_per_rank * args.world;
  if (g.tiles_m() * std::int64_t{GemmConfig::kTileM} != m)
    return Status::failure("fused gemm+alltoall: the GEMM was initialized for another m");
  KernelParams<PushEpilogue> params{};
  std::memcpy(&params.map_a, g.tensor_maps(), sizeof(CUtensorMap));
  std::memcpy(&params.map_b, static_cast<const char*>(g.tensor_maps()) + sizeof(CUtensorMap),
              sizeof(CUtensorMap));
  params.m = static_cast<std::int32_t>(m);
  params.n = static_cast<std::int32_t>(n);
  params.k_blocks =
      static_cast<std::int32_t>((g.k_padded() + GemmConfig::kTileK - 1) / GemmConfig::kTileK);
  params.tiles_m = g.tiles_m();
  params.tiles_n = g.tiles_n();
  params.group_m = sched.group_m;
  params.row_blocks = sched.row_blocks;
  params.row_shift = gemm::rotation_row_shift(m, sched);
  params.cluster_m = 1;
  params.epilogue.push = args;
  params.epilogue.store_steps = sched.store_steps;
  params.epilogue.vector_stores = sched.vector_stores ? 1 : 0;
  if (dtype == DType::BF16)
    return launch_typed<__nv_bfloat16>(params, sched.defer_stores, g.num_ctas(), stream);
  return launch_typed<__half>(params, sched.defer_stores, g.num_ctas(), stream);
}

Status launch_wait(const std::uint32_t* counters, int world, std::uint32_t target,
                   std::uint64_t timeout_ns, int* timed_out, cudaStream_t stream) {
  if (world < 1 || world > kMaxWorld || counters == nullptr || timed_out == nullptr)
    return Status::failure("fused gemm+alltoall: bad wait launch");
  wait_sources_kernel<<<1, 32, 0, stream>>>(counters, world, target, timeout_ns, timed_out);
  CUDA_CHECK(cudaGetLastError());
  return Status::success();
}

Status preload() {
  OVERLAPSIM_TRY((load_gemm<__nv_bfloat16, true>()));
  OVERLAPSIM_TRY((load_gemm<__nv_bfloat16, false>()));
  OVERLAPSIM_TRY((load_gemm<__half, true>()));
  OVERLAPSIM_TRY((load_gemm<__half, false>()));
  cudaFuncAttributes attributes{};
  CUDA_CHECK(cudaFuncGetAttributes(&attributes, wait_sources_kernel));
  return Status::success();
}

}  // namespace overlapsim::kernels::fused::gemm_a2a
