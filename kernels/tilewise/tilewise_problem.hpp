#pragma once
// What both tile-wise transports (TilewiseDesign: NCCL, CopyEngineDesign: copy engines)
// run: the collective on the GEMM's output C = A * B^T [m x n], its K and element type, set
// once by initialize() and read by every GEMM they build. C++17.
#include <cstdint>

#include "kernels/collectives/nccl_collectives.hpp"
#include "kernels/gemm/own_gemm.hpp"
#include "kernels/harness/dtype.hpp"

namespace overlapsim::kernels::tilewise {

struct TilewiseProblem {
  CollectiveOp op = CollectiveOp::AllReduce;
  std::int64_t m = 0, n = 0, k = 0;
  DType dtype = DType::BF16;

  // C[m x n] = A[m x k] * B[n x k]^T into `c` (the remapped output).
  gemm::GemmArgs gemm_args(const void* a, const void* b, void* c) const {
    gemm::GemmArgs args;
    args.m = m;
    args.n = n;
    args.k = k;
    args.dtype = dtype == DType::BF16 ? gemm::DType::kBf16 : gemm::DType::kFp16;
    args.a = a;
    args.b = b;
    args.c = c;
    return args;
  }
};

}  // namespace overlapsim::kernels::tilewise
