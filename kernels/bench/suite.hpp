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
//     - op: interference         # GEMM x collective side by side (interference_runner.hpp)
//       shapes: [[8192, 8192, 4096]]
//       bytes: [16MiB, 128MiB]
//       collectives: [allreduce, alltoall]  # default [allreduce]
//       ctas: [4, 8, 16, 32, 0]             # NCCL CTA limits; 0 = NCCL's default config
//   Steady state, in defaults or per case: min_time: 20ms (timed work per measurement, at
//   least; more iterations than `iterations` when needed), warmup_time: 100ms (untimed work
//   first, so the GPU reaches its power-limited clock).
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
