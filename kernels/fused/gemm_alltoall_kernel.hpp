#pragma once
// The fused GEMM + all-to-all kernels' launch interface (gemm_alltoall.cu): plain
// arguments, so the host design (gemm_alltoall.hpp) stays in C++20 and the kernels in
// C++17. Host only.
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/common/status.hpp"
#include "kernels/harness/dtype.hpp"

namespace overlapsim::kernels::gemm {
class OwnGemm;
}

namespace overlapsim::kernels::fused::gemm_a2a {

constexpr int kMaxWorld = 8;

struct PushArgs {
  // Destination rank d's receive buffer (this call's parity) and its counters, [source].
  void* recv[kMaxWorld] = {};
  std::uint32_t* counters[kMaxWorld] = {};
  int world = 1;
  int rank = 0;
  std::int64_t rows_per_rank = 0;  // M / world: the rows each destination receives
};

// The own GEMM `gemm` (initialized for this A, B: its tensor maps, schedule and CTA count)
// with the push epilogue: tile rows of rank d's block land at
// recv[d] + rank·(rows_per_rank·n) + (row − d·rows_per_rank)·n + col, then counters[d][rank]
// moves by one (system scope). Needs cluster_m 1, m % (128·world) == 0, no K padding.
Status launch_push_gemm(const gemm::OwnGemm& gemm, DType dtype, std::int64_t n,
                        const PushArgs& args, cudaStream_t stream);

// One CTA, thread s < world: waits until counters[s] (this rank's) reaches `target`
// (wrap-around compare); sets *timed_out after timeout_ns.
Status launch_wait(const std::uint32_t* counters, int world, std::uint32_t target,
                   std::uint64_t timeout_ns, int* timed_out, cudaStream_t stream);

// Loads the push GEMM's and the wait kernel's modules now (lazy module loading: a first
// load while a peer's wait spins must not stall behind it).
Status preload();

}  // namespace overlapsim::kernels::fused::gemm_a2a
