#pragma once
// Error regime for CUDA code: no exceptions cross CUDA code. Every CUDA, cuBLAS and NCCL
// call goes through a check macro that records file:line and the library's message in a
// Status and returns it to the caller; host code decides whether to abort a
// communicator, skip a test or exit non-zero. C++17 (included by .cu files).
#include <string>
#include <utility>

namespace overlapsim::kernels {

struct Status {
  bool ok = true;
  std::string message;  // "file:line: call: error text" when !ok

  static Status success() { return {}; }
  static Status failure(std::string msg) { return {false, std::move(msg)}; }
  explicit operator bool() const { return ok; }
};

}  // namespace overlapsim::kernels

#define OVERLAPSIM_STR_(x) #x
#define OVERLAPSIM_STR(x) OVERLAPSIM_STR_(x)
#define OVERLAPSIM_WHERE __FILE__ ":" OVERLAPSIM_STR(__LINE__)

// Propagates a failed Status from a nested call.
#define OVERLAPSIM_TRY(expr)                           \
  do {                                                 \
    ::overlapsim::kernels::Status s_ = (expr);         \
    if (!s_.ok) return s_;                             \
  } while (0)

// CUDA runtime: returns a failed Status naming the call and file:line.
#define CUDA_CHECK(call)                                                                   \
  do {                                                                                     \
    cudaError_t e_ = (call);                                                               \
    if (e_ != cudaSuccess)                                                                 \
      return ::overlapsim::kernels::Status::failure(std::string(OVERLAPSIM_WHERE ": " #call \
                                                                ": ") +                    \
                                                    cudaGetErrorString(e_));               \
  } while (0)

// CUDA driver API (CUresult).
#define CU_CHECK(call)                                                                     \
  do {                                                                                     \
    CUresult e_ = (call);                                                                  \
    if (e_ != CUDA_SUCCESS) {                                                              \
      const char* m_ = nullptr;                                                            \
      cuGetErrorString(e_, &m_);                                                           \
      return ::overlapsim::kernels::Status::failure(std::string(OVERLAPSIM_WHERE ": " #call \
                                                                ": ") +                    \
                                                    (m_ ? m_ : "unknown CUresult"));       \
    }                                                                                      \
  } while (0)

// cuBLAS / cuBLASLt.
#define CUBLAS_CHECK(call)                                                                 \
  do {                                                                                     \
    cublasStatus_t e_ = (call);                                                            \
    if (e_ != CUBLAS_STATUS_SUCCESS)                                                       \
      return ::overlapsim::kernels::Status::failure(std::string(OVERLAPSIM_WHERE ": " #call \
                                                                ": ") +                    \
                                                    cublasGetStatusString(e_));            \
  } while (0)

// NCCL (ncclInProgress counts as success for non-blocking communicators).
#define NCCL_CHECK(call)                                                                   \
  do {                                                                                     \
    ncclResult_t e_ = (call);                                                              \
    if (e_ != ncclSuccess && e_ != ncclInProgress)                                         \
      return ::overlapsim::kernels::Status::failure(std::string(OVERLAPSIM_WHERE ": " #call \
                                                                ": ") +                    \
                                                    ncclGetErrorString(e_));               \
  } while (0)
