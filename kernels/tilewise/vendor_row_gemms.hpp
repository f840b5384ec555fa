#pragma once
// cuBLASLt GEMMs over ranges of rows that share B: C[rows] = A[rows] · Bᵀ, A rows × K and C
// rows × N row-major at any row offset, B N × K (the project's convention,
// kernels/ops/gemm_cublaslt.hpp). What the per-chunk vendor designs run (allgather_gemm.hpp
// with AllGatherGemmOptions::vendor_gemm, vendor_reduce_scatter.hpp): one GEMM a row block
// or chunk, enqueued behind that chunk's wait or ahead of its push. The heuristic, workspace
// size (64 MiB) and algorithm choice are the sequential baseline's (overlap-bench's
// BenchEnv), so a chunk runs what cuBLAS would run for that shape alone. Each row count
// gets its plan once (initialize); run() only enqueues, no host synchronisation. The
// handle and workspace are this object's: GEMMs of one object run on one stream at a time.
// C++17.
#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <map>
#include <vector>

#include "kernels/common/status.hpp"
#include "kernels/harness/device_buffer.hpp"
#include "kernels/harness/dtype.hpp"
#include "kernels/ops/gemm_cublaslt.hpp"

namespace overlapsim::kernels::tilewise {

class VendorRowGemms {
 public:
  VendorRowGemms() = default;
  ~VendorRowGemms();
  VendorRowGemms(const VendorRowGemms&) = delete;
  VendorRowGemms& operator=(const VendorRowGemms&) = delete;

  // One plan per entry of `row_counts`. Every row offset the caller will pass is a multiple
  // of `row_unit` rows, so pointers are as aligned as a 256-byte base plus row_unit rows of
  // A and of C (the alignment the heuristic is told).
  Status initialize(std::int64_t n, std::int64_t k, DType dtype,
                    const std::vector<std::int64_t>& row_counts, std::int64_t row_unit);
  // C rows [row, row + rows) = A rows [row, row + rows) · Bᵀ, a and c the matrices' first
  // rows (row 0), `rows` one of initialize()'s row counts.
  Status run(std::int64_t rows, std::int64_t row, const void* a, const void* b, void* c,
             cudaStream_t stream) const;
  // The same with a and c already pointing at the range's first row.
  Status run_at(std::int64_t rows, const void* a_rows, const void* b, void* c_rows,
                cudaStream_t stream) const;

 private:
  cublasLtHandle_t handle_ = nullptr;
  DeviceBuffer workspace_;
  std::int64_t n_ = 0, k_ = 0;
  std::size_t alignment_ = 256;
  std::map<std::int64_t, CublasLtGemm> plans_;
};

}  // namespace overlapsim::kernels::tilewise
