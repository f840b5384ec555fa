#include "kernels/ops/gemm_cublaslt.hpp"

#include <string>
#include <utility>

namespace overlapsim::kernels {
namespace {

cudaDataType_t cuda_type(DType dtype) {
  switch (dtype) {
    case DType::BF16: return CUDA_R_16BF;
    case DType::FP16: return CUDA_R_16F;
    case DType::FP8_E4M3: return CUDA_R_8F_E4M3;
  }
  return CUDA_R_16BF;
}

}  // namespace

std::size_t common_alignment(std::initializer_list<std::uint64_t> byte_offsets) {
  std::size_t alignment = 256;
  for (std::uint64_t offset : byte_offsets)
    while (alignment > 1 && offset % alignment != 0) alignment /= 2;
  return alignment;
}

CublasLtGemm::~CublasLtGemm() { destroy(); }

CublasLtGemm::CublasLtGemm(CublasLtGemm&& other) noexcept { *this = std::move(other); }

CublasLtGemm& CublasLtGemm::operator=(CublasLtGemm&& other) noexcept {
  if (this != &other) {
    destroy();
    handle_ = std::exchange(other.handle_, nullptr);
    op_ = std::exchange(other.op_, nullptr);
    layout_b_ = std::exchange(other.layout_b_, nullptr);
    layout_a_ = std::exchange(other.layout_a_, nullptr);
    layout_c_ = std::exchange(other.layout_c_, nullptr);
    algo_ = other.algo_;
    waves_ = other.waves_;
    shape_ = other.shape_;
    alignment_bytes_ = other.alignment_bytes_;
    workspace_ = other.workspace_;
    workspace_bytes_ = other.workspace_bytes_;
  }
  return *this;
}

void CublasLtGemm::destroy() {
  if (layout_c_) cublasLtMatrixLayoutDestroy(layout_c_);
  if (layout_a_) cublasLtMatrixLayoutDestroy(layout_a_);
  if (layout_b_) cublasLtMatrixLayoutDestroy(layout_b_);
  if (op_) cublasLtMatmulDescDestroy(op_);
  layout_c_ = layout_a_ = layout_b_ = nullptr;
  op_ = nullptr;
}

Status CublasLtGemm::can_implement(const GemmShape& shape, DType dtype) {
  const std::string dims =
      std::to_string(shape.m) + "x" + std::to_string(shape.n) + "x" + std::to_string(shape.k);
  if (shape.m < 1 || shape.n < 1 || shape.k < 1)
    return Status::failure("cuBLASLt GEMM: M, N and K must be >= 1 (got " + dims + ")");
  // FP8 operands need 16-byte aligned rows (cuBLASLt's FP8 requirements).
  if (dtype == DType::FP8_E4M3 && shape.k % 16 != 0)
    return Status::failure("cuBLASLt FP8 GEMM: K must be a multiple of 16 (got " + dims + ")");
  return Status::success();
}

Status CublasLtGemm::initialize(cublasLtHandle_t handle, const GemmShape& shape, DType dtype,
                                const GemmBatching& batching, std::size_t alignment_bytes,
                                void* workspace, std::size_t workspace_bytes,
                                const Fp8BlockScales& block_scales,
                                const GemmRunOptions& run_options) {
  OVERLAPSIM_TRY(can_implement(shape, dtype));
  if (batching.count < 1) return Status::failure("cuBLASLt GEMM: batch count must be >= 1");
  destroy();
  handle_ = handle;
  shape_ = shape;
  alignment_bytes_ = alignment_bytes;
  workspace_ = workspace;
  workspace_bytes_ = workspace_bytes;
  // FP8 inputs write bf16 (C and D), scaled by 1 (no scale pointers set).
  const cudaDataType_t type = cuda_type(dtype);
  const cudaDataType_t out_type = cuda_type(output_dtype(dtype));
  const auto m = static_cast<std::uint64_t>(shape.m);
  const auto n = static_cast<std::uint64_t>(shape.n);
  const auto k = static_cast<std::uint64_t>(shape.k);

  CUBLAS_CHECK(cublasLtMatmulDescCreate(&op_, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t transpose = CUBLAS_OP_T;
  const cublasOperation_t keep = CUBLAS_OP_N;
  CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_TRANSA, &transpose,
                                              sizeof(transpose)));
  CUBLAS_CHECK(
      cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_TRANSB, &keep, sizeof(keep)));
  if (block_scales.a || block_scales.b) {
    if (dtype != DType::FP8_E4M3 || !block_scales.a || !block_scales.b)
      return Status::failure("cuBLASLt GEMM: block scales need fp8 inputs and both scale tensors");
    // cuBLAS's A is our B (the weight, 128 x 128 blocks), its B our A (1 x 128 runs).
    const std::int32_t blocks = CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F;
    const std::int32_t runs = CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F;
    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &blocks,
                                                sizeof(blocks)));
    CUBLAS_CHECK(
        cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &runs, sizeof(runs)));
    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER,
                                                &block_scales.b, sizeof(block_scales.b)));
    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER,
                                                &block_scales.a, sizeof(block_scales.a)));
  }
  if (run_options.sm_count_target < 0)
    return Status::failure("cuBLASLt GEMM: sm_count_target must be >= 0");
  if (run_options.sm_count_target > 0) {
    const std::int32_t target = run_options.sm_count_target;
    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET, &target,
                                                sizeof(target)));
  }
  CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&layout_b_, type, k, n, static_cast<std::int64_t>(k)));
  CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&layout_a_, type, k, m, static_cast<std::int64_t>(k)));
  CUBLAS_CHECK(
      cublasLtMatrixLayoutCreate(&layout_c_, out_type, n, m, static_cast<std::int64_t>(n)));
  if (batching.count > 1) {
    const std::int32_t count = batching.count;
    const std::int64_t zero = 0;
    const auto set_batch = [&](cublasLtMatrixLayout_t layout, std::int64_t stride) -> Status {
      CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
                                                    &count, sizeof(count)));
      CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(
          layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof(stride)));
      return Status::success();
    };
    OVERLAPSIM_TRY(set_batch(layout_b_, zero));
    OVERLAPSIM_TRY(set_batch(layout_a_, batching.stride_a_elems));
    OVERLAPSIM_TRY(set_batch(layout_c_, batching.stride_c_elems));
  }

  const std::uint64_t max_workspace = workspace_bytes;
  const std::uint32_t alignment = static_cast<std::uint32_t>(alignment_bytes);
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  // One heuristic query; `reduction_mask` restricts the split-K reduction schemes.
  const auto query = [&](const std::uint32_t* reduction_mask) -> cublasStatus_t {
    cublasLtMatmulPreference_t preference = nullptr;
    cublasStatus_t s = cublasLtMatmulPreferenceCreate(&preference);
    if (s != CUBLAS_STATUS_SUCCESS) return s;
    s = cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                             &max_workspace, sizeof(max_workspace));
    for (auto attribute :
         {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
          CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES}) {
      if (s != CUBLAS_STATUS_SUCCESS) break;
      s = cublasLtMatmulPreferenceSetAttribute(preference, attribute, &alignment,
                                               sizeof(alignment));
    }
    if (s == CUBLAS_STATUS_SUCCESS && reduction_mask != nullptr)
      s = cublasLtMatmulPreferenceSetAttribute(preference,
                                               CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK,
                                               reduction_mask, sizeof(*reduction_mask));
    if (s == CUBLAS_STATUS_SUCCESS)
      s = cublasLtMatmulAlgoGetHeuristic(handle_, op_, layout_b_, layout_a_, layout_c_, layout_c_,
                                         preference, 1, &result, &found);
    cublasLtMatmulPreferenceDestroy(preference);
    return s;
  };
  const std::uint32_t no_reduction = CUBLASLT_REDUCTION_SCHEME_NONE;
  cublasStatus_t status = query(run_options.no_split_k ? &no_reduction : nullptr);
  if (run_options.no_split_k && (status != CUBLAS_STATUS_SUCCESS || found < 1)) {
    found = 0;
    status = query(nullptr);
  }
  CUBLAS_CHECK(status);
  if (found < 1)
    return Status::failure("cuBLASLt GEMM: the heuristic offered no algorithm for " +
                           std::to_string(shape.m) + "x" + std::to_string(shape.n) + "x" +
                           std::to_string(shape.k));
  algo_ = result.algo;
  waves_ = result.wavesCount;
  return Status::success();
}

Status CublasLtGemm::algo_info(CublasLtAlgoInfo* out) const {
  if (op_ == nullptr) return Status::failure("cuBLASLt GEMM: algo_info() before initialize()");
  return read_algo_info(algo_, waves_, out);
}

Status CublasLtGemm::run(const void* a, const void* b, void* c, cudaStream_t stream) const {
  if (op_ == nullptr) return Status::failure("cuBLASLt GEMM: run() before initialize()");
  for (const void* p : {a, b, static_cast<const void*>(c)})
    if (reinterpret_cast<std::uintptr_t>(p) % alignment_bytes_ != 0)
      return Status::failure("cuBLASLt GEMM: a pointer is less aligned than the " +
                             std::to_string(alignment_bytes_) + " bytes declared");
  const float alpha = 1.0f;
  const float beta = 0.0f;
  CUBLAS_CHECK(cublasLtMatmul(handle_, op_, &alpha, b, layout_b_, a, layout_a_, &beta, c, layout_c_,
                              c, layout_c_, &algo_, workspace_, workspace_bytes_, stream));
  return Status::success();
}

}  // namespace overlapsim::kernels
