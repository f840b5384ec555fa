#pragma once
// own-gemm-bench's command line (gemm_bench.cu lists the flags). Parsed once, through the
// shared flag helpers (kernels/harness/flag_parse.hpp): a bad flag throws
// std::invalid_argument with a one-line message naming it and what was expected (exit
// code 2). C++17 (read by the .cu).
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/gemm/own_gemm.hpp"

namespace overlapsim::kernels::gemm {

struct GemmBenchShape {
  int64_t m, n, k;
};

// An own GEMM variant: version 3 (cluster_m 2) or 2 (cluster_m 1), the plain epilogue's
// store steps (s<n>), 16-byte vector stores (v) or 4-byte ones (n), immediate stores (i), the
// split last wave (k<n>, SchedulerOptions::split_k_tail);
// unnamed choices are the library defaults. Written 3, 2, 3s8, 3s4v, 2n, 3vi, ...; design
// column own_v<spec>.
struct GemmBenchVariant {
  int version = 3;
  int store_steps = 0;
  int vector_stores = -1;
  bool immediate = false;
  std::string name;
  int split_k_tail = 1;  // k<n>: the last wave split in n ranges of K
};

struct GemmBenchOptions {
  std::vector<GemmBenchShape> shapes = {{4096, 4096, 4096}, {8192, 8192, 2048},
                                        {8192, 8192, 8192}, {16384, 8192, 4096},
                                        {2048, 8192, 8192}, {4096, 12288, 49152}};
  DType dtype = DType::kBf16;
  int iters = 30;
  int warmup = 5;
  int group_m = GemmConfig::kDefaultGroupM;
  int num_ctas = 0;
  int cublas_candidates = 8;
  bool defer_stores = true;
  // Own GEMM versions timed side by side: 3 = clusters of 2 with TMA multicast, 2 = no
  // cluster (SchedulerOptions::cluster_m 2 / 1).
  std::vector<GemmBenchVariant> versions = {{3, 0, -1, false, "own_v3"},
                                            {2, 0, -1, false, "own_v2"}};
  std::string driver;
  double sustain_ms = 0;
  std::vector<double> gaps_us;  // --gaps-us: duty-cycled sustained runs
  int cublas_algo = -1;
};

// false when `text` is no variant spec.
bool parse_gemm_variant(const std::string& text, GemmBenchVariant* v);

GemmBenchOptions parse_gemm_bench_flags(const std::vector<std::string>& args);

}  // namespace overlapsim::kernels::gemm
