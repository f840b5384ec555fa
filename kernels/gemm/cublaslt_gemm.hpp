#pragma once
// cuBLASLt GEMM in the own GEMM's conventions (C = A·Bᵀ, A M×K and B N×K row-major,
// C M×N row-major, bf16/fp16 in and out, fp32 accumulate): the reference the own GEMM's
// tests and benchmark compare against, values and speed. 32 MiB workspace (what PyTorch
// gives cuBLAS on Hopper). initialize() keeps up to `candidates` of the heuristic's
// algorithms; run() uses the selected one (the heuristic's first unless select() is
// called), so a benchmark can time each and give cuBLAS its best.
#include <cuda_runtime_api.h>

#include "kernels/common/status.hpp"
#include "kernels/gemm/own_gemm.hpp"

namespace overlapsim::kernels::gemm {

class CublasLtGemm {
 public:
  CublasLtGemm() = default;
  ~CublasLtGemm();
  CublasLtGemm(const CublasLtGemm&) = delete;
  CublasLtGemm& operator=(const CublasLtGemm&) = delete;

  Status initialize(const GemmArgs& args, int candidates = 1);
  Status run(cudaStream_t stream);
  int candidates() const;
  void select(int index) { selected_ = index; }
  int selected() const { return selected_; }

 private:
  void release();
  struct Handles;
  Handles* h_ = nullptr;
  GemmArgs args_{};
  int selected_ = 0;
};

}  // namespace overlapsim::kernels::gemm
