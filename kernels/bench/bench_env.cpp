#include "kernels/bench/bench_env.hpp"

#include <algorithm>

namespace overlapsim::kernels::bench {

// 64 MiB: enough for every cuBLASLt algorithm on Hopper; one per rank (one GEMM at a time).
constexpr std::size_t kWorkspaceBytes = std::size_t{64} << 20;

int BenchEnv::rotation_sets(std::size_t input_bytes) const {
  if (input_bytes == 0) return 1;
  const std::size_t wanted = (3 * l2_bytes + input_bytes - 1) / input_bytes;
  return static_cast<int>(std::clamp<std::size_t>(wanted, 1, 8));
}

Status open_env(RankContext& ctx, std::uint64_t seed, BenchEnv* env) {
  env->ctx = &ctx;
  env->seed = seed;
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, ctx.device));
  env->l2_bytes = static_cast<std::size_t>(prop.l2CacheSize);
  CUBLAS_CHECK(cublasLtCreate(&env->lt));
  return env->workspace.allocate(kWorkspaceBytes);
}

void close_env(BenchEnv* env) {
  env->workspace.release();
  if (env->lt) cublasLtDestroy(env->lt);
  env->lt = nullptr;
}

}  // namespace overlapsim::kernels::bench
