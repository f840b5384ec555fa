#pragma once
// The vendor GEMM every design is measured against: cuBLASLt, bf16/fp16 inputs, fp32
// accumulate, output in the input type, the heuristic's best algorithm. FP8 (E4M3) inputs
// write bf16 (output_dtype), unit scales, cuBLASLt's default (not fast) accumulation.
//
// Project convention: C[M x N] = A[M x K] * B^T with A row-major (K contiguous), B stored
// N x K row-major (a Linear weight), C row-major. cuBLASLt is column-major, so we ask it
// for C^T (N x M, ld N) = B (op T, stored K x N, ld K) * A^T (op N, stored K x M, ld K):
// the "TN" layout its fastest kernels want.
//
// Batching lets one call cover several row blocks of A and C that share B (the
// decomposed design's chunks of row groups). Host API shape: can_implement ->
// initialize -> run. C++17.
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <initializer_list>

#include "kernels/common/status.hpp"
#include "kernels/harness/dtype.hpp"
#include "kernels/ops/cublaslt_algo.hpp"

namespace overlapsim::kernels {

struct GemmShape {
  std::int64_t m = 0;
  std::int64_t n = 0;
  std::int64_t k = 0;
};

// `count` GEMMs of the same shape: GEMM i reads A + i * stride_a_elems and writes
// C + i * stride_c_elems; all read the same B.
struct GemmBatching {
  int count = 1;
  std::int64_t stride_a_elems = 0;
  std::int64_t stride_c_elems = 0;
};

// FP8 only: DeepSeek-V3's block scaling instead of one scale per tensor: one float per
// 1 x 128 run of each A row (activations: M x ceil(K / 128) of them) and per 128 x 128 block
// of B (the weight: ceil(N / 128) x ceil(K / 128)), cuBLASLt's VEC128_32F and BLK128x128_32F
// scale modes. Null pointers: per-tensor scaling (unit scales).
struct Fp8BlockScales {
  const float* a = nullptr;
  const float* b = nullptr;
};

// How cuBLASLt runs a GEMM, not what it computes. The defaults are cuBLASLt's own
// behaviour; the shaped design (kernels/designs/shaped.hpp) sets both.
struct GemmRunOptions {
  // > 0: CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET, so the heuristic and the kernel plan for this
  // many SMs and leave the rest to work on another stream (NCCL); 0: every SM.
  int sm_count_target = 0;
  // Only algorithms without a split-K reduction (preference REDUCTION_SCHEME_MASK = NONE):
  // the heuristic may answer a smaller SM target with split-K, whose extra reduction
  // changes the order of the sum over K and so the result's bits. Falls back to any
  // algorithm when the heuristic offers none without.
  bool no_split_k = false;
};

class CublasLtGemm {
 public:
  CublasLtGemm() = default;
  ~CublasLtGemm();
  CublasLtGemm(CublasLtGemm&& other) noexcept;
  CublasLtGemm& operator=(CublasLtGemm&& other) noexcept;
  CublasLtGemm(const CublasLtGemm&) = delete;
  CublasLtGemm& operator=(const CublasLtGemm&) = delete;

  static Status can_implement(const GemmShape& shape, DType dtype);

  // `alignment_bytes`: the alignment every A, B, C pointer passed to run() will have
  // (a power of two <= 256); the heuristic only offers algorithms valid for it.
  Status initialize(cublasLtHandle_t handle, const GemmShape& shape, DType dtype,
                    const GemmBatching& batching, std::size_t alignment_bytes, void* workspace,
                    std::size_t workspace_bytes, const Fp8BlockScales& block_scales = {},
                    const GemmRunOptions& run_options = {});

  Status run(const void* a, const void* b, void* c, cudaStream_t stream) const;

  const GemmShape& shape() const { return shape_; }
  // The algorithm the heuristic chose in initialize(): tile, cluster, split-K
  // (read_algo_info); fails before initialize().
  Status algo_info(CublasLtAlgoInfo* out) const;

 private:
  void destroy();

  cublasLtHandle_t handle_ = nullptr;
  cublasLtMatmulDesc_t op_ = nullptr;
  cublasLtMatrixLayout_t layout_b_ = nullptr;  // cuBLAS's "A": our B
  cublasLtMatrixLayout_t layout_a_ = nullptr;  // cuBLAS's "B": our A
  cublasLtMatrixLayout_t layout_c_ = nullptr;
  cublasLtMatmulAlgo_t algo_{};
  float waves_ = 0;  // the heuristic's wavesCount for algo_
  GemmShape shape_;
  std::size_t alignment_bytes_ = 256;
  void* workspace_ = nullptr;
  std::size_t workspace_bytes_ = 0;
};

// Largest power of two (<= 256) dividing every value: the alignment of pointers formed
// from a 256-aligned base plus these byte offsets.
std::size_t common_alignment(std::initializer_list<std::uint64_t> byte_offsets);

}  // namespace overlapsim::kernels
