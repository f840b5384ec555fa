#pragma once
// What overlap-bench measures: a list of cases, from a suite YAML file or from flags.
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/designs/pair_op.hpp"
#include "kernels/harness/dtype.hpp"

namespace overlapsim::kernels::bench {

enum class CaseKind {
  Collective,  // op allreduce|reducescatter|allgather|alltoall, design nccl, over `bytes`
  Compute,     // op gemm|gemv|embedding alone, design (implementation) cublas|own
  Pair,        // op gemm+allreduce ..., designs sequential|decomposed
  // op interference, design interleaved: per GEMM shape x collective x size x NCCL CTA
  // limit, the GEMM alone and beside the collective, the collective alone and beside the
  // GEMM, timed in one interleaved loop (interference_runner.hpp)
  Interference
};

struct BenchCase {
  CaseKind kind = CaseKind::Pair;
  std::string op;
  std::vector<std::string> designs;
  DType dtype = DType::BF16;
  std::vector<PairShape> shapes;     // Compute and Pair cases
  std::vector<std::uint64_t> bytes;  // Collective cases
  std::vector<int> chunks{2, 4, 8};  // decomposed: every k that divides the shape
  bool parts = true;                 // Pair: also time the op alone and the collective alone
  int warmup = 5;
  int iterations = 20;
  double min_time_s = 0;  // TimingPolicy (timing.hpp): timed work per measurement, at least
  double warmup_s = 0;    // TimingPolicy: untimed work before timing
  // Interference: the collectives run against the GEMM, and the NCCL CTA limits (a
  // communicator split with maxCTAs = c, cgaClusterSize = 1; 0 = the NCCL default config).
  std::vector<std::string> collectives{"allreduce"};
  std::vector<int> ctas{0};
};

struct BenchPlan {
  std::vector<BenchCase> cases;
  std::uint64_t seed = 0;  // 0: a fresh seed from the clock (printed on stderr)
};

// Valid design names per kind; the first is the default.
const std::vector<std::string>& designs_for(CaseKind kind, const std::string& op);
// Case kind of an op name, or false when the name is unknown.
bool case_kind_of(const std::string& op, CaseKind* kind);

}  // namespace overlapsim::kernels::bench
