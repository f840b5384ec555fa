#include "kernels/gemm/cublaslt_gemm.hpp"

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <vector>

#include "kernels/harness/free_queue.hpp"

namespace overlapsim::kernels::gemm {

struct CublasLtGemm::Handles {
  cublasLtHandle_t handle = nullptr;
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr;  // cuBLAS's A: our B, K×N column-major, transposed
  cublasLtMatrixLayout_t b = nullptr;  // cuBLAS's B: our A, K×M column-major
  cublasLtMatrixLayout_t c = nullptr;  // our C row-major = N×M column-major
  cublasLtMatmulPreference_t preference = nullptr;
  std::vector<cublasLtMatmulHeuristicResult_t> algos;
  void* workspace = nullptr;
};

namespace {
constexpr size_t kWorkspaceBytes = size_t{32} << 20;
}

Status CublasLtGemm::initialize(const GemmArgs& args, int candidates) {
  release();
  if (args.m < 1 || args.n < 1 || args.k < 1 || !args.a || !args.b || !args.c)
    return Status::failure("cuBLASLt GEMM: m, n, k must be >= 1 and a, b, c non-null");
  args_ = args;
  h_ = new Handles();
  const cudaDataType_t type = args.dtype == DType::kBf16 ? CUDA_R_16BF : CUDA_R_16F;
  CUBLAS_CHECK(cublasLtCreate(&h_->handle));
  CUBLAS_CHECK(cublasLtMatmulDescCreate(&h_->op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t transpose = CUBLAS_OP_T;
  const cublasOperation_t keep = CUBLAS_OP_N;
  CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(h_->op, CUBLASLT_MATMUL_DESC_TRANSA, &transpose,
                                              sizeof(transpose)));
  CUBLAS_CHECK(
      cublasLtMatmulDescSetAttribute(h_->op, CUBLASLT_MATMUL_DESC_TRANSB, &keep, sizeof(keep)));
  CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&h_->a, type, args.k, args.n, args.k));
  CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&h_->b, type, args.k, args.m, args.k));
  CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&h_->c, type, args.n, args.m, args.n));
  CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&h_->preference));
  const size_t workspace_bytes = kWorkspaceBytes;
  CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(h_->preference,
                                                    CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                    &workspace_bytes, sizeof(workspace_bytes)));
  int found = 0;
  h_->algos.resize(static_cast<size_t>(candidates < 1 ? 1 : candidates));
  CUBLAS_CHECK(cublasLtMatmulAlgoGetHeuristic(h_->handle, h_->op, h_->a, h_->b, h_->c, h_->c,
                                              h_->preference, static_cast<int>(h_->algos.size()),
                                              h_->algos.data(), &found));
  if (found == 0) return Status::failure("cuBLASLt GEMM: no algorithm for this shape");
  h_->algos.resize(static_cast<size_t>(found));
  selected_ = 0;
  CUDA_CHECK(cudaMalloc(&h_->workspace, kWorkspaceBytes));
  return Status::success();
}

Status CublasLtGemm::run(cudaStream_t stream) {
  if (h_ == nullptr || h_->workspace == nullptr)
    return Status::failure("cuBLASLt GEMM: run() before a successful initialize()");
  if (selected_ < 0 || selected_ >= static_cast<int>(h_->algos.size()))
    return Status::failure("cuBLASLt GEMM: selected algorithm out of range");
  const float alpha = 1.0f;
  const float beta = 0.0f;
  CUBLAS_CHECK(cublasLtMatmul(h_->handle, h_->op, &alpha, args_.b, h_->a, args_.a, h_->b, &beta,
                              args_.c, h_->c, args_.c, h_->c, &h_->algos[selected_].algo,
                              h_->workspace, kWorkspaceBytes, stream));
  return Status::success();
}

void CublasLtGemm::release() {
  if (h_ == nullptr) return;
  if (h_->workspace) {
    int device = 0;
    cudaGetDevice(&device);
    free_device_memory(h_->workspace, device);  // in a rank thread: at the next quiesce()
  }
  if (h_->preference) cublasLtMatmulPreferenceDestroy(h_->preference);
  if (h_->c) cublasLtMatrixLayoutDestroy(h_->c);
  if (h_->b) cublasLtMatrixLayoutDestroy(h_->b);
  if (h_->a) cublasLtMatrixLayoutDestroy(h_->a);
  if (h_->op) cublasLtMatmulDescDestroy(h_->op);
  if (h_->handle) cublasLtDestroy(h_->handle);
  delete h_;
  h_ = nullptr;
}

int CublasLtGemm::candidates() const { return h_ ? static_cast<int>(h_->algos.size()) : 0; }

CublasLtGemm::~CublasLtGemm() { release(); }

}  // namespace overlapsim::kernels::gemm
