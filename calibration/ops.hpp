#pragma once
// What an overlap-bench row measures, as the simulator's operations: the compute op of a
// GEMM/GEMV/embedding row or of a pair's compute half, and the collective of a pair.
// Used by the fitter (to express measured times in the compute model's terms) and the
// validator (to ask the simulator for the same thing).
#include <optional>
#include <string>

#include "calibration/measurement.hpp"
#include "sim/collectives/collective.hpp"
#include "sim/graph/op_graph.hpp"

namespace overlapsim::calibration {

// The two halves of a pair op ("gemm+allreduce" -> gemm, allreduce, compute first;
// "allgather+gemm" -> gemm, allgather, collective first).
struct PairParts {
  std::string compute;     // gemm, gemv, embedding
  std::string collective;  // allreduce, ...
  bool collective_first = false;
};
std::optional<PairParts> pair_parts(const std::string& op);

// The compute op a row's shape describes (`compute` = gemm, gemv or embedding), as the
// workloads generators would emit it: GEMM/GEMV by shape (FLOPs and bytes derived by the
// compute model), embedding bags m = bags, n = dim, k = pooling with
// bytes = m*k*n*e (gathered rows) + m*n*e (pooled output), e the element size.
// Throws std::invalid_argument for an unknown dtype or op.
sim::OpNode compute_op(const Measurement& m, const std::string& compute);
// An `elementwise` row (a streaming kernel: copy, add, scale) as the step's elementwise op of
// the row's bytes moved (its `bytes` column).
sim::OpNode elementwise_op(const Measurement& m);

sim::Precision precision_of(const std::string& dtype);  // bf16, fp16, fp8, fp32
std::optional<sim::CollectiveOp> collective_of(const std::string& op);

}  // namespace overlapsim::calibration
