#include "kernels/bench/bench_case.hpp"

#include "kernels/collectives/nccl_collectives.hpp"

namespace overlapsim::kernels::bench {

const std::vector<std::string>& designs_for(CaseKind kind, const std::string& op) {
  static const std::vector<std::string> collective{"nccl"};
  // cublas_block128: FP8 with DeepSeek-V3's block scaling (gemm_cublaslt.hpp).
  static const std::vector<std::string> gemm{"cublas", "own", "cublas_block128"};
  static const std::vector<std::string> other_compute{"cublas"};
  static const std::vector<std::string> embedding{"own"};
  static const std::vector<std::string> pair{"sequential", "decomposed"};
  static const std::vector<std::string> interference{"interleaved"};
  // GEMM followed by its collective also runs the tile-wise and shaped designs.
  static const std::vector<std::string> gemm_pair{"sequential", "decomposed", "tilewise",
                                                  "shaped"};
  // AllGather+GEMM's tile-wise design is the consumer side (allgather_tilewise_runner.hpp).
  static const std::vector<std::string> allgather_pair{"sequential", "decomposed", "tilewise"};
  switch (kind) {
    case CaseKind::Collective: return collective;
    case CaseKind::Compute:
      if (op == "gemm") return gemm;
      return op == "embedding" ? embedding : other_compute;
    case CaseKind::Interference: return interference;
    case CaseKind::Pair:
      return op == "gemm+allreduce" || op == "gemm+reducescatter" || op == "gemm+alltoall"
                 ? gemm_pair
                 : (op == "allgather+gemm" ? allgather_pair : pair);
  }
  return pair;
}

bool case_kind_of(const std::string& op, CaseKind* kind) {
  if (parse_collective_op(op)) {
    *kind = CaseKind::Collective;
    return true;
  }
  if (op == "gemm" || op == "gemv" || op == "embedding") {
    *kind = CaseKind::Compute;
    return true;
  }
  if (op == "interference") {
    *kind = CaseKind::Interference;
    return true;
  }
  if (parse_pair_op(op)) {
    *kind = CaseKind::Pair;
    return true;
  }
  return false;
}

}  // namespace overlapsim::kernels::bench
