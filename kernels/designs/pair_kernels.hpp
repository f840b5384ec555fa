#pragma once
// One rank's op and collective of a pair, split into chunks as pair_op.hpp describes.
// The designs only decide streams and ordering; this class knows what chunk c of k
// computes and moves. Host API: initialize -> prepare(k) (heuristics, outside any timed
// region) -> enqueue_op / enqueue_collective. C++17.
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <map>

#include "kernels/common/status.hpp"
#include "kernels/designs/pair_op.hpp"
#include "kernels/harness/comm.hpp"
#include "kernels/ops/gemm_cublaslt.hpp"

namespace overlapsim::kernels {

// Device buffers of one input set (sizes from pair_sizes()); all from cudaMalloc.
struct PairBuffers {
  const void* a = nullptr;
  const void* b = nullptr;
  const std::int32_t* indices = nullptr;
  void* staging = nullptr;
  void* c = nullptr;
  void* out = nullptr;  // nullptr when the collective works in place on c

  // Where the pair's final result is.
  const void* result(PairOp op) const {
    return op == PairOp::AllGatherGemm || out == nullptr ? c : out;
  }
};

class PairKernels {
 public:
  Status initialize(CommHandle* comm, cublasLtHandle_t lt, PairOp op, const PairShape& shape,
                    DType dtype, void* workspace, std::size_t workspace_bytes);
  // Builds what `chunks` needs (GEMM plans); call before timing. Fails if chunk_error().
  Status prepare(int chunks);
  Status enqueue_op(const PairBuffers& buffers, int chunks, int chunk, cudaStream_t stream) const;
  Status enqueue_collective(const PairBuffers& buffers, int chunks, int chunk,
                            cudaStream_t stream) const;

  PairOp op() const { return op_; }
  const PairShape& shape() const { return shape_; }
  DType dtype() const { return dtype_; }
  int world() const { return comm_->world; }

 private:
  CommHandle* comm_ = nullptr;
  cublasLtHandle_t lt_ = nullptr;
  PairOp op_ = PairOp::GemmAllReduce;
  PairShape shape_;
  DType dtype_ = DType::BF16;
  void* workspace_ = nullptr;
  std::size_t workspace_bytes_ = 0;
  std::map<int, CublasLtGemm> gemm_by_chunks_;
};

}  // namespace overlapsim::kernels
