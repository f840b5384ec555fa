#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include <string>

#include "kernels/common/global_timer.cuh"
#include "kernels/tilewise/signal_wait.hpp"

namespace overlapsim::kernels::tilewise {
namespace {

__global__ void wait_and_reset_kernel(std::uint32_t* counter, std::uint32_t target, int* timed_out,
                                      std::uint64_t timeout_ns) {
  const std::uint64_t deadline = global_timer_ns() + timeout_ns;
  unsigned sleep_ns = 32;
  // The CAS both tests and resets: the GEMM adds nothing more once the group is complete.
  while (atomicCAS(counter, target, 0u) != target) {
    if (global_timer_ns() > deadline) {
      if (timed_out) atomicExch(timed_out, 1);
      return;
    }
    __nanosleep(sleep_ns);
    if (sleep_ns < 256) sleep_ns *= 2;
  }
  __threadfence();
}

struct MemOps {
  PFN_cuStreamWaitValue32_v11070 wait = nullptr;
  PFN_cuStreamWriteValue32_v11070 write = nullptr;
};

Status mem_ops(MemOps* out) {
  static MemOps ops;
  if (ops.wait == nullptr) {
    void* wait = nullptr;
    void* write = nullptr;
    OVERLAPSIM_TRY(driver_entry_point("cuStreamWaitValue32", &wait));
    OVERLAPSIM_TRY(driver_entry_point("cuStreamWriteValue32", &write));
    ops.write = reinterpret_cast<PFN_cuStreamWriteValue32_v11070>(write);
    ops.wait = reinterpret_cast<PFN_cuStreamWaitValue32_v11070>(wait);
  }
  *out = ops;
  return Status::success();
}

Status check_cu(CUresult r, const char* what) {
  if (r == CUDA_SUCCESS) return Status::success();
  return Status::failure(std::string(what) + " failed, CUresult " +
                         std::to_string(static_cast<int>(r)));
}

}  // namespace

Status driver_entry_point(const char* name, void** fn, unsigned version) {
  cudaDriverEntryPointQueryResult query{};
  const cudaError_t e =
      cudaGetDriverEntryPointByVersion(name, fn, version, cudaEnableDefault, &query);
  if (e != cudaSuccess || query != cudaDriverEntryPointSuccess || *fn == nullptr)
    return Status::failure(std::string(OVERLAPSIM_WHERE ": driver entry point ") + name +
                           " not found: " + cudaGetErrorString(e));
  return Status::success();
}

const char* to_string(WaitMode mode) {
  return mode == WaitMode::Kernel ? "kernel" : "stream_memop";
}

std::optional<WaitMode> parse_wait_mode(std::string_view name) {
  if (name == "kernel") return WaitMode::Kernel;
  if (name == "stream_memop") return WaitMode::StreamMemOp;
  return std::nullopt;
}

Status preload_signal_wait() {
  cudaFuncAttributes attributes{};
  CUDA_CHECK(cudaFuncGetAttributes(&attributes, wait_and_reset_kernel));
  MemOps ops;
  return mem_ops(&ops);
}

Status enqueue_wait_and_reset(std::uint32_t* counter, std::uint32_t target, WaitMode mode,
                              int* timed_out, double timeout_s, cudaStream_t stream) {
  if (mode == WaitMode::Kernel) {
    wait_and_reset_kernel<<<1, 1, 0, stream>>>(counter, target, timed_out,
                                               static_cast<std::uint64_t>(timeout_s * 1e9));
    CUDA_CHECK(cudaGetLastError());
    return Status::success();
  }
  MemOps ops;
  OVERLAPSIM_TRY(mem_ops(&ops));
  const auto address = reinterpret_cast<CUdeviceptr>(counter);
  OVERLAPSIM_TRY(check_cu(
      ops.wait(reinterpret_cast<CUstream>(stream), address, target, CU_STREAM_WAIT_VALUE_GEQ),
      OVERLAPSIM_WHERE ": cuStreamWaitValue32"));
  OVERLAPSIM_TRY(check_cu(
      ops.write(reinterpret_cast<CUstream>(stream), address, 0, CU_STREAM_WRITE_VALUE_DEFAULT),
      OVERLAPSIM_WHERE ": cuStreamWriteValue32"));
  return Status::success();
}

Status enqueue_wait_geq(const std::uint32_t* address, std::uint32_t value, cudaStream_t stream) {
  MemOps ops;
  OVERLAPSIM_TRY(mem_ops(&ops));
  return check_cu(ops.wait(reinterpret_cast<CUstream>(stream),
                           reinterpret_cast<CUdeviceptr>(address), value, CU_STREAM_WAIT_VALUE_GEQ),
                  OVERLAPSIM_WHERE ": cuStreamWaitValue32");
}

Status enqueue_write_value(std::uint32_t* address, std::uint32_t value, cudaStream_t stream) {
  MemOps ops;
  OVERLAPSIM_TRY(mem_ops(&ops));
  return check_cu(
      ops.write(reinterpret_cast<CUstream>(stream), reinterpret_cast<CUdeviceptr>(address), value,
                CU_STREAM_WRITE_VALUE_DEFAULT),
      OVERLAPSIM_WHERE ": cuStreamWriteValue32");
}

}  // namespace overlapsim::kernels::tilewise
