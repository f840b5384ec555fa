#pragma once
// Suite YAML for overlap-bench (e.g. benchmarks/suites/kernels_i.yaml):
//
//   seed: 0                      # optional; 0 = fresh from the clock
//   defaults: {dtype: bf16, warmup: 5, iterations: 20, chunks: [2, 4, 8], parts: true}
//   cases:
//     - op: allreduce            # collective alone: design nccl, sizes in `bytes`
//       bytes: [1MiB, 1GiB]
//     - op: gemm                 # compute alone: designs cublas | own
//       designs: [cublas, own]
//       shapes: [[8192, 8192, 8192]]        # [m, n, k]
//     - op: gemm+allreduce       # pair: designs sequential | decomposed
//       shapes: [[4096, 4096, 4096]]
//     - op: embedding+alltoall   # m = bags, n = dim, k = pooling; table_rows required
//       shapes: [[65536, 128, 32]]
//       table_rows: 1000000
//
// Errors are config::ConfigError naming file:line:column, the key and the expected form.
#include <string>

#include "config/config_node.hpp"
#include "kernels/bench/bench_case.hpp"

namespace overlapsim::kernels::bench {

BenchPlan load_suite(const std::string& path);
BenchPlan parse_suite(const config::ConfigNode& root);

// Checks a case assembled from flags the same way (throws std::invalid_argument).
void validate_case(const BenchCase& c);

}  // namespace overlapsim::kernels::bench
